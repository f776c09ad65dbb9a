"""Retention runs: a tenant's policy applied, in steps that each happen exactly once.

A run plans first (which facts to archive, for which reason, and which archived facts to
purge), stores the plan on the RetentionRun, then works through it in batches, each batch one
transaction that also advances the run's progress. A worker claims a run with a conditional
update and a lease; a run whose worker died is claimed again once the lease has expired and
goes on from the first batch not committed. Facts are re-checked inside each batch (a fact
retrieved, trusted, pinned or restored since the plan is left alone), and the policy is read in
each batch under a share lock: once legal hold is saved, no further batch runs.

Every archive and purge is audited with the job as actor (`job:retention`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from facts.archive import facts_archive, facts_purge
from facts.models import Fact, RetentionRun, Status
from facts.models import RetentionRunStatus as RunStatus
from tenants.actors import Actor
from tenants.jobs import job_send
from tenants.models import RetentionPolicy, Tenant
from tenants.scope import tenant_scope
from tenants.services import retention_run_record, under_legal_hold

JOB = Actor.job("retention")
BATCH = 200
POLICY_FIELDS = (
    "archive_after_days_unretrieved", "archive_below_trust", "max_active_facts",
    "purge_archived_after_days", "legal_hold", "run_every_hours",
)  # fmt: skip
REASONS = ("unretrieved", "low_trust", "over_limit")
SAMPLE = 20  # ids a dry run keeps per step, to show


@dataclass(frozen=True)
class RetentionPlan:
    archive: dict[str, list[int]]  # reason -> fact ids, in the order they go
    purge: list[int]
    legal_hold: bool
    policy: dict[str, Any]

    @property
    def counts(self) -> dict[str, int]:
        return {
            **{f"archive_{reason}": len(ids) for reason, ids in self.archive.items()},
            "archive": sum(len(ids) for ids in self.archive.values()),
            "purge": len(self.purge),
        }


def _policy_values(policy: RetentionPolicy) -> dict[str, Any]:
    return {field: getattr(policy, field) for field in POLICY_FIELDS}


def _policy(tenant: Tenant, *, lock: bool = False) -> RetentionPolicy:
    rows = RetentionPolicy.objects.for_tenant(tenant)
    policy = (rows.select_for_update(of=("self",)) if lock else rows).first()
    return policy if policy is not None else RetentionPolicy(tenant=tenant)


def _last_seen_before(moment: datetime) -> Q:
    return Q(last_retrieved_at__lt=moment) | Q(
        last_retrieved_at__isnull=True, created_at__lt=moment
    )


def _rules(policy: dict[str, Any], now: datetime) -> dict[str, Q]:
    rules: dict[str, Q] = {}
    if policy["archive_after_days_unretrieved"] is not None:
        rules["unretrieved"] = _last_seen_before(
            now - timedelta(days=policy["archive_after_days_unretrieved"])
        )
    if policy["archive_below_trust"] is not None:
        rules["low_trust"] = Q(trust_score__lt=policy["archive_below_trust"])
    return rules


def _purgeable(policy: dict[str, Any], now: datetime) -> Q | None:
    days = policy["purge_archived_after_days"]
    if days is None:
        return None
    return Q(status=Status.ARCHIVED, archived_on__lt=now - timedelta(days=days))


def _with_archived_on(facts: Any) -> Any:
    # Facts archived before archived_at existed: their last change is when.
    return facts.annotate(archived_on=Coalesce("archived_at", "updated_at"))


def retention_plan(*, tenant: Tenant, now: datetime | None = None) -> RetentionPlan:
    """Which facts the policy archives now (pinned facts never), for which reason (the first
    rule that holds), then the lowest-importance facts beyond the cap; which archived facts it
    purges. Nothing under legal hold."""
    now = now or timezone.now()
    with tenant_scope(tenant):
        policy = _policy_values(_policy(tenant))
        if policy["legal_hold"]:
            return RetentionPlan({r: [] for r in REASONS}, [], True, policy)
        facts = Fact.objects.for_tenant(tenant)
        active = facts.filter(status=Status.ACTIVE)
        candidates = active.filter(pinned=False)
        archive: dict[str, list[int]] = {reason: [] for reason in REASONS}
        taken: set[int] = set()
        for reason, rule in _rules(policy, now).items():
            ids = candidates.filter(rule).order_by("importance", "id").values_list("pk", flat=True)
            archive[reason] = [i for i in ids if i not in taken]
            taken.update(archive[reason])
        cap = policy["max_active_facts"]
        if cap is not None:
            over = active.count() - len(taken) - cap
            if over > 0:
                rest = candidates.exclude(pk__in=taken).order_by("importance", "id")
                archive["over_limit"] = list(rest.values_list("pk", flat=True)[:over])
        purge: list[int] = []
        if (purge_rule := _purgeable(policy, now)) is not None:
            purge = list(
                _with_archived_on(facts)
                .filter(purge_rule)
                .order_by("id")
                .values_list("pk", flat=True)
            )
    return RetentionPlan(archive, purge, False, policy)


# -- starting runs ----------------------------------------------------------------------------


def _schedule(tenant_id: int, run_id: int) -> None:
    transaction.on_commit(
        lambda: job_send("facts.tasks.retention_run", tenant_id, run_id), robust=True
    )


def retention_run_start(
    *, tenant: Tenant, actor: Actor, trigger: str = "manual"
) -> tuple[RetentionRun, bool]:
    """Queue a run for a worker. Returns (run, True), or the run already queued or running
    and False: one real run at a time per tenant."""
    with tenant_scope(tenant):
        try:
            with transaction.atomic():
                run = RetentionRun.objects.create(
                    tenant=tenant, trigger=trigger, created_by=str(actor)
                )
        except IntegrityError:
            open_run = (
                RetentionRun.objects.for_tenant(tenant)
                .filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING], dry_run=False)
                .first()
            )
            if open_run is None:  # it finished a moment ago
                return retention_run_start(tenant=tenant, actor=actor, trigger=trigger)
            return open_run, False
        if trigger == "manual":
            retention_run_record(
                tenant=tenant, actor=actor, run_id=run.pk, dry_run=False, counts={}
            )
        _schedule(tenant.pk, run.pk)
        return run, True


def retention_dry_run(*, tenant: Tenant, actor: Actor) -> RetentionRun:
    """Plan as a run would, change nothing, and record what it would do."""
    plan = retention_plan(tenant=tenant)
    now = timezone.now()
    with tenant_scope(tenant), transaction.atomic():
        run = RetentionRun.objects.create(
            tenant=tenant, trigger="manual", dry_run=True, status=RunStatus.DONE,
            policy=dict(plan.policy),
            plan={"archive": {r: ids[:SAMPLE] for r, ids in plan.archive.items()},
                  "purge": plan.purge[:SAMPLE]},
            counts=plan.counts, note="legal hold: nothing would be touched" if plan.legal_hold
            else "", created_by=str(actor), started_at=now, finished_at=now,
        )  # fmt: skip
        retention_run_record(tenant=tenant, actor=actor, run_id=run.pk, dry_run=True,
                             counts={"archive": plan.counts["archive"],
                                     "purge": plan.counts["purge"]})  # fmt: skip
        return run


# -- running ----------------------------------------------------------------------------------


def _lease() -> datetime:
    return timezone.now() + timedelta(seconds=settings.MNEMOSYNE_RETENTION_LEASE_SECONDS)


def retention_run_claim(*, tenant: Tenant, run_id: int) -> RetentionRun | None:
    """Take the run for this worker: a queued run, or a running one whose lease expired.
    None when another worker holds it (or it is finished or unknown)."""
    with tenant_scope(tenant):
        claimed = (
            RetentionRun.objects.for_tenant(tenant)
            .filter(pk=run_id, dry_run=False)
            .filter(
                Q(status=RunStatus.QUEUED)
                | Q(status=RunStatus.RUNNING, lease_until__lt=timezone.now())
            )
            .update(status=RunStatus.RUNNING, lease_until=_lease(), attempts=F("attempts") + 1)
        )
        if not claimed:
            return None
        run = RetentionRun.objects.for_tenant(tenant).get(pk=run_id)
        if run.started_at is None:
            run.started_at = timezone.now()
            run.save(update_fields=["started_at"])
        return run


def retention_run_execute(
    *, tenant: Tenant, run_id: int, seconds: float = 240.0
) -> RetentionRun | None:
    """Work on a run for up to `seconds`: plan it (once), then batch after batch. Returns the
    run: done, or queued again when out of time; None when it was not ours to work on."""
    run = retention_run_claim(tenant=tenant, run_id=run_id)
    if run is None:
        return None
    started = timezone.now()
    while True:
        with tenant_scope(tenant):
            run = RetentionRun.objects.for_tenant(tenant).select_for_update().get(pk=run_id)
            if run.status != RunStatus.RUNNING:
                return run
            planning = not run.step
            finished = _step(tenant, run)
            run.lease_until = _lease()
            fields = ["status", "step", "batches_done", "counts", "lease_until", "note",
                      "finished_at"]  # fmt: skip
            # The plan is written once: a big one is not rewritten with every batch.
            run.save(update_fields=[*fields, "policy", "plan"] if planning else fields)
            if finished:
                return run
        if (timezone.now() - started).total_seconds() >= seconds:
            with tenant_scope(tenant):
                RetentionRun.objects.for_tenant(tenant).filter(
                    pk=run_id, status=RunStatus.RUNNING
                ).update(status=RunStatus.QUEUED, lease_until=None)
                return RetentionRun.objects.for_tenant(tenant).get(pk=run_id)


def _finish(run: RetentionRun, note: str = "") -> bool:
    run.status = RunStatus.DONE
    run.finished_at = timezone.now()
    run.lease_until = None
    if note:
        run.note = note
    return True


def _step(tenant: Tenant, run: RetentionRun) -> bool:
    """One step of the run in the open transaction; True when the run is finished."""
    # Share lock: a legal hold being saved waits for this batch, and no batch starts after it.
    if under_legal_hold(tenant):
        return _finish(run, "legal hold: nothing (more) was touched")
    if not run.step:
        plan = retention_plan(tenant=tenant)
        run.policy = dict(plan.policy)
        run.plan = {"archive": plan.archive, "purge": plan.purge}
        run.counts = {"planned": plan.counts, **dict.fromkeys(REASONS, 0), "purged": 0}
        run.step, run.batches_done = "archive", 0
        return False
    if run.step == "archive":
        items = [(i, reason) for reason in REASONS for i in run.plan["archive"].get(reason, [])]
        batch = items[run.batches_done * BATCH : (run.batches_done + 1) * BATCH]
        if not batch:
            run.step, run.batches_done = "purge", 0
            return False
        _archive_batch(tenant, run, dict(batch))
        run.batches_done += 1
        return False
    batch_ids = run.plan["purge"][run.batches_done * BATCH : (run.batches_done + 1) * BATCH]
    if not batch_ids:
        return _finish(run)
    _purge_batch(tenant, run, batch_ids)
    run.batches_done += 1
    return False


def _archive_batch(tenant: Tenant, run: RetentionRun, reasons: dict[int, str]) -> None:
    from indexing.vectors import configured_embedder

    now = timezone.now()
    rules = _rules(run.policy, now)
    still = Q(pk__in=[])
    for reason in set(reasons.values()):
        ids = [i for i, r in reasons.items() if r == reason]
        # A fact retrieved or trusted since the plan no longer meets its rule; over_limit
        # facts are taken as planned (the plan counted the cap).
        still |= Q(pk__in=ids) & rules.get(reason, Q())
    facts = list(
        Fact.objects.for_tenant(tenant)
        .filter(still, status=Status.ACTIVE, pinned=False)
        .select_for_update()
        .order_by("pk")
    )
    name = f"run{run.pk}-{run.batches_done:05d}"
    done = facts_archive(
        tenant=tenant, facts=facts, reasons=reasons, actor=JOB, bundle_name=name,
        model=configured_embedder().name, extra={"run": run.pk},
    )  # fmt: skip
    for fact in facts:
        run.counts[reasons[fact.pk]] = run.counts.get(reasons[fact.pk], 0) + 1
    if done:
        run.counts["bundles"] = run.counts.get("bundles", 0) + 1


def _purge_batch(tenant: Tenant, run: RetentionRun, ids: list[int]) -> None:
    rule = _purgeable(run.policy, timezone.now())
    if rule is None:
        return
    facts = list(
        _with_archived_on(Fact.objects.for_tenant(tenant).filter(pk__in=ids))
        .filter(rule)
        .select_for_update(of=("self",))
        .order_by("pk")
    )
    days = run.policy["purge_archived_after_days"]
    purged = facts_purge(
        tenant=tenant, facts=facts, actor=JOB,
        reason=f"retention: archived more than {days} days ago", extra={"run": run.pk},
    )  # fmt: skip
    run.counts["purged"] = run.counts.get("purged", 0) + len(purged)


def retention_run_fail(*, tenant: Tenant, run_id: int, error: str) -> None:
    with tenant_scope(tenant):
        RetentionRun.objects.for_tenant(tenant).filter(pk=run_id).update(
            status=RunStatus.FAILED, note=error[:2000], finished_at=timezone.now(), lease_until=None
        )


# -- the schedule -----------------------------------------------------------------------------


def retention_sweep(*, now: datetime | None = None) -> list[tuple[int, int]]:
    """Beat's check: start a run for every tenant whose policy's interval has passed since its
    last scheduled run; send again runs whose message was lost (queued for a minute) or whose
    worker died (lease expired). Returns the (tenant id, run id) pairs to send. Each tenant is
    looked at in its own scope (the runtime role sees one tenant at a time)."""
    now = now or timezone.now()
    todo: list[tuple[int, int]] = []
    for tenant in Tenant.objects.order_by("pk"):
        with tenant_scope(tenant):
            runs = RetentionRun.objects.for_tenant(tenant).filter(dry_run=False)
            stale = list(
                runs.filter(
                    Q(status=RunStatus.QUEUED, created_at__lt=now - timedelta(minutes=1))
                    | Q(status=RunStatus.RUNNING, lease_until__lt=now)
                ).values_list("pk", flat=True)
            )
            todo += [(tenant.pk, pk) for pk in stale]
            if stale or runs.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).exists():
                continue
            policy = (
                RetentionPolicy.objects.for_tenant(tenant)
                .values_list("run_every_hours", "legal_hold")
                .first()
            )
            if policy is None or policy[1]:
                continue  # no policy, or held: no scheduled run while the hold lasts
            hours = policy[0]
            last = (
                runs.filter(trigger="schedule")
                .order_by("-created_at")
                .values_list("created_at", flat=True)
                .first()
            )
            if last is not None and last + timedelta(hours=hours) > now:
                continue
        run, created = retention_run_start(tenant=tenant, actor=JOB, trigger="schedule")
        if created:
            todo.append((tenant.pk, run.pk))
    return todo


# -- what the Retention page shows ------------------------------------------------------------


@dataclass(frozen=True)
class RetentionSchedule:
    runs: list[RetentionRun]
    last: RetentionRun | None  # the last real (not dry) run
    next_at: datetime | None  # when beat starts the next scheduled run
    open: RetentionRun | None  # queued or running now
    importance_next_at: datetime | None = None  # when beat recomputes importance next


def retention_schedule(*, tenant: Tenant, limit: int = 20) -> RetentionSchedule:
    with tenant_scope(tenant):
        runs = list(RetentionRun.objects.for_tenant(tenant).order_by("-id")[:limit])
        policy = _policy(tenant)
        last_scheduled = (
            RetentionRun.objects.for_tenant(tenant)
            .filter(trigger="schedule", dry_run=False)
            .order_by("-created_at")
            .first()
        )
    real = [r for r in runs if not r.dry_run]
    open_run = next((r for r in real if r.status in (RunStatus.QUEUED, RunStatus.RUNNING)), None)
    if last_scheduled is None:
        next_at = timezone.now()  # the next sweep (within a minute)
    else:
        next_at = last_scheduled.created_at + timedelta(hours=policy.run_every_hours)
    recomputed = policy.importance_recomputed_at
    importance_next_at = (
        timezone.now()  # the next sweep
        if recomputed is None
        else recomputed + timedelta(hours=policy.importance_every_hours)
    )
    return RetentionSchedule(runs=runs, last=real[0] if real else None, next_at=next_at,
                             open=open_run, importance_next_at=importance_next_at)  # fmt: skip
