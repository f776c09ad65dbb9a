"""Helpers for tests that start real processes against the test database."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def database_url(settings_dict: dict[str, Any]) -> str:
    """A DATABASE_URL that reaches the database Django is connected to (the test database)."""
    user = quote(settings_dict["USER"] or "")
    password = f":{quote(settings_dict['PASSWORD'])}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict["HOST"] or ""
    port = settings_dict["PORT"] or "5432"
    name = settings_dict["NAME"]
    if host.startswith("/"):
        return f"postgresql://{user}{password}@/{name}?host={host}&port={port}"
    return f"postgresql://{user}{password}@{host}:{port}/{name}"


def child_env(**overrides: str | None) -> dict[str, str]:
    """The environment of a child process: ours, minus pytest's settings module, plus overrides."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(REPO)
    env["PYTHONUNBUFFERED"] = "1"
    url = overrides.get("DATABASE_URL")
    if url and "DATABASE_OWNER_URL" not in overrides and env.get("DATABASE_OWNER_URL"):
        # The owner of the database the child is given (tests/settings.py names the server's
        # database; a child is given the test database).
        name = urlsplit(url).path
        env["DATABASE_OWNER_URL"] = urlunsplit(
            urlsplit(env["DATABASE_OWNER_URL"])._replace(path=name)
        )
    if "DATABASE_URL" in overrides and "DATABASE_REPLICA_URL" not in overrides:
        env.pop("DATABASE_REPLICA_URL", None)  # the replica tests give theirs
    if "DATABASE_URL" in overrides and not url and "DATABASE_OWNER_URL" not in overrides:
        env.pop("DATABASE_OWNER_URL", None)  # the embedded database: it makes both roles
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(
    condition: Callable[[], Any], *, timeout: float, what: str, interval: float = 0.2
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is dead for our purposes.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def tables_last_analysed() -> dict[str, Any]:
    """When the fact tables (facts, vectors, entity links) were last analysed by ANALYZE."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, last_analyze FROM pg_stat_all_tables "
            "WHERE relname IN ('facts_fact', 'facts_factvector', 'facts_factentity')"
        )
        return dict(cursor.fetchall())


def tasks_sent_on_commit(callbacks: list[Any], task: str) -> list[int]:
    """The tenants a transaction's on-commit callbacks send `task` for (`facts.services.rows`)."""
    return [c.sends[1] for c in callbacks if getattr(c, "sends", (None,))[0] == task]
