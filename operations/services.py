"""Writes of the project app: service heartbeats, the first administrator, preferences."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from operations.models import ServiceHeartbeat
from tenants.errors import InvalidInput


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


def user_language_set(*, user: AbstractBaseUser, language: str) -> str:
    """Keep the person's language for the web admin ("" follows the browser)."""
    from django.conf import settings

    from operations.models import UserPreference

    if language and language not in dict(settings.LANGUAGES):
        codes = ", ".join(code for code, _ in settings.LANGUAGES)
        raise InvalidInput("language", f"must be one of {codes}, or empty for the browser's")
    UserPreference.objects.update_or_create(user_id=user.pk, defaults={"language": language})
    return language


def user_language_get(*, user: AbstractBaseUser) -> str:
    from operations.models import UserPreference

    preference = UserPreference.objects.filter(user_id=user.pk).first()
    return preference.language if preference else ""
