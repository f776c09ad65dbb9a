from django.db import models


class ServiceHeartbeat(models.Model):
    """The last sign of life of a background service (a Celery worker, beat).

    Not tenant data: one row per service, read by /healthz and `mnemosyne status`.
    """

    name = models.CharField(max_length=200, unique=True)
    pid = models.IntegerField()
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} (pid {self.pid}) at {self.seen_at:%Y-%m-%d %H:%M:%S}"
