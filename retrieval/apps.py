from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    name = "retrieval"

    def ready(self) -> None:
        # Registers the tasks in every process, so a job sent by name (`tenants.jobs.job_send`)
        # runs here when tasks run eagerly.
        from retrieval import tasks  # noqa: F401
