"""The worker's embedding: batches taken by two threads, embedded run by run by the process's
streams, every fact embedded once; vectors stored exactly as the embedder made them."""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
import pytest
from django.db import connection, connections, transaction

from facts import embedding
from facts.embedding import facts_embed_all
from facts.models import Fact, FactVector
from facts.services import fact_import
from indexing.embedders.base import STREAMS_ENV, THREADS_ENV
from indexing.sql import vector_literal
from indexing.vectors import configured_embedder
from tenants.scope import tenant_scope
from tests.helpers import database_url, tables_last_analysed


@pytest.mark.django_db
def test_a_vector_reaches_the_database_bit_for_bit() -> None:
    rows = np.random.default_rng(3).standard_normal((50, 384)).astype(np.float32)
    rows[0, :3] = [1e-38, -3.4028235e38, 0.1]  # tiny, huge, and a decimal float32 cannot hold
    with connection.cursor() as cursor:
        for row in rows:
            cursor.execute("SELECT %s::vector::real[]", [vector_literal(row)])
            back = np.array(cursor.fetchone()[0], dtype=np.float32)
            assert np.array_equal(back, row)


@pytest.mark.django_db
def test_the_workers_vectors_reach_the_database_bit_for_bit(tenant, system_actor) -> None:
    """As the embedding task writes them (one binary parameter of their floats, each vector cut
    out in the database), of two models and sizes at once (a model switch), replacing one."""
    lines = [json.dumps({"content": f"Rack {i} holds the {i}th build agent."}) for i in range(5)]
    ids = [
        line.fact_id for line in fact_import(tenant=tenant, lines=lines, actor=system_actor).lines
    ]
    rng = np.random.default_rng(5)
    rows = [rng.standard_normal(384).astype(np.float32) for _ in range(5)]
    rows[0][:3] = [1e-38, -3.4028235e38, 0.1]  # tiny, huge, and a decimal float32 cannot hold
    small = [rng.standard_normal(8).astype(np.float32) for _ in range(2)]
    with tenant_scope(tenant):
        zeros = [np.zeros(384, dtype=np.float32)] * 2
        embedding.vectors_write(tenant=tenant, fact_ids=ids[:2], models=["m"] * 2, vectors=zeros)
        models = ["m"] * 5 + ["small"] * 2
        embedding.vectors_write(
            tenant=tenant, fact_ids=[*ids, *ids[:2]], models=models, vectors=[*rows, *small]
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT fact_id, model, dimension, embedding::real[] FROM facts_factvector "
                "WHERE tenant_id = %s",
                [tenant.pk],
            )
            stored = {(f, m): (d, np.array(e, dtype=np.float32)) for f, m, d, e in cursor}
    assert len(stored) == 7, "the first two replaced, not added"
    for fact_id, row in zip([*ids, *ids[:2]], [*rows, *small], strict=True):
        dimension, back = stored[(fact_id, "m" if len(row) == 384 else "small")]
        assert dimension == len(row) and np.array_equal(back, row)


def _wrap_embedder(monkeypatch, around: Callable[[Any], AbstractContextManager[None]]) -> None:
    """Every call of the configured embedder (any copy of it) runs inside `around(copy)`."""
    embedder = configured_embedder()
    real = type(embedder).embed

    def wrapped(self, texts, **kwargs):
        with around(self):
            return real(self, texts, **kwargs)

    monkeypatch.setattr(type(embedder), "embed", wrapped)


@dataclass
class _Watched:
    most: int = 0  # embeddings at once, at most
    copies: set[int] = field(default_factory=set)  # the embedder objects that embedded
    claims: list[int] = field(default_factory=list)  # the thread of each batch, in order


def _batches_watched(monkeypatch, seen: _Watched, limit: int = 3) -> None:
    """Batches of `limit` facts; the thread that claimed each batch is recorded."""
    real = embedding.facts_embed_batch

    def batch(**kwargs: Any) -> int:
        done = real(**{**kwargs, "limit": limit})
        if done:
            seen.claims.append(threading.get_ident())
        return done

    monkeypatch.setattr(embedding, "facts_embed_batch", batch)


def _embeddings_watched(monkeypatch, seen: _Watched, seconds: float = 0.2) -> None:
    """Each embedding takes `seconds` longer; how many run at once, and with which copies of
    the model, is recorded."""
    busy, guard = [0], threading.Lock()

    @contextmanager
    def watched(copy: Any) -> Iterator[None]:
        with guard:
            busy[0] += 1
            seen.most = max(seen.most, busy[0])
            seen.copies.add(id(copy))
        try:
            time.sleep(seconds)
            yield
        finally:
            with guard:
                busy[0] -= 1

    _wrap_embedder(monkeypatch, watched)


def _fourteen_facts_watched(tenant, actor, monkeypatch) -> _Watched:
    """14 facts to embed in batches of 3, each embedding slow enough (0.2 s) for another thread
    to claim its batch meanwhile; what the embeddings did is watched."""
    lines = [json.dumps({"content": f"Rack {i} holds the {i}th build agent."}) for i in range(14)]
    fact_import(tenant=tenant, lines=lines, actor=actor)
    seen = _Watched()
    _batches_watched(monkeypatch, seen)
    _embeddings_watched(monkeypatch, seen)
    return seen


def _each_fact_has_one_vector(tenant) -> None:
    with tenant_scope(tenant):
        assert not Fact.objects.for_tenant(tenant).filter(embedding_model="").exists()
        per_fact = FactVector.objects.for_tenant(tenant).values_list("fact_id", flat=True)
        assert sorted(per_fact) == sorted(
            Fact.objects.for_tenant(tenant).values_list("pk", flat=True)
        )


# Committed for real: the second thread has its own connection and sees only committed rows.
@pytest.mark.django_db(transaction=True)
def test_two_threads_share_the_batches_embed_one_at_a_time_and_each_fact_once(
    tenant, system_actor, monkeypatch
) -> None:
    """One embedding stream (a web process's, or a worker's with a single thread)."""
    monkeypatch.setenv(STREAMS_ENV, "1")
    seen = _fourteen_facts_watched(tenant, system_actor, monkeypatch)
    assert facts_embed_all(tenant=tenant).done == 14
    assert seen.most == 1, "never two embeddings at once: each has the cores to itself"
    assert len(set(seen.claims)) == 2, "both threads took batches"
    _each_fact_has_one_vector(tenant)
    assert facts_embed_all(tenant=tenant).done == 0


@pytest.mark.django_db(transaction=True)
def test_with_two_streams_the_threads_embed_side_by_side_each_with_its_own_copy(
    tenant, system_actor, monkeypatch
) -> None:
    """As a worker runs (two streams on two threads): both embed at once, each with a copy of
    the model of its own, and every fact gets its vector once."""
    monkeypatch.setenv(THREADS_ENV, "2")
    monkeypatch.setenv(STREAMS_ENV, "2")
    configured_embedder(1)  # the second copy loaded (a worker loads it with its first batch)
    seen = _fourteen_facts_watched(tenant, system_actor, monkeypatch)
    assert facts_embed_all(tenant=tenant).done == 14
    assert seen.most == 2, "two embeddings at once"
    assert len(seen.copies) == 2, "each with its own copy of the model"
    _each_fact_has_one_vector(tenant)


@pytest.mark.django_db(transaction=True)
def test_an_embedding_task_that_leaves_rows_unclaimed_calls_in_one_more_worker_once(
    tenant, system_actor, monkeypatch
) -> None:
    """A bulk load: one more message at once, for a free worker process to join in; not one per
    batch, and none for a load a single batch holds, nor when fewer than a run's worth is
    left beside the batch (facts stored one by one)."""
    from facts import tasks

    sent: list[tuple[object, ...]] = []
    monkeypatch.setattr(tasks, "job_send", lambda *args: sent.append(args))
    seen = _Watched()
    _batches_watched(monkeypatch, seen, limit=embedding.RUN)
    _embeddings_watched(monkeypatch, seen, seconds=0.05)
    lines = [json.dumps({"content": f"Rack {i} holds the {i}th build agent."}) for i in range(100)]
    fact_import(tenant=tenant, lines=lines, actor=system_actor)
    assert tasks.facts_embed_pending(tenant.pk) == 100
    assert sent == [("facts.tasks.facts_embed_pending", tenant.pk)]
    for count in (embedding.RUN, embedding.RUN * 2 - 1):
        sent.clear()
        lines = [json.dumps({"content": f"Shelf {count}.{i} holds a disk."}) for i in range(count)]
        fact_import(tenant=tenant, lines=lines, actor=system_actor)
        assert tasks.facts_embed_pending(tenant.pk) == count
        assert sent == [], f"{count} facts: less than a run's worth left beside the first batch"


@pytest.mark.django_db(transaction=True)
def test_another_tenants_backlog_calls_in_no_worker_and_is_left_alone(
    tenant, other_tenant, system_actor, monkeypatch
) -> None:
    """Rows nobody claimed are looked for in the task's tenant alone: a bulk load waiting in
    another tenant neither calls in a worker for this one nor gets embedded by it."""
    from facts import tasks

    sent: list[tuple[object, ...]] = []
    monkeypatch.setattr(tasks, "job_send", lambda *args: sent.append(args))
    _batches_watched(monkeypatch, _Watched(), limit=embedding.RUN)
    theirs = [json.dumps({"content": f"Their rack {i} holds a build agent."}) for i in range(100)]
    fact_import(tenant=other_tenant, lines=theirs, actor=system_actor)
    # A batch and fewer than a run beside it: with the other tenant's rows, a bulk load.
    count = embedding.RUN * 2 - 1
    ours = [json.dumps({"content": f"Our shelf {i} holds a disk."}) for i in range(count)]
    fact_import(tenant=tenant, lines=ours, actor=system_actor)
    with tenant_scope(tenant):
        batch = list(
            _waiting_rows(tenant).order_by("id").values_list("pk", flat=True)[: embedding.RUN]
        )
        assert not embedding._unclaimed_left(_waiting_rows(tenant).exclude(pk__in=batch))
    assert tasks.facts_embed_pending(tenant.pk) == count
    assert sent == [], "the other tenant's 100 waiting facts are not this task's"
    with tenant_scope(other_tenant):
        assert _waiting_rows(other_tenant).count() == 100, "nor did it embed them"


@pytest.mark.django_db(transaction=True)
def test_looking_for_rows_nobody_claimed_leaves_them_unclaimed(tenant, system_actor) -> None:
    count = embedding.RUN
    lines = [
        json.dumps({"content": f"Rack {i} holds the {i}th build agent."}) for i in range(count)
    ]
    fact_import(tenant=tenant, lines=lines, actor=system_actor)
    claimed: list[int] = []

    def other_worker() -> None:
        try:
            with tenant_scope(tenant):  # NOWAIT: an error if any row were still locked
                claimed.append(len(list(_waiting_rows(tenant).select_for_update(nowait=True))))
        finally:
            connection.close()  # this thread's own connection

    with tenant_scope(tenant):
        assert embedding._unclaimed_left(_waiting_rows(tenant))
        worker = threading.Thread(target=other_worker)
        worker.start()
        worker.join()
        assert not embedding._unclaimed_left(_waiting_rows(tenant).none())
    assert claimed == [count], "the other worker could claim them all while this one looked"


def _waiting_rows(tenant):
    return Fact.objects.for_tenant(tenant).filter(embedding_model="")


@pytest.mark.django_db(transaction=True)
def test_both_streams_embed_the_runs_of_one_batch_and_each_vector_reaches_its_fact(
    tenant, system_actor, monkeypatch
) -> None:
    """A single batch (the end of a load) is not left to one stream while the other idles: its
    texts, sorted by length and cut into runs, are shared; each fact still gets its own text's
    vector."""
    monkeypatch.setenv(THREADS_ENV, "2")
    monkeypatch.setenv(STREAMS_ENV, "2")
    configured_embedder(1)  # the second copy loaded (a worker loads it with its first batch)
    texts = [f"Rack {i} holds the build agent" + " of the night shift" * (i % 7) for i in range(70)]
    fact_import(tenant=tenant, lines=[json.dumps({"content": t}) for t in texts],
                actor=system_actor)  # fmt: skip
    seen = _Watched()
    _batches_watched(monkeypatch, seen, limit=embedding.EMBED_BATCH)
    _embeddings_watched(monkeypatch, seen)
    assert facts_embed_all(tenant=tenant).done == 70
    assert len(seen.claims) == 1, "one batch"
    assert (seen.most, len(seen.copies)) == (2, 2), "both streams embedded its runs at once"
    _each_fact_has_one_vector(tenant)
    alone = configured_embedder().embed(texts, purpose="passage")
    with tenant_scope(tenant):
        stored = dict(
            FactVector.objects.for_tenant(tenant).values_list("fact__content", "embedding")
        )
    similarity = np.stack([np.asarray(stored[t]) for t in texts]) @ alone.T
    assert (similarity.argmax(axis=1) == np.arange(len(texts))).all(), "each its own text's"
    assert similarity.diagonal().min() > 0.99


@pytest.mark.django_db(transaction=True)
def test_a_batchs_vectors_are_stored_run_by_run_while_the_rest_are_embedded(
    tenant, system_actor, monkeypatch
) -> None:
    """The last batch of a load is not stored whole after its last run (the cores waiting
    meanwhile on its HNSW inserts): each run's vectors go in as the run is done."""
    monkeypatch.setenv(THREADS_ENV, "2")
    monkeypatch.setenv(STREAMS_ENV, "2")
    configured_embedder(1)
    lines = [json.dumps({"content": f"Rack {i} holds the {i}th build agent."}) for i in range(100)]
    fact_import(tenant=tenant, lines=lines, actor=system_actor)
    finished, writes, guard = [0], [], threading.Lock()

    @contextmanager
    def counted(copy: Any) -> Iterator[None]:
        time.sleep(0.1)
        yield
        with guard:
            finished[0] += 1

    _wrap_embedder(monkeypatch, counted)
    real = embedding.vectors_write

    def write(**kwargs: Any) -> None:
        writes.append((len(kwargs["fact_ids"]), finished[0]))
        real(**kwargs)

    monkeypatch.setattr(embedding, "vectors_write", write)
    assert facts_embed_all(tenant=tenant).done == 100
    runs = [100 % embedding.RUN] + [embedding.RUN] * (100 // embedding.RUN)
    assert sorted(size for size, _ in writes) == runs, "a write per run"
    assert writes[0][1] < len(runs), "the first run stored before the last was embedded"
    _each_fact_has_one_vector(tenant)


@pytest.mark.django_db(transaction=True)
def test_a_thread_that_finds_nothing_waits_for_the_rest_of_a_load(
    tenant, system_actor, monkeypatch
) -> None:
    """A bulk load arrives in parts: when the first part is a single batch, the thread that
    found nothing to claim beside it stays and takes batches of the later parts."""
    line = "Rack {} holds the {}th build agent."
    fact_import(tenant=tenant, lines=[json.dumps({"content": line.format(i, i)}) for i in range(3)],
                actor=system_actor)  # fmt: skip
    seen = _Watched()
    _batches_watched(monkeypatch, seen)
    embedded: list[int] = []

    def rest_of_the_load() -> None:
        lines = [json.dumps({"content": line.format(i, i)}) for i in range(3, 15)]
        try:
            fact_import(tenant=tenant, lines=lines, actor=system_actor)
        finally:
            connection.close()  # this thread's own connection

    @contextmanager
    def watched(_: Any) -> Iterator[None]:
        embedded.append(1)
        if len(embedded) == 1:
            time.sleep(0.3)  # the other thread claims nothing meanwhile
            loader = threading.Thread(target=rest_of_the_load)
            loader.start()
            loader.join()
        time.sleep(0.05)
        yield

    _wrap_embedder(monkeypatch, watched)
    assert facts_embed_all(tenant=tenant).done == 15
    assert len(seen.claims) == 5
    assert len(set(seen.claims[1:])) == 2, "both threads took batches of the later parts"
    with tenant_scope(tenant):
        assert not Fact.objects.for_tenant(tenant).filter(embedding_model="").exists()


def _slow_embedder(monkeypatch, seconds: float) -> None:
    @contextmanager
    def slow(_: Any) -> Iterator[None]:
        time.sleep(seconds)
        yield

    _wrap_embedder(monkeypatch, slow)


def _waiting(tenant) -> int:
    with tenant_scope(tenant):
        return Fact.objects.for_tenant(tenant).filter(embedding_model="").count()


@pytest.mark.django_db(transaction=True)
def test_an_embedding_task_past_its_time_leaves_the_rest_to_a_fresh_message(
    tenant, system_actor, monkeypatch
) -> None:
    """A large load is embedded by a chain of tasks, each well inside Celery's time limit."""
    from facts import tasks

    lines = [json.dumps({"content": f"Rack {i} holds the {i}th build agent."}) for i in range(30)]
    fact_import(tenant=tenant, lines=lines, actor=system_actor)
    monkeypatch.setattr(
        embedding, "facts_embed_batch", functools.partial(embedding.facts_embed_batch, limit=3)
    )
    _slow_embedder(monkeypatch, 0.1)
    sent = []
    monkeypatch.setattr(tasks, "job_send_coalesced", lambda *args: sent.append(args))
    monkeypatch.setattr(tasks, "EMBED_TASK_S", 0.35)
    done = tasks.facts_embed_pending(tenant.pk)
    assert 0 < done < 30
    assert _waiting(tenant) == 30 - done, "every batch begun was finished, none begun after"
    assert ("facts.tasks.facts_embed_pending", tenant.pk) in sent
    monkeypatch.setattr(tasks, "EMBED_TASK_S", 60.0)
    sent.clear()
    assert tasks.facts_embed_pending(tenant.pk) == 30 - done  # what that message runs
    assert ("facts.tasks.facts_embed_pending", tenant.pk) not in sent, "done: not sent again"
    assert _waiting(tenant) == 0


@pytest.mark.django_db(transaction=True)
def test_an_error_in_one_thread_stops_the_other_after_its_batch(
    tenant, system_actor, monkeypatch
) -> None:
    """Celery's soft time limit raises in the task's own thread: the other thread must not go
    on embedding the whole backlog until the hard limit kills the process."""
    from celery.exceptions import SoftTimeLimitExceeded

    lines = [json.dumps({"content": f"Rack {i} holds the {i}th build agent."}) for i in range(30)]
    fact_import(tenant=tenant, lines=lines, actor=system_actor)
    main = threading.get_ident()
    real = embedding.facts_embed_batch
    calls = {"main": 0}

    def batch(**kwargs):
        if threading.get_ident() == main:
            calls["main"] += 1
            if calls["main"] == 2:
                raise SoftTimeLimitExceeded()
        return real(**{**kwargs, "limit": 3})

    monkeypatch.setattr(embedding, "facts_embed_batch", batch)
    _slow_embedder(monkeypatch, 0.1)
    with pytest.raises(SoftTimeLimitExceeded):
        facts_embed_all(tenant=tenant)
    assert 3 <= 30 - _waiting(tenant) <= 12, "the other thread stopped after its batch"


@pytest.mark.django_db(transaction=True)
def test_the_embedding_task_has_the_tables_a_bulk_load_changed_analysed(
    tenant, system_actor, monkeypatch
) -> None:
    """Right after a bulk load, before autovacuum came round, PostgreSQL planned the new
    tenant's conflict checks as if it had no rows: 60 s for 200 facts instead of 0.3 s. The
    task that embedded the load has the tables it changed analysed (through the owner's
    function: the runtime role these tests run as cannot ANALYZE)."""
    from facts import tasks

    monkeypatch.setattr(embedding, "ANALYZE_MIN_CHANGES", 20)
    monkeypatch.setattr(embedding, "ANALYZE_MIN_FRACTION", 0.0)
    before = tables_last_analysed()
    lines = [json.dumps({"content": f"Rack {i} holds the {i}th build agent."}) for i in range(30)]
    fact_import(tenant=tenant, lines=lines, actor=system_actor)
    with connection.cursor() as cursor:
        # A process's counts of changed rows are published within a second or so; a worker
        # embedding a load comes later than that. Here they are published at once.
        cursor.execute("SELECT pg_stat_force_next_flush()")
    real = embedding.facts_embed_batch
    # Batches of 3, as a load's are in its last second: each batch's changes are left for the
    # connection to publish later, as it has published some less than a second before.
    monkeypatch.setattr(embedding, "facts_embed_batch", lambda **kw: real(**{**kw, "limit": 3}))
    assert tasks.facts_embed_pending(tenant.pk) == 30
    after = tables_last_analysed()
    assert after["facts_fact"] is not None and after["facts_fact"] != before["facts_fact"]
    # The load was embedded through two connections (this one and the task's other thread's),
    # each publishing its counts of changed rows at most once a second, else when idle for ten
    # or as it closes: published after the analysis, they counted as changed since it, and the
    # next task analysed the table again. Whatever either had left is published by now.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    time.sleep(1.0)  # the other thread's connection closed: its counts, had it kept any
    assert "facts_fact" not in embedding.tables_analyze_stale(), "unchanged since: not again"
    monkeypatch.setattr(embedding, "ANALYZE_MIN_CHANGES", 1000)
    fact_import(tenant=tenant, lines=[json.dumps({"content": "One more rack."})],
                actor=system_actor)  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    assert "facts_fact" not in embedding.tables_analyze_stale(), "a few changes: left to autovacuum"


@pytest.mark.django_db(transaction=True)
def test_an_analysis_under_way_is_waited_for_then_what_is_still_stale_analysed(
    tenant, system_actor, monkeypatch
) -> None:
    """Two workers ending a bulk load together: the second found the first analysing and went
    on at once, and the conflict check it sent was planned before the first's ANALYZE had
    committed, on statistics that did not know the new tenant (its checks took 60 to 100 s
    instead of 3 to 7). Now a second caller waits for the analysis under way, then analyses
    what is still stale."""
    monkeypatch.setattr(embedding, "ANALYZE_MIN_CHANGES", 20)
    monkeypatch.setattr(embedding, "ANALYZE_MIN_FRACTION", 0.0)
    lines = [json.dumps({"content": f"Bin {i} holds the {i}th spare part."}) for i in range(30)]
    fact_import(tenant=tenant, lines=lines, actor=system_actor)
    embedding.tables_analyze_stale()  # 30 rows, as the statistics now say
    # 25 more: fewer than the table's size (the import does not analyse), more than 20 (stale).
    lines = [json.dumps({"content": f"Crate {i} holds the {i}th cable."}) for i in range(25)]
    fact_import(tenant=tenant, lines=lines, actor=system_actor)
    with psycopg.connect(database_url(connection.settings_dict)) as other:
        # Another process analysing: it holds the function's lock until it commits.
        other.execute("SELECT pg_advisory_xact_lock(hashtext('mnemosyne_analyze_stale'))")
        analysed: list[list[str]] = []

        def analyse() -> None:
            try:
                analysed.append(embedding.tables_analyze_stale())
            finally:
                connections.close_all()

        caller = threading.Thread(target=analyse)
        caller.start()
        caller.join(timeout=1.0)
        assert caller.is_alive(), "it went on while another process was analysing"
        other.commit()
    caller.join(timeout=30)
    assert not caller.is_alive()
    assert "facts_fact" in analysed[0], "then it analysed what the other had left stale"


@pytest.mark.django_db(transaction=True)
def test_an_import_has_the_tables_it_made_stale_analysed_without_a_worker(
    tenant, system_actor, monkeypatch
) -> None:
    """A process plans its same-tenant foreign-key checks once and keeps the plan until the
    table's statistics change; planned while the table was new, each check read every fact of
    the tenant, and imports with no worker running (none to analyse the tables) slowed down
    eightfold by 18,000 facts. The import itself has the tables it made stale analysed, its own
    rows counted; a small one leaves them to autovacuum."""
    monkeypatch.setattr(embedding, "ANALYZE_MIN_CHANGES", 20)
    monkeypatch.setattr(embedding, "ANALYZE_MIN_FRACTION", 0.0)
    monkeypatch.setattr(embedding, "IMPORT_ANALYZE_FRACTION", 0.0)
    embedding.tables_analyze_stale()  # what other tests left: analysed now, not by the import
    before = tables_last_analysed()
    lines = [json.dumps({"content": f"Priya moved shelf {i} to the Berlin office."})
             for i in range(30)]  # fmt: skip
    fact_import(tenant=tenant, lines=lines, actor=system_actor)
    after = tables_last_analysed()
    assert after["facts_fact"] is not None and after["facts_fact"] != before["facts_fact"]
    assert after["facts_factentity"] != before["facts_factentity"], "its entity links too"
    fact_import(tenant=tenant, lines=[json.dumps({"content": "One more shelf."})],
                actor=system_actor)  # fmt: skip
    assert tables_last_analysed()["facts_fact"] == after["facts_fact"], "one line: not again"
    # 11 changes since the analysis, of a table of 30 rows or more: enough changes, but the
    # table did not double.
    monkeypatch.setattr(embedding, "ANALYZE_MIN_CHANGES", 5)
    monkeypatch.setattr(embedding, "IMPORT_ANALYZE_FRACTION", 1.0)
    fact_import(tenant=tenant, lines=[json.dumps({"content": f"Crate {i}."}) for i in range(10)],
                actor=system_actor)  # fmt: skip
    assert tables_last_analysed()["facts_fact"] == after["facts_fact"], "the table did not double"
    with transaction.atomic():  # inside a caller's transaction nothing is committed yet
        fact_import(tenant=tenant, lines=lines[:1] + [json.dumps({"content": f"Bin {i}."})
                    for i in range(30)], actor=system_actor)  # fmt: skip
        assert tables_last_analysed()["facts_fact"] == after["facts_fact"]
