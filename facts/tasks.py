"""Celery tasks of facts: thin, they take ids, load their tenant (`tenants.jobs.tenant_task`)
and call a service, which opens the tenant's scope for each of its transactions."""

from __future__ import annotations

import time
from datetime import datetime

from celery import current_app
from celery.exceptions import SoftTimeLimitExceeded

from facts.audit_chain import audit_digests_publish
from facts.conflicts import CHECK_BATCH, conflicts_check_pending, tenants_with_unchecked_facts
from facts.embedding import (
    embedding_backlog,
    facts_embed_all,
    tables_analyze_stale,
    tenants_with_pending_embeddings,
)
from facts.importance import importance_due, importance_recompute_due
from facts.models import RelinkStatus
from facts.relink import relink_fail, relink_run, relink_sweep
from facts.retention import REASONS, retention_run_execute, retention_run_fail
from facts.retention import retention_sweep as retention_sweep_due
from facts.services import fact_record_retrievals
from facts.stats import stats_fold
from indexing.vectors import vector_models_cleanup, vector_switch_finish
from observability.metrics import retention_run_observe
from tenants.cross_tenant import tenants_with_stats_work
from tenants.jobs import (
    TRANSIENT,
    job_send,
    job_send_coalesced,
    retrying_task,
    sweep_task,
    tenant_task,
)
from tenants.models import Tenant

# How long one conflict-check task runs before it hands the rest to a fresh message of itself.
# A worker runs one task at a time: a check that ran through 1,200 facts (44 s beside the
# embedding) kept the new facts queued behind it waiting for their vectors.
CHECK_TASK_S = 3.0
# How long one embedding task takes new batches before it hands the rest to a fresh message of
# itself: well inside Celery's soft time limit (300 s), so a large import (100,000 facts take
# minutes) is never cut off in the middle of a batch, and a killed process loses one batch.
EMBED_TASK_S = 120.0


@retrying_task("facts.tasks.facts_embed_pending")
@tenant_task()
def facts_embed_pending(tenant: Tenant) -> int:
    """Embed the tenant's unembedded active facts, a batch at a time, for up to `EMBED_TASK_S`;
    then a fresh message of itself takes the rest. Idempotent.

    When a batch it claims leaves rows that nobody has claimed (a run's worth,
    `facts.embedding.RUN`, or more), it sends one more message of itself at once, so that a
    free worker process joins in (rows are claimed with SKIP LOCKED). The importer sends its
    messages after the first with a delay (`job_send_coalesced`), and a worker busy embedding
    held those until its task ended (then ran them one after another, with nothing left to
    do): a second worker joined a load of 2,000 facts 1.4 s after it began."""

    def busy() -> None:
        if not current_app.conf.task_always_eager:  # eager: the message would run right here
            job_send("facts.tasks.facts_embed_pending", tenant.pk)

    run = facts_embed_all(tenant=tenant, seconds=EMBED_TASK_S, busy=busy)
    if run.cut:
        job_send_coalesced("facts.tasks.facts_embed_pending", tenant.pk)
    if done := run.done:
        tables_analyze_stale()  # a bulk load's facts are planned as what they are
        vector_switch_finish()  # this tenant may have been the last one a new model waited for
        # New vectors: look for disagreements (one message per window, however many batches).
        job_send_coalesced("facts.tasks.facts_check_conflicts", tenant.pk)
    return done


@sweep_task("facts.tasks.facts_embed_sweep")
def facts_embed_sweep() -> int:
    """Beat's safety net: a nudge for every tenant that still has facts waiting for a vector;
    also finishes a model switch whose vectors are complete and deletes retired ones."""
    vector_switch_finish()
    vector_models_cleanup()
    tenant_ids = tenants_with_pending_embeddings()
    for tenant_id in tenant_ids:
        facts_embed_pending.delay(tenant_id)
    return len(tenant_ids)


@retrying_task("facts.tasks.facts_record_retrievals")
@tenant_task()
def facts_record_retrievals(
    tenant: Tenant, fact_ids: list[int], at: str, times: list[int] | None = None
) -> int:
    """Count the retrievals of each fact (`times`, one each when absent) at `at` (a message
    delivered twice counts once)."""
    return fact_record_retrievals(
        tenant=tenant, fact_ids=fact_ids, at=datetime.fromisoformat(at), times=times
    )


# -- entities: re-linking after the dictionary or the extractor changed ----------------------


@retrying_task("facts.tasks.entities_relink", max_retries=8)
@tenant_task()
def entities_relink(tenant: Tenant, job_id: int) -> int:
    """Work on a relink job for up to four minutes; re-queue itself until it is done. A
    database outage retries with backoff (each committed batch stays done)."""
    try:
        job = relink_run(tenant=tenant, job_id=job_id)
    except TRANSIENT:
        raise
    except Exception as error:  # recorded for the admin to see; the sweep does not retry it
        relink_fail(tenant=tenant, job_id=job_id, error=f"{type(error).__name__}: {error}")
        raise
    if job is not None and job.status == RelinkStatus.QUEUED:
        entities_relink.delay(tenant.pk, job_id)  # out of time: the rest in a fresh task
    return job.done if job is not None else 0


@sweep_task("facts.tasks.entities_relink_sweep")
def entities_relink_sweep() -> int:
    """Beat: re-link every tenant after the extractor changed; resend lost relink jobs."""
    todo = relink_sweep()
    for tenant_id, job_id in todo:
        entities_relink.delay(tenant_id, job_id)
    return len(todo)


# -- conflicts and duplicates ------------------------------------------------------------------


@retrying_task("facts.tasks.facts_check_conflicts")
@tenant_task()
def facts_check_conflicts(tenant: Tenant) -> int:
    """Compare the tenant's newly embedded (or changed) facts with their neighbours, a batch
    at a time for up to `CHECK_TASK_S`; then the rest waits behind what was queued meanwhile.
    While a backlog of new facts waits for vectors, the check gives way to their embedding.

    Facts an agent stores one by one come with their vectors (`fact_add`), so no embedding task
    runs for them and this task is the worker's first look: it has the fact tables analysed
    once they changed enough, as the embedding task does (`tables_analyze_stale`)."""
    checked = 0
    deadline = time.monotonic() + CHECK_TASK_S
    while True:
        if embedding_backlog(tenant=tenant):
            # New facts wait for their vectors: the cores are theirs first. The embedding task
            # that takes the last of them sends a check when it is done.
            break
        result = conflicts_check_pending(tenant=tenant)
        checked += result.checked
        if result.checked < CHECK_BATCH:
            break
        if time.monotonic() >= deadline:
            job_send_coalesced("facts.tasks.facts_check_conflicts", tenant.pk)
            break
    if checked:
        tables_analyze_stale()
    return checked


@sweep_task("facts.tasks.facts_conflicts_sweep")
def facts_conflicts_sweep() -> int:
    """Beat: a conflict check for every tenant with facts not yet checked."""
    tenant_ids = tenants_with_unchecked_facts()
    for tenant_id in tenant_ids:
        facts_check_conflicts.delay(tenant_id)
    return len(tenant_ids)


# -- importance ------------------------------------------------------------------------------


@retrying_task("facts.tasks.facts_importance_recompute")
@tenant_task()
def facts_importance_recompute(tenant: Tenant) -> int:
    """Recompute the importance of one tenant's active facts when its interval has passed (one
    claim and one statement; a second message for the same round does nothing)."""
    return importance_recompute_due(tenant=tenant) or 0


@sweep_task("facts.tasks.facts_importance_sweep")
def facts_importance_sweep() -> int:
    """Beat: recompute the importance of every tenant whose interval has passed (recency moves
    with the clock)."""
    tenant_ids = importance_due()
    for tenant_id in tenant_ids:
        facts_importance_recompute.delay(tenant_id)
    return len(tenant_ids)


# -- retention ---------------------------------------------------------------------------------


@retrying_task("facts.tasks.retention_run", max_retries=8, backoff=5, backoff_max=300)
@tenant_task()
def retention_run(tenant: Tenant, run_id: int) -> int:
    """Work on a retention run for up to four minutes; re-queue itself until it is done. A
    database outage retries with backoff (each committed batch stays done); any other error
    marks the run failed, for the admin to see."""
    try:
        run = retention_run_execute(tenant=tenant, run_id=run_id)
    except TRANSIENT:
        raise
    except SoftTimeLimitExceeded:
        return 0  # the batch in hand rolled back; the sweep resends the run when its lease ends
    except Exception as error:  # not transient: recorded, not retried
        retention_run_fail(tenant=tenant, run_id=run_id, error=f"{type(error).__name__}: {error}")
        retention_run_observe(failed=True)
        raise
    if run is not None and run.status == "queued":
        retention_run.delay(tenant.pk, run_id)  # out of time: the rest in a fresh task
    elif run is not None and run.status == "done":
        counted = 0 if run.dry_run else 1  # a dry run only plans: it archives nothing
        retention_run_observe(
            failed=False,
            archived=counted * sum(int(run.counts.get(reason, 0)) for reason in REASONS),
            purged=counted * int(run.counts.get("purged", 0)),
        )
    return run.batches_done if run is not None else 0


@sweep_task("facts.tasks.retention_sweep")
def retention_sweep() -> int:
    """Beat: start the retention runs that are due; send again lost or orphaned ones."""
    todo = retention_sweep_due()
    for tenant_id, run_id in todo:
        retention_run.delay(tenant_id, run_id)
    return len(todo)


# -- maintained statistics -------------------------------------------------------------------


@retrying_task("facts.tasks.facts_stats_fold")
@tenant_task()
def facts_stats_fold(tenant: Tenant) -> int:
    """Fold one tenant's statistics rows and count its changed entities (facts.stats)."""
    return stats_fold(tenant=tenant).entities_counted


@sweep_task("facts.tasks.facts_stats_sweep")
def facts_stats_sweep() -> int:
    """Beat: a fold for every tenant whose statistics changed since the last one."""
    tenant_ids = tenants_with_stats_work()
    for tenant_id in tenant_ids:
        facts_stats_fold.delay(tenant_id)
    return len(tenant_ids)


@sweep_task("facts.tasks.audit_digest_sweep")
def audit_digest_sweep() -> int:
    """Beat: publish the audit chain's digest of each tenant whose chain moved since its last
    (to the log and the digest table; facts.audit_chain)."""
    return audit_digests_publish()
