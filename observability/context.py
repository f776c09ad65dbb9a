"""The log context of the request or task being served: its id and its tenant's slug.

Set by the request middleware (memoryadmin/requestlog.py) and by Celery's task signals; the
tenant is added where it is known (an API key authenticated, a page or endpoint that opened a
tenant, a task's preamble `tenants.jobs.tenant_task`). `logs.ContextFilter` puts both on every
log line written meanwhile.
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar, Token
from dataclasses import dataclass

# An incoming X-Request-ID is kept when it looks like an id (a proxy's or a client's), else a
# fresh one is made: nothing else of a client's reaches the logs through it.
_WELL_FORMED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{7,127}")


@dataclass
class LogContext:
    request_id: str = ""
    tenant: str = ""


_current: ContextVar[LogContext | None] = ContextVar("log_context", default=None)


def new_request_id(incoming: str | None = None) -> str:
    """`incoming` when it is well formed (8 to 128 letters, digits, `.`, `_`, `:` or `-`),
    else a new random id."""
    if incoming and _WELL_FORMED.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex


def log_context_push(request_id: str) -> Token[LogContext | None]:
    """A fresh context for a request or a task (nothing of the previous one on this thread);
    `log_context_pop` with the token gives back the one it replaced."""
    return _current.set(LogContext(request_id=request_id))


def log_context_pop(token: Token[LogContext | None]) -> None:
    _current.reset(token)


def log_context() -> LogContext | None:
    return _current.get()


def log_tenant_set(slug: str) -> None:
    """The request or task now works for this tenant (no effect outside one)."""
    context = _current.get()
    if context is not None:
        context.tenant = slug
