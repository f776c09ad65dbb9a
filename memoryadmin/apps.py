from django.apps import AppConfig


class MemoryAdminConfig(AppConfig):
    """The project shell as an app: its management commands, template tags, static files and
    translations. Its models live in `operations` (label "memoryadmin")."""

    name = "memoryadmin"
    label = "mnemosyne"
    verbose_name = "Mnemosyne"

    def ready(self) -> None:
        from memoryadmin import signals  # noqa: F401 - connects the worker's heartbeat
