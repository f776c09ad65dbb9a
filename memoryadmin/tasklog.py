"""Celery's signals for operators: each task's log context, its count and time in /metrics.

A task's log lines carry the id of the request that sent it (a message header set when it is
sent, `mnemosyne_request_id`), else the task's own id, and the slug of its tenant once
`tenants.jobs.tenant_task` has loaded it. A task run eagerly, inside a request, keeps the
request's context and gives it back when it ends.

With MNEMOSYNE_LOG_FORMAT=json the worker and beat log through Django's LOGGING (JSON lines)
instead of Celery's own format.
"""

from __future__ import annotations

import logging.config
import os
import threading
import time
from contextvars import Token
from typing import Any

from celery.signals import (
    before_task_publish,
    setup_logging,
    task_postrun,
    task_prerun,
    task_revoked,
)

from observability import context as log_context
from observability.metrics import task_observe

HEADER = "mnemosyne_request_id"
_lock = threading.Lock()
# task id -> (when it started, the token that gives back the context it replaced)
_running: dict[str, tuple[float, Token[log_context.LogContext | None]]] = {}


@before_task_publish.connect
def _send_request_id(headers: dict[str, Any] | None = None, **_: Any) -> None:
    current = log_context.log_context()
    if headers is not None and current is not None and current.request_id:
        headers.setdefault(HEADER, current.request_id)


@task_prerun.connect
def _task_started(task_id: str = "", task: Any = None, **_: Any) -> None:
    outer = log_context.log_context()
    sent_by = getattr(getattr(task, "request", None), HEADER, None)
    request_id = sent_by or (outer.request_id if outer else "") or task_id
    token = log_context.log_context_push(str(request_id))
    with _lock:
        _running[task_id] = (time.perf_counter(), token)


@task_postrun.connect
def _task_ended(task_id: str = "", task: Any = None, state: str | None = None, **_: Any) -> None:
    with _lock:
        started, token = _running.pop(task_id, (None, None))
    seconds = time.perf_counter() - started if started is not None else None
    task_observe(name=getattr(task, "name", None), outcome=(state or "").lower(), seconds=seconds)
    if token is not None:
        log_context.log_context_pop(token)


@task_revoked.connect
def _task_revoked(request: Any = None, **_: Any) -> None:
    task_observe(name=getattr(request, "task", None), outcome="revoked", seconds=None)


if os.environ.get("MNEMOSYNE_LOG_FORMAT", "").strip().lower() == "json":

    @setup_logging.connect
    def _json_logging(**_: Any) -> None:
        """Connected only for JSON: a receiver here keeps Celery from setting up its own."""
        from django.conf import settings

        logging.config.dictConfig(settings.LOGGING)
