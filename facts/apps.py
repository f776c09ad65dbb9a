from django.apps import AppConfig


class FactsConfig(AppConfig):
    name = "facts"

    def ready(self) -> None:
        # Registers the tasks in every process, so a job sent by name (`tenants.jobs.job_send`)
        # runs here when tasks run eagerly.
        from facts import tasks  # noqa: F401
