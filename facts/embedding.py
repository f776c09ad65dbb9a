"""Giving facts their vectors: claimed in batches, embedded by every target model, stored with
each model's name and dimension."""

from __future__ import annotations

import ctypes
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import psycopg
from django.db import connection, connections, transaction
from django.db.models import Q, QuerySet

from facts.models import Fact, Kind, Status
from indexing.embedders.base import DEFAULT_BATCH_SIZE, Embedder, resolve_streams, text_lengths
from indexing.models import VectorModel, VectorState
from indexing.vectors import (
    Space,
    configured_embedder,
    embedder_for,
    embedding_targets,
    not_model,
)
from tenants import cross_tenant
from tenants.models import Tenant
from tenants.scope import tenant_scope

# Facts claimed per batch (the workers, the benchmarks). The embedder sorts a batch's texts by
# length before it splits them into its own runs (RUN), so a larger batch pads less: LoCoMo's
# turns embedded about 45% faster in batches of 256 than of 64 (512: no faster, and each claim
# holds its rows longer).
EMBED_BATCH = 256
# Texts per run: a batch's texts, sorted by length, are cut into runs of this many (the
# embedder's own batch), and whichever embedding stream is free takes the next run.
RUN = DEFAULT_BATCH_SIZE
# How soon a thread that found nothing to claim, while another is inside a batch, looks again:
# a bulk load's next part may have come (an import commits 250 facts in about 0.2 s).
RECLAIM_S = 0.1


# The system's name of an embedding stream's thread (`top -H`, /proc/PID/task/TID/comm), with its
# number after it: bench.ingest tells the embedding's share of the cores by it.
EMBED_THREAD = "embed-"


def name_thread(name: str) -> None:
    """Give the calling thread `name` (15 bytes at most) where the system can show it (Linux:
    prctl PR_SET_NAME); elsewhere, nothing."""
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):  # no C library to ask, or one without prctl
        return


def _line(fact: Fact) -> str:
    if not fact.speaker or fact.content.startswith(f"{fact.speaker}:"):
        return fact.content
    return f"{fact.speaker}: {fact.content}"


def embedding_text(fact: Fact, previous: Fact | None = None) -> str:
    """What is embedded for a fact. A turn carries its speaker and the turn before it: a reply
    ("Yes, last Friday!") means little alone (measured: +7 points recall@10 on dialogue)."""
    if fact.kind != Kind.TURN:
        return fact.content
    return f"{_line(previous)}\n{_line(fact)}" if previous is not None else _line(fact)


def _previous_turns(tenant: Tenant, facts: list[Fact]) -> dict[tuple[str, int | None], Fact]:
    wanted = Q()
    for fact in facts:
        if fact.kind == Kind.TURN and fact.position:
            wanted |= Q(session_id=fact.session_id, position=fact.position - 1)
    if not wanted:
        return {}
    rows = (
        Fact.objects.for_tenant(tenant)
        .filter(wanted, kind=Kind.TURN)
        .only("id", "tenant_id", "session_id", "position", "speaker", "content")
    )
    return {(row.session_id, row.position): row for row in rows}


class EmbedStreams:
    """A process's embedding streams: `count` threads, each embedding with its own copy of the
    models (`copy` n for the nth, on its share of the threads, `resolve_streams`).

    A batch's texts are sorted by length and cut into runs of RUN; the streams take the runs in
    the order they came. So every stream works on the oldest batch until its last run, and a
    batch waits for at most a run, not for another stream's whole batch: with each stream
    embedding whole batches of its own, the last two batches of a load of 2,000 facts ended up
    to 1.4 s apart, one core idle meanwhile. Runs cut from a sorted batch of 256 pad as little
    as the batch embedded whole (batches of 128 embedded 10% slower, of 64 27%), when sorted by
    tokens (`text_lengths`).

    `claiming` holds a claim back until the streams are about to run out of runs: rows stay
    unclaimed, for another worker to take, until this one can start on them."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._copies = itertools.count()
        self._local = threading.local()
        self._pool = ThreadPoolExecutor(
            max_workers=count, thread_name_prefix="embed", initializer=self._bind
        )
        self._waiting = 0  # runs handed over that no stream has begun (and claims under way)
        self._claim = threading.local()  # whether this thread's claim counts among them
        self._changed = threading.Condition()

    def _bind(self) -> None:
        self._local.copy = next(self._copies)
        name_thread(f"{EMBED_THREAD}{self._local.copy}")

    def _begun(self, runs: int = 1) -> None:
        with self._changed:
            self._waiting -= runs
            self._changed.notify_all()

    def _run(self, space: Space, texts: list[str]) -> np.ndarray:
        self._begun()
        return embedder_for(space, self._local.copy).embed(texts, purpose="passage")

    @contextmanager
    def claiming(self, stop: threading.Event) -> Iterator[None]:
        """Wait until fewer runs wait than there are streams (one of them will have nothing
        after its current run; a claim takes some milliseconds, a run of 16 texts about 0.1 s),
        or until `stop` is set; then claim. Until the claimed batch's runs are handed over (or
        the claim found nothing), the claim counts as a stream's worth of waiting runs: two
        threads starting together do not both claim a batch for the same idle streams."""
        with self._changed:
            while self._waiting >= self.count and not stop.is_set():
                self._changed.wait(timeout=0.5)
            self._waiting += self.count
        self._claim.held = True
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        if getattr(self._claim, "held", False):
            self._claim.held = False
            self._begun(self.count)

    def embed(
        self,
        space: Space,
        embedder: Embedder,
        texts: list[str],
        done: Callable[[list[int], np.ndarray], None] | None = None,
    ) -> np.ndarray:
        """The texts' vectors (in their order) by the model of `space`, run by run; `embedder`
        (a copy of that model) counts their tokens, to sort them by. `done(positions,
        vectors)` is called in this thread as each run is done, with the run's places in
        `texts` and their vectors: the caller can store them while the streams embed the rest
        (the last batch of a load, stored whole after its last run, kept the cores waiting
        on its HNSW inserts)."""
        lengths = text_lengths(embedder, texts)
        # Longest first: the runs a load ends with are its shortest, so the stream that
        # finishes last is not long on its own (ending on the longest left a core idle).
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        runs = [order[start : start + RUN] for start in range(0, len(order), RUN)]
        with self._changed:
            self._waiting += len(runs)
        self._release()
        futures: dict[Future[np.ndarray], list[int]] = {
            self._pool.submit(self._run, space, [texts[i] for i in run]): run for run in runs
        }
        vectors = np.zeros((len(texts), space.dimension), dtype=np.float32)
        try:
            for future in as_completed(futures):
                run, part = futures[future], future.result()
                vectors[run] = part  # a model's vectors have its space's dimension
                if done is not None:
                    done(run, part)
        finally:
            # An error (a time limit): the runs not begun are not embedded.
            self._begun(sum(future.cancel() for future in futures))
        return vectors

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class _Floats:
    """Float32 values sent as one binary real[] parameter (`_FloatsDumper`)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values


class _FloatsDumper(psycopg.adapt.Dumper):
    format = psycopg.pq.Format.BINARY
    oid = 1021  # real[] (a built-in type: the same number in every database)

    def dump(self, obj: _Floats) -> bytes:
        flat = np.ascontiguousarray(obj.values, dtype=np.float32).ravel()
        items = np.empty(flat.size, dtype=[("length", ">i4"), ("value", ">f4")])
        items["length"] = 4
        items["value"] = flat
        # One dimension, no NULLs, elements of type real (700), how many, counted from 1.
        return np.array([1, 0, 700, flat.size, 1], dtype=">i4").tobytes() + items.tobytes()


def vectors_write(
    *, tenant: Tenant, fact_ids: list[int], models: list[str], vectors: list[np.ndarray]
) -> None:
    """Store each fact's vector of its model (replacing one it had), in one statement. The
    vectors travel as one binary real[] of their floats, bit for bit, each cut out and cast in
    the database: written as text, a batch of 256 took 22 ms to format and 29 ms for
    PostgreSQL to parse (on both, 9 ms). Call inside the tenant's scope."""
    dimensions = [len(vector) for vector in vectors]
    starts = np.cumsum([1, *dimensions[:-1]]).tolist()
    floats = _Floats(np.concatenate(vectors) if vectors else np.zeros(0, dtype=np.float32))
    # The raw connection's cursor binds on the server (Django's binds in the client, as text).
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.adapters.register_dumper(_Floats, _FloatsDumper)
        cursor.execute(
            "INSERT INTO facts_factvector "
            "(tenant_id, fact_id, model, dimension, embedding, created_at) "
            "SELECT %s, v.fact_id, v.model, v.dimension, "
            "(%s::real[])[v.start : v.start + v.dimension - 1]::vector, now() "
            "FROM unnest(%s::bigint[], %s::text[], %s::int[], %s::int[]) "
            "AS v(fact_id, model, dimension, start) "
            "ON CONFLICT (tenant_id, fact_id, model) "
            "DO UPDATE SET dimension = EXCLUDED.dimension, embedding = EXCLUDED.embedding",
            [tenant.pk, floats, fact_ids, models, dimensions, starts],
        )


def _unclaimed_left(waiting: QuerySet[Fact]) -> bool:
    """Whether at least a run's worth (RUN) of the waiting rows (this batch's left out: SKIP
    LOCKED does not skip what the transaction holds itself) is claimed by nobody: they are
    locked in a savepoint, and let go again as the savepoint is rolled back. Facts stored one by
    one, a few arriving during each claim, do not call in another worker."""
    point = transaction.savepoint()
    try:
        rows = waiting.order_by("embedding_model", "id").select_for_update(skip_locked=True)
        return bool(rows.values_list("pk", flat=True)[RUN - 1 : RUN])
    finally:
        transaction.savepoint_rollback(point)


def facts_embed_batch(
    *,
    tenant: Tenant,
    limit: int = EMBED_BATCH,
    streams: EmbedStreams | None = None,
    claimed: Callable[[Callable[[], bool]], None] | None = None,
) -> int:
    """Embed up to `limit` of the tenant's active facts that have no vector of the configured
    model yet (new facts, and during a model switch every older one). Returns how many.
    `streams`: the process's embedding streams (`facts_embed_all`); without, this thread
    embeds them with the first copy of the model. `claimed`, once the batch is claimed, gets a
    function that tells whether a run's worth of rows nobody has claimed is left.

    Rows are claimed with SKIP LOCKED, so several workers share the backlog without doing any
    fact twice; a crash leaves the rows unembedded for the next run.
    """
    targets = embedding_targets()
    configured = targets[0][0].name
    with tenant_scope(tenant):
        waiting = Fact.objects.for_tenant(tenant).filter(
            not_model(configured), status=Status.ACTIVE
        )
        facts = list(
            waiting.only(
                "id", "tenant_id", "kind", "speaker", "content", "session_id", "position",
                "embedding_model",
            )
            # Facts never embedded ('' sorts first) before older ones a model switch re-embeds:
            # a fact stored during a long switch is not left without any vector.
            .order_by("embedding_model", "id")
            .select_for_update(skip_locked=True)[:limit]
        )  # fmt: skip
        if not facts:
            return 0
        if claimed is not None:
            claimed(lambda: _unclaimed_left(waiting.exclude(pk__in=[f.pk for f in facts])))
        previous = _previous_turns(tenant, facts)
        texts = [
            embedding_text(f, previous.get((f.session_id, (f.position or 0) - 1))) for f in facts
        ]
        # Vectors can be made again from their facts: this transaction does not wait for its
        # commit to reach the disk. A database crash may lose the last batches whole (their
        # facts still marked unembedded, so embedded again), never half of one.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = off")
        for space, embedder in targets:
            # A fact that already has the serving model's vector (made before the switch) needs
            # only the configured model's.
            todo = [i for i, f in enumerate(facts) if f.embedding_model != space.name]
            if not todo:
                continue

            def write(run: list[int], vectors: np.ndarray, space: Space = space,
                      todo: list[int] = todo) -> None:  # fmt: skip
                vectors_write(tenant=tenant, fact_ids=[facts[todo[i]].pk for i in run],
                              models=[space.name] * len(run), vectors=list(vectors))  # fmt: skip

            wanted = [texts[i] for i in todo]
            if streams is None:
                write(list(range(len(todo))), embedder.embed(wanted, purpose="passage"))
            else:
                # Each run's vectors are stored (and indexed) while the streams embed the rest.
                streams.embed(space, embedder, wanted, done=write)
        Fact.objects.for_tenant(tenant).filter(pk__in=[f.pk for f in facts]).update(
            embedding_model=configured
        )
        return len(facts)


@dataclass(frozen=True)
class EmbedRun:
    done: int  # facts embedded
    cut: bool  # stopped at its time limit: facts may be left


def facts_embed_all(
    *, tenant: Tenant, seconds: float | None = None, busy: Callable[[], None] | None = None
) -> EmbedRun:
    """Embed the tenant's waiting facts until none is left, or until `seconds` have passed (no
    batch is begun after that); returns how many, and whether time ran out. `busy` is called
    once, the first time a claim leaves a run's worth of rows that nobody has claimed: more is
    waiting than this process is about to embed (a bulk load), so another worker could help.

    Two threads take batches side by side and hand their texts to the process's embedding
    streams (`EmbedStreams`, `resolve_streams`: the worker runs two): while one thread's batch
    is written (PostgreSQL adds its vectors to the HNSW index), the streams embed the other's,
    claimed as they were about to finish the first's runs (`EmbedStreams.claiming`), not
    earlier: a batch claimed early waited in this process while another worker found nothing.

    A thread that finds nothing to claim while another is inside a batch looks again a moment
    later (`RECLAIM_S`, or at once when a batch ends): the rows it could not claim were
    another's, and more facts may come meanwhile. It stops only when it finds nothing while no
    other is inside a batch. Stopping at the first empty claim left one thread doing the whole
    of a bulk load alone whenever the load's first part was smaller than two batches; waiting
    for the other's batch to end left a core idle for a batch's time.

    An error in this thread (Celery's soft time limit among them) stops the other after its
    batch, so the task ends before its hard limit kills the process."""
    deadline = None if seconds is None else time.monotonic() + seconds
    streams = EmbedStreams(resolve_streams())
    stop = threading.Event()
    turn = threading.Condition()
    inside = [0]  # threads inside a batch (claiming one, or holding what they claimed)
    cut = threading.Event()
    told = threading.Event()

    def drain() -> int:
        done = 0
        while not stop.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                cut.set()
                break
            with turn:
                inside[0] += 1
            try:
                with streams.claiming(stop):
                    count = facts_embed_batch(tenant=tenant, streams=streams, claimed=claimed)
            finally:
                with turn:
                    inside[0] -= 1
                    turn.notify_all()
            done += count
            if count:
                continue
            with turn:
                if not inside[0]:
                    return done
                turn.wait(timeout=RECLAIM_S)  # a batch's end, or new facts meanwhile
        return done

    def claimed(left: Callable[[], bool]) -> None:
        if busy is not None and not told.is_set() and left():
            told.set()
            busy()

    def other_thread() -> int:
        try:
            done = drain()
            counts_publish()  # before the caller analyses what this load changed
            return done
        finally:
            connections.close_all()  # this thread's own connection

    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            other = pool.submit(other_thread)
            try:
                mine = drain()
            except BaseException:
                stop.set()
                raise
            return EmbedRun(done=mine + other.result(), cut=cut.is_set())
    finally:
        streams.close()


def counts_publish() -> None:
    """Have this thread's database connection publish its counts of changed rows now (outside a
    transaction; inside one, nothing is committed yet). A connection publishes them when it
    next waits for a statement, but at most once a second; otherwise ten seconds after it went
    idle, or as it closes. Counts that came after an analysis count as changes since it: the
    tables a bulk load changed were analysed again at the next task (`tables_analyze_stale`)."""
    if connection.in_atomic_block:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")


# Rows changed in a fact table since its last analysis, and the share of its rows, that have
# the embedding task and the conflict check analyse it at once (`tables_analyze_stale`): 50
# rows, as autovacuum's own threshold, in a new deployment; on a table of a million rows,
# 50,000 (autovacuum waits for 100,000). A table never analysed is planned as if it were
# nearly empty: a new deployment's facts stored one by one, each looked up by its id through
# an index on the tenant alone (row-level security adds the tenant), took 10 ms for the
# near-duplicate check at 400 facts, 0.5 ms once the table was analysed (a one-off script).
ANALYZE_MIN_CHANGES = 50
ANALYZE_MIN_FRACTION = 0.05
# The share of its rows that have an import analyse a fact table (`tables_analyze_own_changes`):
# the table at least doubled since its last analysis. Enough for what an import needs, plans
# made for a table of its size (ANALYZE_MIN_CHANGES analyse a table never analysed); more often
# would put the analyses in every bulk load's way (the embedding task has them analysed at
# ANALYZE_MIN_FRACTION once the load is embedded).
IMPORT_ANALYZE_FRACTION = 1.0


def tables_analyze_stale(*, min_fraction: float | None = None) -> list[str]:
    """Analyse the fact tables (facts, vectors, entity links) that changed by
    ANALYZE_MIN_CHANGES rows and ANALYZE_MIN_FRACTION of their size since their last analysis;
    the names of those it analysed. After a bulk load, before autovacuum came round,
    PostgreSQL planned a new tenant's conflict checks as if it had no rows: 60 s instead of
    0.3 s for 200 facts (facts migration 0015). `min_fraction`: another share than
    ANALYZE_MIN_FRACTION. This connection's own counts of changed rows are published first
    (`counts_publish`); another connection's must have been (`facts_embed_all`'s other thread
    publishes its own before it ends). A call while another process analyses waits for it, then
    analyses what is still stale (facts migration 0016): a conflict check sent at once was
    planned before the other's ANALYZE had committed."""
    fraction = ANALYZE_MIN_FRACTION if min_fraction is None else min_fraction
    counts_publish()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM mnemosyne_analyze_stale(%s, %s)", [ANALYZE_MIN_CHANGES, fraction]
        )
        return [row[0] for row in cursor.fetchall()]


def tables_analyze_own_changes() -> list[str]:
    """`tables_analyze_stale` with IMPORT_ANALYZE_FRACTION, this process's own changes counted:
    for a bulk load, right after it committed (inside a transaction, nothing: what it changed
    is not committed yet)."""
    if connection.in_atomic_block:
        return []
    return tables_analyze_stale(min_fraction=IMPORT_ANALYZE_FRACTION)


def embedding_backlog(*, tenant: Tenant) -> bool:
    """Whether at least a batch of the tenant's new facts waits for its vectors (a bulk load in
    progress). Facts a model switch re-embeds do not count, nor fewer new ones than a batch, so
    a steady trickle of writes never holds the conflict checks back for long."""
    with tenant_scope(tenant):
        waiting = Fact.objects.for_tenant(tenant).filter(embedding_model="", status=Status.ACTIVE)
        return waiting.values("pk")[:EMBED_BATCH].count() >= EMBED_BATCH


def tenants_with_pending_embeddings() -> list[int]:
    return cross_tenant.tenants_unembedded(model=configured_embedder().name)


@dataclass(frozen=True)
class SwitchProgress:
    serving: str | None
    filling: str | None
    active_facts: int
    embedded: int  # active facts with a vector of the configured (filling or serving) model


def vector_switch_progress() -> SwitchProgress:
    """How far the configured model is: for `mnemosyne embedder` and the dashboard."""
    rows = {m.state: m.name for m in VectorModel.objects.exclude(state=VectorState.RETIRED)}
    target = rows.get(VectorState.FILLING) or rows.get(VectorState.SERVING)
    total = done = 0
    for tenant_id in Tenant.objects.order_by("pk").values_list("pk", flat=True):
        with tenant_scope(tenant_id):
            active = Fact.objects.for_tenant(tenant_id).filter(status=Status.ACTIVE)
            total += active.count()
            done += active.filter(embedding_model=target).count() if target else 0
    return SwitchProgress(rows.get(VectorState.SERVING), rows.get(VectorState.FILLING), total, done)
