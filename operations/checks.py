"""System checks: Django commands refuse to run while the database role can lift isolation."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.db import DatabaseError, connection


def check_database_roles(**_: Any) -> list[checks.CheckMessage]:
    """mnemosyne.E001: the runtime role is a superuser, has BYPASSRLS, or owns a tenant table."""
    from operations.roles import owner_connected, role_problems

    if owner_connected():
        return []  # `migrate` runs as the owner on purpose
    try:
        with connection.cursor() as cursor:
            problems = role_problems(cursor)
    except DatabaseError:
        return []  # an unreachable database is /healthz's to report, not a configuration error
    return [
        checks.Error(problem, hint="docs/database-roles.md", id="mnemosyne.E001")
        for problem in problems
    ]
