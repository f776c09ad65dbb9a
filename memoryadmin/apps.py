from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_migrate


class MemoryAdminConfig(AppConfig):
    name = "memoryadmin"
    verbose_name = "Mnemosyne"

    def ready(self) -> None:
        from memoryadmin import signals  # noqa: F401 - connects the worker's heartbeat
        from memoryadmin.checks import check_database_roles
        from memoryadmin.roles import grant_after_migrate

        # Sent once per app after every migrate; this app's is enough.
        post_migrate.connect(grant_after_migrate, sender=self, dispatch_uid="mnemosyne_grants")
        checks.register(check_database_roles)
