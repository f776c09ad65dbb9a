from django.apps import AppConfig


class HermesProviderConfig(AppConfig):
    name = "hermes_provider"
    verbose_name = "Hermes memory provider"
