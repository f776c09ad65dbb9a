from django.apps import AppConfig


class MemoryAdminConfig(AppConfig):
    """The project shell as an app: its management commands, template tags, static files and
    translations. Its models live in `operations` (label "memoryadmin")."""

    name = "memoryadmin"
    label = "mnemosyne"
    verbose_name = "Mnemosyne"

    def ready(self) -> None:
        # The Celery app, made current in every process that runs Django: jobs sent from here
        # go to its broker (memoryadmin/__init__.py says why it is not made at import).
        from memoryadmin import (
            celery,  # noqa: F401
            signals,  # noqa: F401 - connects the worker's heartbeat
        )
