"""What the tamper-evident audit chain costs a write, and how fast a chain verifies.

    python -m bench.audit_chain [--events 3000] [--writers 4] [--json OUT]

On a fresh database (bench.harness), as the runtime role, like web processes and workers:
0. the database backend's own CPU time per event of one INSERT of `--events` rows, with a job's
   and with an API key's actor (read from /proc: a server on this machine), and the trigger's
   time as EXPLAIN ANALYZE reports it;
1. one event per transaction (as `facts.events.fact_event_record` writes one), `--events` times;
2. a thousand events per statement (as imports and retention runs write them), `--events` in all;
3. `--writers` processes at once, each writing `--events` / `--writers` single-event
   transactions, first all into one tenant (their chain's head row is locked by each insert to
   its commit, so they take turns), then each into a tenant of its own;
each with the chain's trigger (the actor check and the chain, as shipped) and without it (the
owner disables the trigger for that part only). Then 4. verification: the chain of the tenant
of step 1 to 3 walked by `audit_chain_verify` (events per second; the CPU time of this process,
which hashes, and the wall time, which includes the database's reading of the rows).

Figures: milliseconds per event (wall), events per second, and the CPU time of this process per
event; the scale figure is this machine's sha256 rate (MB/s) measured in the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import time
from typing import Any

from bench.harness import bench_database, progress, write_json

TABLE = "facts_factevent"
TRIGGER = "facts_factevent_chain"


def _sha256_rate() -> float:
    block = os.urandom(1 << 20)
    started = time.process_time()
    for _ in range(200):
        hashlib.sha256(block).digest()
    return 200 / (time.process_time() - started)


def _trigger(enabled: bool) -> None:
    from django.db import connection, transaction

    from operations.roles import as_owner

    verb = "ENABLE" if enabled else "DISABLE"
    with as_owner(), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {TABLE} {verb} TRIGGER {TRIGGER}")


def _tenant(slug: str) -> Any:
    from tenants.actors import Actor
    from tenants.inputs import tenant_draft
    from tenants.services import tenant_create

    return tenant_create(actor=Actor.job("bench"), draft=tenant_draft({"slug": slug, "name": slug}))


def _singles(tenant_id: int, count: int, tag: str) -> tuple[float, float]:
    """`count` events, one transaction each: (wall s, CPU s of this process)."""
    from django.utils import timezone

    from facts.models import FactEvent
    from tenants.scope import tenant_scope

    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(count):
        with tenant_scope(tenant_id):
            FactEvent.objects.create(
                tenant_id=tenant_id, fact_id=i + 1, action="update", actor="job:bench",
                before={"trust_score": 0.5}, after={"trust_score": 0.55, "tag": tag},
                at=timezone.now(),
            )  # fmt: skip
    return time.perf_counter() - wall, time.process_time() - cpu


def _bulk(tenant_id: int, count: int) -> tuple[float, float]:
    from django.utils import timezone

    from facts.models import FactEvent
    from tenants.scope import tenant_scope

    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, count, 1000):
        with tenant_scope(tenant_id):
            FactEvent.objects.bulk_create(
                FactEvent(
                    tenant_id=tenant_id,
                    fact_id=i + 1,
                    action="create",
                    actor="job:bench",
                    after={
                        "content": f"Bench fact number {i} about the release plan",
                        "scope": "team:core",
                    },
                    at=timezone.now(),
                )  # fmt: skip
                for i in range(start, min(count, start + 1000))
            )
    return time.perf_counter() - wall, time.process_time() - cpu


def _writer(args: tuple[int, int, str]) -> float:
    from django.db import connections

    connections.close_all()  # a connection of its own, not the parent's
    tenant_id, count, tag = args
    wall, _ = _singles(tenant_id, count, tag)
    connections.close_all()
    return wall


def _concurrent(tenant_ids: list[int], per_writer: int, tag: str) -> float:
    """Events per second of len(tenant_ids) processes writing at once."""
    from django.db import connections

    connections.close_all()
    context = multiprocessing.get_context("fork")
    started = time.perf_counter()
    with context.Pool(len(tenant_ids)) as pool:
        pool.map(_writer, [(t, per_writer, tag) for t in tenant_ids])
    return len(tenant_ids) * per_writer / (time.perf_counter() - started)


def _trigger_ms(tenant_id: int, rows: int, content: bool) -> float:
    """The trigger's own time per row as the server measures it (EXPLAIN ANALYZE of one
    INSERT of `rows` events; with `content`, each carries a fact text to salt and digest)."""
    import json

    from django.db import connection

    from tenants.scope import tenant_scope

    after = "jsonb_build_object('content', 'Bench fact ' || g || ' about the plan')" if content \
        else "jsonb_build_object('trust_score', 0.55)"  # fmt: skip
    with tenant_scope(tenant_id), connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) INSERT INTO facts_factevent "  # noqa: S608
            "(tenant_id, fact_id, action, actor, before, after, at) "
            f"SELECT %s, g, 'update', 'job:bench', NULL, {after}, now() "
            "FROM generate_series(1, %s) g",
            [tenant_id, rows],
        )
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    [trigger] = [t for t in plan[0]["Triggers"] if t["Trigger Name"] == TRIGGER]
    return trigger["Time"] / trigger["Calls"]


def _backend_cpu_ms(tenant_id: int, rows: int, actor: str) -> float | None:
    """The database backend's own CPU time per row of one INSERT of `rows` events (from
    /proc/<pid>/stat: a server on this machine; None elsewhere). Unlike wall time, it does not
    count the time the backend waited for a core on a busy machine."""
    from django.db import connection

    from tenants.scope import tenant_scope

    with tenant_scope(tenant_id), connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        stat = f"/proc/{cursor.fetchone()[0]}/stat"
        if not os.access(stat, os.R_OK):
            return None

        def used() -> float:
            fields = open(stat).read().rsplit(")", 1)[1].split()  # noqa: SIM115, PTH123
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        before = used()
        cursor.execute(
            "INSERT INTO facts_factevent (tenant_id, fact_id, action, actor, before, after, at) "
            "SELECT %s, g, 'update', %s, NULL, jsonb_build_object('trust_score', 0.5), now() "
            "FROM generate_series(1, %s) g",
            [tenant_id, actor, rows],
        )
        return 1000 * (used() - before) / rows


def _row(label: str, count: int, wall: float, cpu: float) -> dict[str, Any]:
    figures = {"events": count, "ms_per_event": 1000 * wall / count,
               "cpu_ms_per_event": 1000 * cpu / count}  # fmt: skip
    progress(f"{label}: {figures['ms_per_event']:.3f} ms/event, "
             f"CPU {figures['cpu_ms_per_event']:.3f} ms/event")  # fmt: skip
    return figures


def _verify(tenant: Any) -> dict[str, Any]:
    from facts.audit_chain import audit_chain_verify

    wall, cpu = time.perf_counter(), time.process_time()
    report = audit_chain_verify(tenant=tenant)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if not report.ok:
        raise SystemExit(f"the bench's chain does not verify: {report.broken}")
    progress(f"verify: {report.count} events in {wall:.2f} s ({report.count / wall:.0f}/s), "
             f"CPU {cpu:.2f} s")  # fmt: skip
    return {"events": report.count, "seconds": wall, "events_per_s": report.count / wall,
            "cpu_ms_per_1000": 1e6 * cpu / report.count}  # fmt: skip


def run(events: int, writers: int) -> dict[str, Any]:
    from tenants.actors import Actor
    from tenants.services import apikey_create

    figures: dict[str, Any] = {"sha256_mb_per_s": _sha256_rate(), "writers": writers}
    main = _tenant("bench-main")
    others = [_tenant(f"bench-w{i}") for i in range(writers)]
    _singles(main.pk, 200, "warm-up")
    figures["trigger_ms_per_row"] = {
        "without_text": _trigger_ms(main.pk, events, content=False),
        "with_text": _trigger_ms(main.pk, events, content=True),
    }
    progress(f"the trigger, as the server times it: {figures['trigger_ms_per_row']}")
    key = apikey_create(tenant=main, name="bench", actor=Actor.job("bench")).key
    for chained in (True, False):
        name = "chain" if chained else "no_chain"
        _trigger(chained)
        try:
            figures[f"backend_cpu_ms_per_row_{name}"] = {
                "job": _backend_cpu_ms(main.pk, events, "job:bench"),
                "apikey": _backend_cpu_ms(main.pk, events, f"apikey:{key.pk}:{key.name}"),
            }
            progress(f"backend CPU per row, {name}: {figures[f'backend_cpu_ms_per_row_{name}']}")
            figures[f"single_{name}"] = _row(f"single, {name}", events,
                                             *_singles(main.pk, events, name))  # fmt: skip
            figures[f"bulk_{name}"] = _row(f"bulk, {name}", events, *_bulk(main.pk, events))
            per = max(1, events // writers)
            one = _concurrent([main.pk] * writers, per, name)
            own = _concurrent([t.pk for t in others], per, name)
            figures[f"concurrent_{name}"] = {"one_tenant_events_per_s": one,
                                             "own_tenants_events_per_s": own}  # fmt: skip
            progress(f"{writers} writers, {name}: one tenant {one:.0f} events/s, "
                     f"a tenant each {own:.0f} events/s")  # fmt: skip
        finally:
            _trigger(True)
        if chained:  # before events without a place in the chain are added
            figures["verify"] = _verify(main)
    progress(f"scale: sha256 at {figures['sha256_mb_per_s']:.0f} MB/s on this machine")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    with bench_database():
        figures = run(args.events, args.writers)
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
