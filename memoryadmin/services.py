"""Writes of the project app: service heartbeats and the first administrator."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from memoryadmin.models import ServiceHeartbeat


def heartbeat_record(*, name: str) -> None:
    ServiceHeartbeat.objects.update_or_create(
        name=name, defaults={"pid": os.getpid(), "seen_at": timezone.now()}
    )


@dataclass(frozen=True)
class CreatedAdmin:
    username: str
    password: str | None  # set only when generated here: shown once, never stored in clear


@transaction.atomic
def admin_ensure_first(
    *, username: str, email: str = "", password: str | None = None
) -> CreatedAdmin | None:
    """Create the first superuser when there is none. Returns it, or None when one exists."""
    user_model = get_user_model()
    if user_model.objects.filter(is_superuser=True).exists():
        return None
    generated = None if password else secrets.token_urlsafe(12)
    user_model.objects.create_superuser(
        username=username, email=email, password=password or generated
    )
    return CreatedAdmin(username=username, password=generated)
