from django.conf import settings
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


class UserPreference(models.Model):
    """A person's settings in the web admin. Not tenant data: a person has one, whatever
    tenants they belong to."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mnemosyne_preference"
    )
    # A code of settings.LANGUAGES; empty: follow the browser's Accept-Language.
    language = models.CharField(max_length=16, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"preferences of user {self.user_id}"
