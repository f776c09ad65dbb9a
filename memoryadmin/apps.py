from django.apps import AppConfig


class MemoryAdminConfig(AppConfig):
    name = "memoryadmin"
    verbose_name = "Mnemosyne"

    def ready(self) -> None:
        from memoryadmin import signals  # noqa: F401 - connects the worker's heartbeat
