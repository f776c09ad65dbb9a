"""Ingest throughput end to end, beside the embedder's own; export and import of a big tenant.

    python -m bench.ingest --data PATH [--facts 2000] [--workers 1,2] [--batch 250]
                           [--long-import 20000] [--bundle-facts 100000] [--json OUT]

- embedder: texts per second of the configured embedder alone, in this process, called with as
  many texts at a time as a worker claims (`facts.embedding.EMBED_BATCH`), in one stream with
  all the threads and in two streams side by side (each with its own copy of the model and half
  the threads, as a worker has them, each embedding whole batches of its own: a worker's
  streams share each batch in runs (`facts.embedding.RUN`), which in one thread embedded about
  3% slower, so this is the stricter figure), measured again right before each end-to-end run
  (a shared machine's speed drifts: the same measurement gave 82 to 132 texts/s within half an
  hour);
  each run's share is of the faster of the two measured before it;
- end to end, for each worker count and two ways of storing: facts stored one by one with
  `fact_add` (as an agent's `fact_store` stores them: each text is embedded by this process for
  the near-duplicate check, and the fact keeps that vector, so the workers only check the facts
  for conflicts), and as JSON Lines imports of `--batch` lines (`fact_import`, as a bulk load or
  a migration writes); analysed for full text, entities linked, audited, then embedded and
  indexed by that many real Celery worker processes (`--concurrency 1` each, through the
  filesystem broker), warmed up first with a batch per worker in another tenant (a worker loads
  its model on its first task, once); facts per second from the first write to the last
  vector, and when the workers' conflict check of the new facts (facts.conflicts) was through;
  and where the cores went meanwhile (`CpuWatch`): the workers' embedding streams, their other
  threads, the database server, this process (the writer), anything else, idle;
- a long import: `--long-import` facts in imports of `--batch` lines into a new database, first
  thing, with no worker running (so none analyses the tables): the seconds of each 2,000
  lines, which should be alike;
- bundles: `--bundle-facts` facts stored in bulk with a vector each (each a mix of two of the
  texts' own vectors, as `bench.ann` makes them), exported (`tenant_export`) and imported into
  an empty tenant (`tenant_import`, vectors kept): seconds each and the bundle's size.

The texts are LoCoMo's dialogue turns (`--data`, a LoCoMo-format JSON file), cycled (a text used
again gets a number after it); each run stores texts no run before it stored, and the embedder
is measured on the texts of the run after it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.harness import REPO, bench_database, progress, write_json

# How long the conflict checks may take after the last vector before the run says they did not
# get through (beat's sweep, not running here, would find the facts left unchecked).
CHECK_WAIT_S = 120
# How often CpuWatch reads /proc (about 25 small files a time).
SAMPLE_S = 0.1
CPU_PARTS = ("embedding", "workers_other", "database", "writer", "other", "idle")


def _ticks(path: str) -> float:
    """User and system CPU seconds in /proc/PID/stat or /proc/PID/task/TID/stat."""
    with open(path, encoding="ascii") as file:  # noqa: PTH123 - many small reads
        fields = file.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as file:  # noqa: PTH123
            return [int(child) for child in file.read().split()]
    except OSError:
        return []


class CpuWatch:
    """Where the cores went while a run stored and embedded (Linux, the database on this
    machine): CPU seconds of the workers' embedding streams (threads named
    facts.embedding.EMBED_THREAD), of their other threads, of the database server's processes,
    of this process (the writer; this watch's own thread left out), of everything else on the
    machine, and the cores' idle time, as shares of all the cores' time. /proc is read every
    SAMPLE_S; a process keeps its last reading after it ends (a backend ends with its
    connection), so at most SAMPLE_S of a short-lived one is missed."""

    def __init__(self, workers: list[int], postmaster: int | None) -> None:
        from facts.embedding import EMBED_THREAD

        self.embed_name = EMBED_THREAD
        self.workers, self.postmaster = workers, postmaster
        self.seen: dict[tuple[str, int, int], float] = {}
        self.first: dict[tuple[str, int, int], float] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="cpu-watch", daemon=True)
        self.own = 0.0

    @staticmethod
    def machine() -> tuple[float, float]:
        """All the cores' busy and idle seconds so far (/proc/stat)."""
        with open("/proc/stat", encoding="ascii") as file:  # noqa: PTH123
            ticks = [int(n) for n in file.readline().split()[1:9]]
        hz = os.sysconf("SC_CLK_TCK")
        idle = ticks[3] + ticks[4]  # idle, iowait
        return (sum(ticks) - idle) / hz, idle / hz

    def _read(self) -> None:
        for root in self.workers:
            for pid in [root, *_children(root)]:
                try:
                    for tid in os.listdir(f"/proc/{pid}/task"):
                        task = f"/proc/{pid}/task/{tid}"
                        with open(f"{task}/comm", encoding="utf-8") as file:  # noqa: PTH123
                            name = file.read().strip()
                        kind = "embedding" if name.startswith(self.embed_name) else "workers_other"
                        self.seen[(kind, pid, int(tid))] = _ticks(f"{task}/stat")
                except OSError:  # the process or thread ended meanwhile
                    continue
        if self.postmaster is not None:
            for pid in [self.postmaster, *_children(self.postmaster)]:
                try:
                    self.seen[("database", pid, 0)] = _ticks(f"/proc/{pid}/stat")
                except OSError:
                    continue
        self.seen[("writer", os.getpid(), 0)] = _ticks(f"/proc/{os.getpid()}/stat")

    def _watch(self) -> None:
        began = time.thread_time()
        while not self.done.wait(SAMPLE_S):
            self._read()
        self.own = time.thread_time() - began

    def start(self) -> None:
        self._read()
        self.first = dict(self.seen)
        self.machine_first = self.machine()
        self.thread.start()

    def stop(self) -> None:
        if self.done.is_set():
            return
        self.done.set()
        self.thread.join()
        self._read()
        self.machine_last = self.machine()

    def shares(self) -> dict[str, float]:
        """Each part's share of all the cores' time between start and stop."""
        parts = self.seconds()
        total = sum(parts.values())
        return {part: round(seconds / total, 3) for part, seconds in parts.items()}

    def seconds(self) -> dict[str, float]:
        """Each part's CPU seconds (idle: the cores' idle seconds) between start and stop."""
        parts = dict.fromkeys(CPU_PARTS, 0.0)
        for key, seconds in self.seen.items():
            parts[key[0]] += seconds - self.first.get(key, 0.0)
        parts["writer"] -= self.own
        busy = self.machine_last[0] - self.machine_first[0]
        parts["other"] = max(0.0, busy - sum(parts.values()))
        parts["idle"] = self.machine_last[1] - self.machine_first[1]
        return parts


def _postmaster() -> int | None:
    """The database server's main process, when it runs on this machine (else None)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    try:
        with open(f"/proc/{backend}/stat", encoding="ascii") as file:  # noqa: PTH123
            return int(file.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def _cpu(shares: dict[str, float] | None) -> str:
    if shares is None:
        return "cores: not measured (no /proc)"
    names = dict(zip(CPU_PARTS, CPU_PARTS, strict=True))
    names["workers_other"] = "the workers' other threads"
    return "cores: " + ", ".join(f"{names[part]} {shares[part]:.0%}" for part in CPU_PARTS)


def _texts(data: Path) -> list[str]:
    texts = []
    for sample in json.loads(data.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                texts += [f"{t['speaker']}: {t['text']}" for t in turns]
    return texts


def _text(texts: list[str], i: int) -> str:
    # Distinct texts however many are asked for (a repeat would be stored once).
    return texts[i % len(texts)] + ("" if i < len(texts) else f" (#{i // len(texts)})")


def embedder_rate(texts: list[str], count: int, streams: int = 1, first: int = 0) -> float:
    """Texts per second of the configured embedder alone, `count` texts (from the `first`th,
    those the run after it stores) in batches of EMBED_BATCH: in one stream with all the
    process's threads, or in `streams` side by side, each with its own copy of the model and
    an equal share of the threads (as a worker has them, `facts.embedding.EmbedStreams`),
    each stream embedding whole batches of its own."""
    from django.conf import settings

    from facts.embedding import EMBED_BATCH
    from indexing.embedders import get_embedder, resolve_threads

    threads = max(1, resolve_threads() // streams)
    copies = [
        get_embedder(
            settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR, threads=threads, copy=n
        )
        for n in range(streams)
    ]
    for embedder in copies:
        embedder.embed(texts[:EMBED_BATCH], purpose="passage")  # warm up: a whole batch
    batches = [[_text(texts, first + j) for j in range(i, min(count, i + EMBED_BATCH))]
               for i in range(0, count, EMBED_BATCH)]  # fmt: skip

    def stream(n: int) -> None:
        for batch in batches[n::streams]:
            copies[n].embed(batch, purpose="passage")

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=streams) as pool:
        list(pool.map(stream, range(streams)))
    return count / (time.perf_counter() - started)


def embedder_best(texts: list[str], count: int, first: int = 0) -> dict[str, float]:
    """The embedder alone in one stream and, with two threads or more, in two; the share of a
    run is taken of the faster (the embedder at its best on these cores)."""
    from indexing.embedders import resolve_threads

    rates = {"one_stream": round(embedder_rate(texts, count, first=first), 1)}
    if resolve_threads() >= 2:
        rates["two_streams"] = round(embedder_rate(texts, count, streams=2, first=first), 1)
    return {**rates, "best": max(rates.values())}


def _workers(count: int, log: Path) -> list[subprocess.Popen[bytes]]:
    from django.db import connection

    from memoryadmin.supervisor import embed_threads_share
    from tests.helpers import database_url

    # The cores are shared as `mnemosyne up` shares them among its worker's processes.
    env = {**os.environ, "DATABASE_URL": database_url(connection.settings_dict),
           "PYTHONPATH": str(REPO), **embed_threads_share(count)}  # fmt: skip
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return [
        subprocess.Popen(  # noqa: S603 - our own worker, fixed arguments
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "memoryadmin",
                "worker",
                "--concurrency",
                "1",
                "--loglevel",
                "WARNING",
                "--hostname",
                f"bench{n}-{os.getpid()}@bench",
            ],
            env=env,
            cwd=REPO,
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        for n in range(count)
    ]


def _wait_workers(count: int) -> None:
    from operations.models import ServiceHeartbeat

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if ServiceHeartbeat.objects.filter(name__startswith="worker:bench").count() >= count:
            return
        time.sleep(0.5)
    raise SystemExit("the workers did not start (see the log)")


def _rates(rates: dict[str, float]) -> str:
    two = f", {rates['two_streams']} in two streams" if "two_streams" in rates else ""
    return f"{rates['one_stream']} texts/s in one stream{two}"


def _checked(seconds: float | None) -> str:
    if seconds is None:
        return f"conflict checks not through {CHECK_WAIT_S} s after the last vector"
    return f"checked for conflicts by {seconds:.1f} s"


def _actor() -> Any:
    """The benchmark's job actor, as the audit records it."""
    from tenants.actors import Actor

    return Actor.job("bench.ingest")


def _tenant(slug: str, name: str) -> Any:
    """A new tenant, made by the benchmark."""
    from tenants.inputs import tenant_draft
    from tenants.services import tenant_create

    return tenant_create(actor=_actor(), draft=tenant_draft({"slug": slug, "name": name}))


def _import(tenant: Any, actor: Any, texts: list[str], numbers: range) -> None:
    """One JSON Lines import (`fact_import`) of the texts numbered `numbers` (`_text`)."""
    from facts.services import fact_import

    lines = [json.dumps({"content": _text(texts, i)}) for i in numbers]
    fact_import(tenant=tenant, lines=lines, actor=actor)


def _warm_up(texts: list[str], workers: int) -> None:
    """A batch per worker through the workers first, in a tenant of its own, checks included:
    a worker process loads its model on its first task (about 0.7 s for e5-small), once for
    its lifetime, and the embedder alone is measured warm too."""
    from facts.conflicts import tenants_with_unchecked_facts
    from facts.embedding import EMBED_BATCH
    from facts.models import Fact
    from facts.services import fact_import
    from facts.tasks import facts_embed_pending
    from tenants.scope import tenant_scope

    actor = _actor()
    tenant = _tenant(f"warm-{os.urandom(4).hex()}", "warm")
    lines = [json.dumps({"content": f"warm up {i}: " + _text(texts, i)})
             for i in range(EMBED_BATCH * workers)]  # fmt: skip
    fact_import(tenant=tenant, lines=lines, actor=actor)
    for _ in range(workers - 1):
        facts_embed_pending.delay(tenant.pk)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with tenant_scope(tenant):
            waiting = Fact.objects.for_tenant(tenant).filter(embedding_model="").exists()
        if not waiting and tenant.pk not in tenants_with_unchecked_facts():
            return
        time.sleep(0.2)
    raise SystemExit("the workers did not embed the warm-up facts (see the log)")


def end_to_end(
    texts: list[str], facts: int, workers: int, batch: int, log: Path, first: int = 0
) -> dict[str, Any]:
    """`batch` 0: one `fact_add` per fact; otherwise imports of `batch` lines each. The texts
    from the `first`th: each run of a benchmark stores texts no other run stored. (The HNSW
    index is shared by every tenant, and pgvector stores a vector equal to one it holds as a
    duplicate of it, at a fraction of an insert's cost: runs that repeated an earlier run's
    texts spent less than half as much on their inserts whenever their vectors came out bit
    for bit the same.)"""
    from facts.conflicts import tenants_with_unchecked_facts
    from facts.embedding import EMBED_BATCH
    from facts.inputs import fact_draft
    from facts.models import Fact
    from facts.services import fact_add
    from facts.tasks import facts_embed_pending
    from memoryadmin.celery import app
    from operations.models import ServiceHeartbeat
    from tenants.scope import tenant_scope

    actor = _actor()
    tenant = _tenant(f"ingest-{workers}-{batch}-{os.urandom(3).hex()}", f"ingest {workers} {batch}")
    ServiceHeartbeat.objects.filter(name__startswith="worker:bench").delete()
    # What an earlier run left queued (its conflict checks, a message its stopped worker gave
    # back) is that run's work, not this one's.
    app.control.purge()
    processes = _workers(workers, log)
    watch: CpuWatch | None = None
    try:
        _wait_workers(workers)
        _warm_up(texts, workers)
        if Path("/proc/stat").exists():  # Linux
            watch = CpuWatch([process.pid for process in processes], _postmaster())
            watch.start()
        started = time.perf_counter()
        for start in range(0, facts if batch else 0, batch or 1):
            _import(tenant, actor, texts, range(first + start, first + min(facts, start + batch)))
        for i in range(0 if batch else facts):
            fact_add(
                tenant=tenant, actor=actor, draft=fact_draft({"content": _text(texts, first + i)})
            )
            if i % 200 == 199:
                # Each add nudges the workers once committed; several workers share the
                # backlog (rows are claimed with SKIP LOCKED), so nudge each of them too.
                for _ in range(workers - 1):
                    facts_embed_pending.delay(tenant.pk)
        stored = time.perf_counter() - started
        for _ in range(workers):
            facts_embed_pending.delay(tenant.pk)
        while True:
            with tenant_scope(tenant):
                # Counted up to EMBED_BATCH + 1 rows, enough to tell whether the last batch is
                # under way: the poll costs the database little, not a count of every row left.
                waiting = Fact.objects.for_tenant(tenant).filter(embedding_model="")
                left = waiting[: EMBED_BATCH + 1].count()
            if not left:
                break
            # Every 0.2 s, then every 10 ms once the last batch is under way: the end is seen
            # within 10 ms of the last vector's commit, not up to 0.2 s after it.
            time.sleep(0.2 if left > EMBED_BATCH else 0.01)
        total = time.perf_counter() - started
        if watch is not None:
            watch.stop()
        # The worker then compares the new facts with their neighbours (conflicts, duplicates).
        deadline = time.monotonic() + CHECK_WAIT_S
        while (late := tenant.pk in tenants_with_unchecked_facts()) and time.monotonic() < deadline:
            time.sleep(0.2)
        checked = None if late else time.perf_counter() - started
    finally:
        if watch is not None:
            watch.stop()
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:  # still draining nudges: nothing left to keep
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=20)
    how = f"imports of {batch} lines" if batch else "one by one"
    cpu = None if watch is None else watch.shares()
    progress(f"{workers} worker(s), {how}: {facts} facts stored in {stored:.1f} s, "
             f"embedded by {total:.1f} s, {_checked(checked)}; {_cpu(cpu)}")  # fmt: skip
    return {"workers": workers, "batch": batch, "facts": facts, "store_s": round(stored, 2),
            "total_s": round(total, 2), "facts_per_s": round(facts / total, 1),
            "checked_s": None if checked is None else round(checked, 2), "cpu": cpu}  # fmt: skip


def long_import(texts: list[str], facts: int, batch: int) -> dict[str, Any]:
    """`facts` lines imported in imports of `batch` into a tenant of their own, nothing
    embedding them meanwhile; the seconds of each 2,000."""
    actor = _actor()
    tenant = _tenant("long", "long")
    part, seconds = 2000, []
    for first in range(0, facts, part):
        started = time.perf_counter()
        for start in range(first, min(facts, first + part), batch):
            # Texts numbered from a million: none of them stored by the runs after it.
            end = min(facts, first + part, start + batch)
            _import(tenant, actor, texts, range(10**6 + start, 10**6 + end))
        seconds.append(round(time.perf_counter() - started, 2))
        progress(f"long import: {min(facts, first + part)} of {facts} facts, the last "
                 f"{part} in {seconds[-1]} s")  # fmt: skip
    return {"facts": facts, "batch": batch, "seconds_per_2000": seconds,
            "total_s": round(sum(seconds), 1)}  # fmt: skip


def bundles(texts: list[str], count: int, folder: Path) -> dict[str, Any]:
    import numpy as np
    from django.utils import timezone

    from bench.ann import mixes
    from facts.models import Fact, FactVector
    from facts.services import content_hash
    from facts.transfer import tenant_export, tenant_import
    from indexing.vectors import configured_embedder
    from tenants.scope import tenant_scope

    actor = _actor()
    source = _tenant("bundle-source", "bundle source")
    target = _tenant("bundle-target", "bundle target")
    now = timezone.now()
    model = configured_embedder()
    rng = np.random.default_rng(7)
    # Vectors like real ones: each a mix of two of the data's texts' own vectors (bench.ann's
    # mixes). Their values matter to the import's time: PostgreSQL adds each vector to the
    # HNSW index, and random vectors cost it about two thirds more per insert than these.
    distinct = list(dict.fromkeys(texts))
    progress(f"embedding {len(distinct)} texts for the bundle's vectors")
    sources = np.concatenate(
        [np.asarray(model.embed(distinct[i : i + 256], purpose="passage"), dtype=np.float32)
         for i in range(0, len(distinct), 256)]
    )  # fmt: skip
    with tenant_scope(source):
        for start in range(0, count, 5000):
            rows = [_text(texts, i) for i in range(start, min(count, start + 5000))]
            made = Fact.objects.bulk_create(
                Fact(tenant=source, content=t, content_hash=content_hash(t), created_by="bench",
                     created_at=now, embedding_model=model.name)
                for t in rows
            )  # fmt: skip
            vectors = mixes(rng, sources, len(made))
            FactVector.objects.bulk_create(
                FactVector(tenant=source, fact=fact, model=model.name, dimension=model.dimension,
                           embedding=vector)
                for fact, vector in zip(made, vectors, strict=True)
            )  # fmt: skip
    progress(f"{count} facts with their vectors stored in bulk; exporting")
    started = time.perf_counter()
    summary = tenant_export(tenant=source, out=folder / "bundle", actor=actor)
    exported = time.perf_counter() - started
    progress(f"exported in {exported:.1f} s ({summary.bytes / 1e6:.1f} MB); importing")
    started = time.perf_counter()
    result = tenant_import(tenant=target, path=folder / "bundle", actor=actor)
    imported = time.perf_counter() - started
    return {"facts": count, "export_s": round(exported, 1), "import_s": round(imported, 1),
            "bundle_mb": round(summary.bytes / 1e6, 1), "imported": result.added,
            "vectors_kept": result.vectors_kept}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo-format JSON file")
    parser.add_argument("--facts", type=int, default=2000, help="facts per end-to-end run")
    parser.add_argument("--workers", default="1,2", help="worker counts to measure ('': none)")
    parser.add_argument("--batch", type=int, default=250, help="lines per import (0: no imports)")
    parser.add_argument(
        "--long-import", type=int, default=20_000, help="facts of the long import (0: skip)"
    )
    parser.add_argument("--bundle-facts", type=int, default=100_000, help="0: skip bundles")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    texts = _texts(args.data)
    folder = Path(tempfile.mkdtemp(prefix="mnemosyne-ingest-"))
    figures: dict[str, Any] = {}
    try:
        with bench_database():
            if args.long_import and args.batch:
                figures["long_import"] = long_import(texts, args.long_import, args.batch)
            figures["end_to_end"] = []
            first = 0  # the texts each run stores: none stored before
            for n in [int(n) for n in args.workers.split(",") if n]:
                for batch in sorted({0, max(0, args.batch)}):
                    rates = embedder_best(texts, args.facts, first)
                    progress(f"embedder alone: {_rates(rates)}")
                    run = end_to_end(texts, args.facts, n, batch, folder / "workers.log", first)
                    first += args.facts
                    figures["end_to_end"].append(
                        {**run, "embedder_texts_per_s": rates["best"], "embedder": rates}
                    )
            best = [run["embedder_texts_per_s"] for run in figures["end_to_end"]]
            if not best:
                best = [embedder_best(texts, args.facts)["best"]]
            figures["embedder_texts_per_s"] = round(sum(best) / len(best), 1)
            if args.bundle_facts:
                figures["bundle"] = bundles(texts, args.bundle_facts, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"embedder alone, at its best: {figures['embedder_texts_per_s']} texts/s (mean of the "
          "measurements)")  # fmt: skip
    for run in figures["end_to_end"]:
        share = run["facts_per_s"] / run["embedder_texts_per_s"]
        how = f"imports of {run['batch']} lines" if run["batch"] else "one by one"
        print(f"{run['workers']} worker(s), {how}: {run['facts_per_s']} facts/s end to end "
              f"({share:.0%} of the embedder's best, {run['embedder_texts_per_s']} texts/s, "
              f"measured just before: {_rates(run['embedder'])}); stored in {run['store_s']} s, "
              f"embedded by {run['total_s']} s, {_checked(run['checked_s'])}")  # fmt: skip
        print(f"    {_cpu(run['cpu'])}")
    if "long_import" in figures:
        long = figures["long_import"]
        print(f"long import, no worker: {long['facts']:,} facts in imports of {long['batch']} "
              f"lines in {long['total_s']} s; each 2,000: "
              f"{', '.join(map(str, long['seconds_per_2000']))} s")  # fmt: skip
    if "bundle" in figures:
        b = figures["bundle"]
        print(f"bundle of {b['facts']:,} facts: export {b['export_s']} s, import "
              f"{b['import_s']} s, {b['bundle_mb']} MB")  # fmt: skip
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
