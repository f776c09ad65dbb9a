from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_migrate


class OperationsConfig(AppConfig):
    name = "operations"
    # The tables and migrations were made under this label when the package was part of
    # `memoryadmin`; the label stays so that every deployed database keeps them.
    label = "memoryadmin"
    verbose_name = "Mnemosyne"

    def ready(self) -> None:
        from operations.checks import check_database_roles
        from operations.roles import grant_after_migrate

        # Sent once per app with models after every migrate; this app's is enough.
        post_migrate.connect(grant_after_migrate, sender=self, dispatch_uid="mnemosyne_grants")
        checks.register(check_database_roles)
