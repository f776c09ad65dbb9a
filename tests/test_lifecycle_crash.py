"""A real worker killed with SIGKILL in the middle of its work: after a restart (and beat's
sweep) every fact is embedded once and every retention step happened exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from facts.bundles import bundle_open
from facts.models import EventAction, Fact, FactEvent, FactVector, RetentionRun, Status
from facts.retention import retention_run_start
from facts.services import content_hash
from operations.models import ServiceHeartbeat
from tenants.actors import Actor
from tenants.inputs import retention_changes, tenant_draft
from tenants.scope import tenant_scope
from tenants.services import retention_policy_update, tenant_create
from tests.helpers import PYTHON, REPO, child_env, database_url, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
ACTOR = Actor.job("tests")


def _start(log: Path, archives: Path) -> tuple[subprocess.Popen, str]:
    hostname = f"crash-{uuid.uuid4().hex[:8]}@test"
    worker = subprocess.Popen(
        [PYTHON, "-m", "celery", "-A", "memoryadmin", "worker", "--pool", "solo",
         "--loglevel", "INFO", "--hostname", hostname],
        env=child_env(
            MNEMOSYNE_HOME=str(settings.MNEMOSYNE_HOME),
            DATABASE_URL=database_url(connection.settings_dict),
            MNEMOSYNE_ARCHIVE_DIR=str(archives),
            MNEMOSYNE_RETENTION_LEASE_SECONDS="3",
        ),
        cwd=REPO, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    wait_for(
        lambda: ServiceHeartbeat.objects.filter(name=f"worker:{hostname}").exists(),
        timeout=60,
        what="the worker to start",
    )
    return worker, hostname


def _kill(worker: subprocess.Popen) -> None:
    os.killpg(worker.pid, signal.SIGKILL)  # the worker and anything it started, no goodbye
    worker.wait(timeout=30)


def _stop(worker: subprocess.Popen, log: Path) -> None:
    if worker.poll() is None:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
    print(log.read_text()[-3000:])


def _bulk_facts(tenant, count: int, **fields) -> list[int]:
    """Facts made in bulk (the setup of a big tenant, not what is tested)."""
    now = timezone.now()
    with tenant_scope(tenant):
        rows = Fact.objects.bulk_create(
            Fact(
                tenant=tenant, content=f"Release note {i}: the build {i} passed on runner {i % 7}",
                content_hash=content_hash(f"Release note {i}: the build {i} passed on runner "
                                          f"{i % 7}"),
                created_by="job:tests", created_at=now, **fields,
            )
            for i in range(count)
        )  # fmt: skip
    return [row.pk for row in rows]


def test_a_worker_killed_mid_embedding_batch_loses_and_repeats_nothing(tmp_path: Path) -> None:
    from facts.tasks import facts_embed_pending

    tenant = tenant_create(
        actor=ACTOR, draft=tenant_draft({"slug": "embedcrash", "name": "Embed crash"})
    )
    ids = _bulk_facts(tenant, 700)
    log = tmp_path / "worker.log"
    worker, _ = _start(log, tmp_path / "archives")

    def embedded() -> int:
        with tenant_scope(tenant):
            return Fact.objects.for_tenant(tenant).exclude(embedding_model="").count()

    try:
        facts_embed_pending.delay(tenant.pk)
        wait_for(lambda: embedded() >= 64, timeout=120, what="a first batch", interval=0.05)
        _kill(worker)
        assert 0 < embedded() < len(ids), "killed in the middle of the work"
        worker, _ = _start(log, tmp_path / "archives")
        facts_embed_pending.delay(tenant.pk)  # beat's embed sweep sends this
        wait_for(lambda: embedded() == len(ids), timeout=240, what="every fact embedded")
    finally:
        _stop(worker, log)
    with tenant_scope(tenant):
        per_fact = Counter(FactVector.objects.for_tenant(tenant).values_list("fact_id", flat=True))
    assert set(per_fact) == set(ids) and set(per_fact.values()) == {1}


def test_a_worker_killed_mid_retention_run_does_every_step_once(tmp_path: Path) -> None:
    from facts.tasks import retention_run, retention_sweep

    tenant = tenant_create(
        actor=ACTOR, draft=tenant_draft({"slug": "retcrash", "name": "Retention crash"})
    )
    doubtful = _bulk_facts(tenant, 2400, trust_score=0.1)
    with tenant_scope(tenant):
        old = [
            f.pk
            for f in Fact.objects.for_tenant(tenant).bulk_create(
                Fact(
                    tenant=tenant,
                    content=f"Old incident {i}",
                    content_hash=f"{i:064x}",
                    status=Status.ARCHIVED,
                    archived_at=timezone.now() - timedelta(days=90),
                    created_by="job:tests",
                    created_at=timezone.now(),
                )
                for i in range(600)
            )  # fmt: skip
        ]
    retention_policy_update(
        tenant=tenant, actor=ACTOR,
        changes=retention_changes({"archive_below_trust": 0.3, "purge_archived_after_days": 30}),
    )  # fmt: skip
    archives = tmp_path / "archives"
    log = tmp_path / "worker.log"
    run, _ = retention_run_start(tenant=tenant, actor=ACTOR)  # waits in the broker for a worker
    worker, _ = _start(log, archives)

    def state() -> RetentionRun:
        # This run: the sweep below may also start the tenant's first scheduled one, when it
        # is taken up after this run finished (nothing is left for that one to do).
        with tenant_scope(tenant):
            return RetentionRun.objects.for_tenant(tenant).get(pk=run.pk)

    try:
        wait_for(lambda: state().batches_done >= 2, timeout=120, what="two batches",
                 interval=0.05)  # fmt: skip
        _kill(worker)
        assert state().status == "running", "killed in the middle of the run"
        worker, _ = _start(log, archives)
        # Beat's sweep finds the run whose lease expired and sends it again.
        wait_for(lambda: state().lease_until < timezone.now(), timeout=30, what="the lease")
        retention_sweep.delay()
        retention_run.delay(tenant.pk, run.pk)  # a duplicate message: must change nothing
        wait_for(lambda: state().status == "done", timeout=300, what="the run to finish")
    finally:
        _stop(worker, log)
    finished = state()
    assert finished.counts["low_trust"] == len(doubtful) and finished.counts["purged"] == len(old)
    assert finished.attempts >= 2
    with tenant_scope(tenant):
        events = Counter(
            FactEvent.objects.for_tenant(tenant)
            .filter(action__in=[EventAction.ARCHIVE, EventAction.PURGE])
            .values_list("fact_id", "action")
        )
        statuses = Counter(Fact.objects.for_tenant(tenant).values_list("status", flat=True))
    assert set(events.values()) == {1}  # no step twice
    assert {f for f, a in events if a == "archive"} == set(doubtful)
    assert {f for f, a in events if a == "purge"} == set(old)
    assert statuses == {Status.ARCHIVED: len(doubtful)}
    in_bundles = Counter()
    for manifest in (archives / str(tenant.pk)).glob("*.manifest.json"):
        in_bundles.update(bundle_open(manifest).ids("fact"))
    assert set(in_bundles) == set(doubtful) and set(in_bundles.values()) == {1}
