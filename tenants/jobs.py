"""The two ends of a background job, as the code below the Celery tasks sees them.

- `job_send(name, *args)` queues the task registered under `name`. Services and selectors send
  jobs by name, like beat's schedule does, so that they never import the tasks modules that call
  them (a task imports its service, never the other way round).
- `tenant_task` is the preamble of every task that works for one tenant: it loads the tenant
  from the id in the message and, for a task whose work is one transaction, opens its scope.
  A tenant deleted since the message was sent leaves nothing to do: the task returns 0.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Concatenate, ParamSpec

from celery import current_app

from tenants.models import Tenant
from tenants.scope import tenant_scope

P = ParamSpec("P")


def job_send(name: str, *args: object) -> None:
    """Queue the task named `name` with `args`: through the task itself where this process has
    registered it (so it runs at once where tasks run eagerly), else by name to the broker."""
    task = current_app.tasks.get(name)
    if task is None:
        current_app.send_task(name, args=args)
    else:
        task.delay(*args)


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
