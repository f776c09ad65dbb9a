"""Giving facts their vectors: claimed in batches, embedded by every target model, stored with
each model's name and dimension."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import connection, connections
from django.db.models import Q

from facts.models import Fact, Kind, Status
from retrieval.sql import vector_literal
from retrieval.vectors import configured_embedder, embedding_targets, not_model
from tenants import cross_tenant
from tenants.models import Tenant
from tenants.scope import tenant_scope

# Facts claimed per batch (the workers, the benchmarks). The embedder sorts a batch's texts by
# length before it splits them into its own runs of 32, so a larger batch pads less: LoCoMo's
# turns embedded about 45% faster in batches of 256 than of 64 (512: no faster, and each claim
# holds its rows longer).
EMBED_BATCH = 256


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


def facts_embed_batch(
    *,
    tenant: Tenant,
    limit: int = EMBED_BATCH,
    embed_lock: AbstractContextManager[Any] | None = None,
) -> int:
    """Embed up to `limit` of the tenant's active facts that have no vector of the configured
    model yet (new facts, and during a model switch every older one). Returns how many.
    `embed_lock`, when given, is held while the embedder runs (and only then).

    Rows are claimed with SKIP LOCKED, so several workers share the backlog without doing any
    fact twice; a crash leaves the rows unembedded for the next run.
    """
    targets = embedding_targets()
    configured = targets[0][0].name
    with tenant_scope(tenant):
        facts = list(
            Fact.objects.for_tenant(tenant)
            .filter(not_model(configured), status=Status.ACTIVE)
            .only(
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
        previous = _previous_turns(tenant, facts)
        texts = [
            embedding_text(f, previous.get((f.session_id, (f.position or 0) - 1))) for f in facts
        ]
        fact_ids: list[int] = []
        models: list[str] = []
        dimensions: list[int] = []
        literals: list[str] = []
        for space, embedder in targets:
            # A fact that already has the serving model's vector (made before the switch) needs
            # only the configured model's.
            todo = [i for i, f in enumerate(facts) if f.embedding_model != space.name]
            with embed_lock or nullcontext():
                vectors = embedder.embed([texts[i] for i in todo], purpose="passage")
            fact_ids += [facts[i].pk for i in todo]
            models += [space.name] * len(todo)
            dimensions += [space.dimension] * len(todo)
            literals += [vector_literal(vector) for vector in vectors]
        # Vectors can be made again from their facts: this transaction does not wait for its
        # commit to reach the disk. A database crash may lose the last batches whole (their
        # facts still marked unembedded, so embedded again), never half of one.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = off")
            cursor.execute(
                "INSERT INTO facts_factvector "
                "(tenant_id, fact_id, model, dimension, embedding, created_at) "
                "SELECT %s, v.fact_id, v.model, v.dimension, v.embedding::vector, now() "
                "FROM unnest(%s::bigint[], %s::text[], %s::int[], %s::text[]) "
                "AS v(fact_id, model, dimension, embedding) "
                "ON CONFLICT (tenant_id, fact_id, model) "
                "DO UPDATE SET dimension = EXCLUDED.dimension, embedding = EXCLUDED.embedding",
                [tenant.pk, fact_ids, models, dimensions, literals],
            )
        Fact.objects.for_tenant(tenant).filter(pk__in=[f.pk for f in facts]).update(
            embedding_model=configured
        )
        return len(facts)


@dataclass(frozen=True)
class EmbedRun:
    done: int  # facts embedded
    cut: bool  # stopped at its time limit: facts may be left


def facts_embed_all(*, tenant: Tenant, seconds: float | None = None) -> EmbedRun:
    """Embed the tenant's waiting facts until none is left, or until `seconds` have passed (no
    batch is begun after that); returns how many, and whether time ran out. Two threads take
    batches side by side, and only one embeds at a time (the embedder has the cores to itself):
    while one thread's batch is written (PostgreSQL adding the vectors to the HNSW index, on
    one core), the other's is being embedded.

    A thread that finds nothing to claim while the other is inside a batch waits for that
    batch to end and looks again (the rows it could not claim were the other's, and more facts
    may have come meanwhile); it stops only when it finds nothing while the other is not
    inside a batch. Stopping at the first empty claim left one thread doing the whole of a bulk
    load alone whenever the load's first part was smaller than two batches.

    An error in this thread (Celery's soft time limit among them) stops the other thread after
    its batch, so the task ends before its hard limit kills the process."""
    deadline = None if seconds is None else time.monotonic() + seconds
    stop = threading.Event()
    lock = threading.Lock()
    turn = threading.Condition()
    inside = [0]  # threads inside a batch
    ended = [0]  # batches ended, by both threads
    cut = threading.Event()

    def drain() -> int:
        done = 0
        while not stop.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                cut.set()
                break
            with turn:
                inside[0] += 1
            try:
                count = facts_embed_batch(tenant=tenant, embed_lock=lock)
            finally:
                with turn:
                    inside[0] -= 1
                    ended[0] += 1
                    turn.notify_all()
            done += count
            if count:
                continue
            with turn:
                if not inside[0]:
                    return done
                seen = ended[0]
                while ended[0] == seen:
                    turn.wait()
        return done

    def other_thread() -> int:
        try:
            return drain()
        finally:
            connections.close_all()  # this thread's own connection

    with ThreadPoolExecutor(max_workers=1) as pool:
        other = pool.submit(other_thread)
        try:
            mine = drain()
        except BaseException:
            stop.set()
            raise
        return EmbedRun(done=mine + other.result(), cut=cut.is_set())


def embedding_backlog(*, tenant: Tenant) -> bool:
    """Whether at least a batch of the tenant's new facts waits for its vectors (a bulk load in
    progress). Facts a model switch re-embeds do not count, nor fewer new ones than a batch, so
    a steady trickle of writes never holds the conflict checks back for long."""
    with tenant_scope(tenant):
        waiting = Fact.objects.for_tenant(tenant).filter(embedding_model="", status=Status.ACTIVE)
        return waiting.values("pk")[:EMBED_BATCH].count() >= EMBED_BATCH


def tenants_with_pending_embeddings() -> list[int]:
    return cross_tenant.tenants_unembedded(model=configured_embedder().name)
