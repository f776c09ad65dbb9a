"""The two ends of a background job, as the code below the Celery tasks sees them.

- `job_send(name, *args)` queues the task registered under `name`. Services and selectors send
  jobs by name, like beat's schedule does, so that they never import the tasks modules that call
  them (a task imports its service, never the other way round).
- `job_send_coalesced(name, tenant_id)` does the same for a task that does all of a tenant's
  pending work, sending at most about two messages a second per tenant from one process.
- `tenant_task` is the preamble of every task that works for one tenant: it loads the tenant
  from the id in the message and, for a task whose work is one transaction, opens its scope.
  A tenant deleted since the message was sent leaves nothing to do: the task returns 0.
- `retrying_task(name)` registers a task that retries the TRANSIENT errors with backoff and a
  cap (the one retry policy of every task that works for a tenant); `sweep_task(name)` one of
  beat's sweeps, which beat sends again at its next tick instead of retrying.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec

from celery import current_app, shared_task
from django.db import InterfaceError, OperationalError

from observability.context import log_tenant_set
from tenants.models import Tenant
from tenants.scope import tenant_scope

# What a task retries with backoff: the broker or the database gone for a moment (a restart, a
# failover). Anything else is a bug or bad data, and retrying it would only repeat it.
TRANSIENT = (ConnectionError, TimeoutError, OperationalError, InterfaceError)

P = ParamSpec("P")


def job_send(name: str, *args: object, countdown: float = 0.0) -> None:
    """Queue the task named `name` with `args` (after `countdown` seconds): through the task
    itself where this process has registered it (so it runs at once where tasks run eagerly),
    else by name to the broker."""
    task = current_app.tasks.get(name)
    if task is None:
        current_app.send_task(name, args=args, countdown=countdown or None)
    elif countdown:
        task.apply_async(args, countdown=countdown)
    else:
        task.delay(*args)


COALESCE_WINDOW_S = 0.5
_coalesce_lock = threading.Lock()
# (task name, tenant id) -> (when the next message may go at once, when the delayed one is due)
_coalesced: dict[tuple[str, int], tuple[float, float]] = {}


def job_send_coalesced(name: str, tenant_id: int, *, window: float = COALESCE_WINDOW_S) -> None:
    """Queue `name(tenant_id)`, a task that does all of the tenant's pending work, so that a
    task starts after this call, with at most one message per `window` from this process.

    Storing facts one by one sent a message per fact; a worker then spent its time on a
    backlog of nudges with nothing left to do. Here a call within `window` of the last message
    sends one delayed to the window's end, unless such a delayed message is still to come (it
    starts after this call, so it covers this work too).
    """
    if current_app.conf.task_always_eager:  # the task runs here and now: nothing to coalesce
        job_send(name, tenant_id)
        return
    now = time.monotonic()
    with _coalesce_lock:
        free_at, delayed_due = _coalesced.get((name, tenant_id), (0.0, 0.0))
        if now >= free_at:
            countdown, free_at = 0.0, now + window
        elif delayed_due > now:
            return
        else:
            countdown, delayed_due = free_at - now, free_at
            free_at += window
        _coalesced[(name, tenant_id)] = (free_at, delayed_due)
    job_send(name, tenant_id, countdown=countdown)


def retrying_task(
    name: str, *, max_retries: int = 5, backoff: int | bool = True, backoff_max: int = 600
) -> Callable[[Callable[..., Any]], Any]:
    """A Celery task named `name` that retries only TRANSIENT errors, with exponential backoff
    (from `backoff` seconds, at most `backoff_max`) and at most `max_retries` times."""
    return shared_task(
        name=name,
        ignore_result=True,
        autoretry_for=TRANSIENT,
        retry_backoff=backoff,
        retry_backoff_max=backoff_max,
        max_retries=max_retries,
    )


def sweep_task(name: str) -> Callable[[Callable[..., Any]], Any]:
    """One of beat's sweeps: no retry (the next tick sends it again), no result kept."""
    return shared_task(name=name, ignore_result=True)


def tenant_task(
    *, scoped: bool = False
) -> Callable[[Callable[Concatenate[Tenant, P], int]], Callable[Concatenate[int, P], int]]:
    """Turn `body(tenant, ...)` into `task(tenant_id, ...)`: the tenant is loaded (0 when it no
    longer exists) and, with `scoped`, the body runs inside `tenant_scope(tenant)` (one
    transaction; leave it off for a task whose service commits batch by batch)."""

    def decorate(body: Callable[Concatenate[Tenant, P], int]) -> Callable[Concatenate[int, P], int]:
        @functools.wraps(body)
        def task(tenant_id: int, *args: P.args, **kwargs: P.kwargs) -> int:
            tenant = Tenant.objects.filter(pk=tenant_id).first()
            if tenant is None:
                return 0
            log_tenant_set(tenant.slug)  # on every log line the task writes from here on
            if not scoped:
                return body(tenant, *args, **kwargs)
            with tenant_scope(tenant):
                return body(tenant, *args, **kwargs)

        # Celery checks a message's arguments against this: the task takes the tenant's id.
        signature = inspect.signature(body)
        first, *rest = signature.parameters.values()
        tenant_id = first.replace(name="tenant_id", annotation=int)
        task.__signature__ = signature.replace(parameters=[tenant_id, *rest])  # type: ignore[attr-defined]
        return task

    return decorate
