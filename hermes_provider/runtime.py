"""Mnemosyne inside someone else's process: Django configured in place, and worker threads.

Hermes is not a Django project. The provider configures Django itself, once per process, from
the profile's config (database URL, embedder, model folder) and touches nothing Hermes owns:
no environment variable is set (programs Hermes starts must not inherit a Django settings
module), logging is left as Hermes set it up, and nothing is written to the working directory.
When Django is already configured with Mnemosyne's apps (Mnemosyne's own processes, its tests),
that configuration is used as it is.
"""

from __future__ import annotations

import logging
import os
import queue
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

logger = logging.getLogger("hermes_provider")

T = TypeVar("T")
_REQUIRED_APPS = ("tenants", "facts", "retrieval")
_lock = threading.Lock()
_configured_url: str | None = None
# Seconds to wait for a PostgreSQL server that does not answer (a down server refuses at once).
CONNECT_TIMEOUT_S = 5
LOCAL_BROKER = "memory://localhost/"  # the host part is unused; without one kombu warns


class NotReady(RuntimeError):
    """Django cannot be used for Mnemosyne in this process; the message says why."""


def _parse_database_url(url: str) -> dict[str, Any]:
    had = os.environ.get("DJANGO_SETTINGS_MODULE")
    # memoryadmin's package start names its settings module in the environment (right for its
    # own processes); here it would leak into every program Hermes starts, so it is undone.
    from memoryadmin.env import ConfigError, parse_database_url

    if had is None:
        os.environ.pop("DJANGO_SETTINGS_MODULE", None)
    try:
        return parse_database_url(url, name="plugins.mnemosyne.database_url")
    except ConfigError as error:
        raise NotReady(str(error)) from None


def _settings(database_url: str, model_dir: str, embedder: str, broker_url: str) -> dict[str, Any]:
    database = _parse_database_url(database_url)
    database["OPTIONS"].setdefault("connect_timeout", CONNECT_TIMEOUT_S)
    # Kept open by the provider's long-lived threads; checked before reuse after an outage.
    database.update(CONN_MAX_AGE=None, CONN_HEALTH_CHECKS=True)
    return {
        # Signs nothing here (no sessions, no cookies), but Django insists on one.
        "SECRET_KEY": secrets.token_urlsafe(50),
        "INSTALLED_APPS": [
            "django.contrib.contenttypes",
            "django.contrib.auth",
            "tenants",
            "facts",
            "retrieval",
            "hermes_provider",
        ],
        "DATABASES": {"default": database},
        "DEFAULT_AUTO_FIELD": "django.db.models.BigAutoField",
        "USE_TZ": True,
        "TIME_ZONE": "UTC",
        "CACHES": {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
        "LOGGING_CONFIG": None,  # Hermes owns logging
        "MNEMOSYNE_EMBEDDER": embedder,
        "MNEMOSYNE_MODEL_DIR": Path(model_dir).expanduser().resolve(),
        "MNEMOSYNE_ENTITY_EXTRACTOR": "facts.extract.extract_entities",
        # Without a broker, the provider runs Mnemosyne's background tasks (embedding what it
        # stored, counting retrievals) itself; with one, the server's workers do.
        "CELERY_BROKER_URL": broker_url or LOCAL_BROKER,
        "CELERY_TASK_IGNORE_RESULT": True,
        "CELERY_BROKER_CONNECTION_TIMEOUT": CONNECT_TIMEOUT_S,
        "CELERY_TASK_PUBLISH_RETRY_POLICY": {"max_retries": 1, "interval_start": 0.2},
    }


def ensure_django(
    *, database_url: str, model_dir: str, embedder: str = "default", broker_url: str = ""
) -> None:
    """Make Django usable for Mnemosyne in this process, or raise NotReady saying why."""
    global _configured_url
    import django
    from django.conf import settings

    with _lock:
        if settings.configured:
            missing = [a for a in _REQUIRED_APPS if a not in settings.INSTALLED_APPS]
            if missing:
                raise NotReady(
                    "this process already runs another Django project (without Mnemosyne's "
                    f"{', '.join(missing)}); Mnemosyne cannot share it"
                )
            if _configured_url is not None and _configured_url != database_url:
                raise NotReady(
                    "this process already uses another Mnemosyne database; one process serves "
                    "one database"
                )
            from django.apps import apps

            if not apps.ready:
                django.setup(set_prefix=False)
            return
        settings.configure(**_settings(database_url, model_dir, embedder, broker_url))
        django.setup(set_prefix=False)
        _configured_url = database_url
        import memoryadmin.celery  # noqa: F401 - the Celery app, configured from these settings


def local_tasks() -> bool:
    """True when Mnemosyne's task messages stay in this process (no broker configured)."""
    from django.conf import settings

    return str(getattr(settings, "CELERY_BROKER_URL", "")).startswith("memory://")


def run_local_tasks(limit: int = 100) -> int:
    """Run the task messages Mnemosyne's code sent to the in-process broker. Returns how many."""
    from memoryadmin.celery import app

    done = 0
    with app.connection_for_write() as connection:
        inbox = connection.SimpleQueue("celery", no_ack=True)
        try:
            while done < limit:
                try:
                    message = inbox.get(block=False)
                except inbox.Empty:
                    break
                name = message.headers.get("task")
                args, kwargs, _ = message.payload
                task = app.tasks.get(name)
                if task is None:
                    logger.warning("mnemosyne: no task named %r; message dropped", name)
                    continue
                try:
                    task(*args, **kwargs)
                except Exception:
                    # The database is the truth: what a failed task did not do is found again
                    # (facts without a vector are embedded by the next write's task).
                    logger.warning("mnemosyne: background task %s failed", name, exc_info=True)
                done += 1
        finally:
            inbox.close()
    return done


def database_errors() -> tuple[type[BaseException], ...]:
    """The errors that mean "the database is not reachable right now"."""
    from django.db import InterfaceError, OperationalError

    return (OperationalError, InterfaceError)


def fresh_connection() -> None:
    """Drop this thread's connection if it broke or grew stale (Django does this per request;
    the provider's threads have no requests)."""
    from django.db import close_old_connections

    # With CONN_HEALTH_CHECKS, the next query first checks the connection still answers.
    close_old_connections()


class Worker:
    """One daemon thread that runs jobs in order and keeps its own database connection.

    Daemon, so a database that hangs can never keep Hermes from exiting."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self._jobs.put((job, future))
        return future

    def run(self, job: Callable[[], T], timeout: float) -> T:
        return self.submit(job).result(timeout=timeout)

    def stop(self, timeout: float = 2.0) -> None:
        self._jobs.put(None)
        self._thread.join(timeout)

    def _loop(self) -> None:
        from django.db import connection

        while (item := self._jobs.get()) is not None:
            job, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                fresh_connection()
                future.set_result(job())
            except BaseException as error:  # handed to the caller, who decides
                future.set_exception(error)
        connection.close()
