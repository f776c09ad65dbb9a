from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    name = "retrieval"
    # "retrieval" is the label of `indexing`, which owns the tables (see indexing/apps.py).
    label = "recall"

    def ready(self) -> None:
        # Registers the tasks in every process, so a job sent by name (`tenants.jobs.job_send`)
        # runs here when tasks run eagerly.
        from retrieval import tasks  # noqa: F401
