"""Switching embedding models: the old vectors serve until the new ones are complete."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection

from facts import services
from facts.embedding import facts_embed_batch, vector_switch_progress, vectors_write
from facts.inputs import fact_draft
from facts.models import Fact
from facts.selectors.facts import fact_vectors
from indexing.embedders.use import USE_NAME
from indexing.models import VectorModel
from indexing.vectors import (
    VectorModelMismatch,
    configured_embedder,
    index_name,
    serving_space,
    vector_model_register,
    vector_models_changed,
    vector_models_cleanup,
    vector_switch_finish,
)
from retrieval.inputs import recall_query
from retrieval.search import recall_search
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db

E5 = "multilingual-e5-small-int8"
FACTS = [
    "老王下周三去上海出差",
    "团队每周一上午十点开站会",
    "Bob is allergic to peanuts",
    "The staging database runs PostgreSQL 18",
]


def _embed_all(tenant) -> None:
    while facts_embed_batch(tenant=tenant):
        pass


def _vector_top(tenant, query: str) -> str:
    return (
        recall_search(tenant=tenant, query=recall_query({"query": query, "channels": ["vec"]}))
        .hits[0]
        .fact.content
    )


def _index_exists(model: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [index_name(model)])
        return cursor.fetchone() is not None


# Committed for real: a new model's index is built concurrently, outside any transaction.
@pytest.mark.django_db(transaction=True)
def test_a_new_model_fills_while_the_old_one_serves_then_takes_over(
    tenant, system_actor, settings, monkeypatch
) -> None:
    from indexing import vectors

    for text in FACTS:
        services.fact_add(tenant=tenant, actor=system_actor, draft=fact_draft({"content": text}))
    _embed_all(tenant)
    assert serving_space().name == E5

    settings.MNEMOSYNE_EMBEDDER = "use"
    vector_models_changed()
    said = io.StringIO()
    call_command("embedder", stdout=said)
    assert (
        f"switching models: {E5} serves recall while {USE_NAME} embeds the facts: 0 of 4 (0%)"
    ) in said.getvalue()
    during = services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Carol flies to Lisbon on Monday"}),
    ).fact
    # Found by meaning at once: it keeps the serving model's vector its near-duplicate check
    # made, and waits for the worker to make the new model's.
    assert _vector_top(tenant, "Carol's flight to Portugal") == during.content
    assert {v.model for v in fact_vectors(tenant=tenant, fact_id=during.pk)} == {E5}
    assert facts_embed_batch(tenant=tenant, limit=2) == 2, "the new fact, and one older"
    progress = vector_switch_progress()
    assert (progress.serving, progress.filling) == (E5, USE_NAME)
    assert progress.embedded == 2 < progress.active_facts == 5
    assert _index_exists(USE_NAME), "the new model has its own index before it has vectors"

    # Half-way: the old model still answers, for old facts and for the one stored just now.
    assert vector_switch_finish() is None
    assert serving_space().name == E5
    assert _vector_top(tenant, "business trip to Shanghai") == FACTS[0]
    assert {v.model for v in fact_vectors(tenant=tenant, fact_id=during.pk)} == {E5, USE_NAME}
    assert _vector_top(tenant, "Carol's flight to Portugal") == during.content

    _embed_all(tenant)
    assert vector_switch_finish() == USE_NAME
    assert serving_space().name == USE_NAME
    assert recall_search(
        tenant=tenant, query=recall_query({"query": "peanut allergy", "channels": ["vec"]})
    ).hits
    assert _vector_top(tenant, "who cannot eat peanuts?") == FACTS[2]

    # The retired model's vectors and index go once no process can still be asking it.
    assert vector_models_cleanup() == 0, "not before its grace period"
    monkeypatch.setattr(vectors, "RETIRED_GRACE", vectors.timedelta(0))
    assert vector_models_cleanup() == len(FACTS) + 1
    assert not _index_exists(E5)
    assert list(VectorModel.objects.values_list("name", "state")) == [(USE_NAME, "serving")]
    assert {v.model for v in fact_vectors(tenant=tenant, fact_id=during.pk)} == {USE_NAME}
    said = io.StringIO()
    call_command("embedder", stdout=said)
    assert f"{USE_NAME} serves recall: 5 of 5 active facts embedded" in said.getvalue()


class _Resized:
    """An embedder that claims e5's name with another dimension, as a changed model folder
    would."""

    name = E5
    dimension = 256

    def embed(self, texts, *, purpose="passage"):
        return np.zeros((len(texts), self.dimension), dtype=np.float32)


def test_a_model_name_known_with_another_dimension_is_refused(tenant, system_actor) -> None:
    services.fact_add(
        tenant=tenant,
        actor=system_actor,
        draft=fact_draft({"content": "Bob is allergic to peanuts"}),
    )
    _embed_all(tenant)
    with pytest.raises(VectorModelMismatch, match="recorded with 384 dimensions.*gives 256"):
        vector_model_register(_Resized(), "onnx:/models/e5-resized")
    assert serving_space().name == E5, "nothing changed"


def test_a_recall_vector_of_the_wrong_dimension_is_an_error_not_nonsense(tenant) -> None:
    from indexing import sql

    with pytest.raises(ValueError, match="384-dimension vector is needed"):
        sql.vector_candidates(
            tenant_id=tenant.pk, vector=np.zeros(512, dtype=np.float32), model=E5,
            dimension=384, filters=sql.Filters(), limit=10,
        )  # fmt: skip


def test_vector_candidates_come_nearest_first(tenant, system_actor) -> None:
    """The scan is relaxed-order, so its rows come a little out of order; the query sorts them
    after it. (An outer ORDER BY over a plain subquery was dropped by the planner, which took
    the subquery's ORDER BY as already giving that order.) With `ef_search` 1 the scan yields
    its rows far out of order; sorting is made dear, so the planner takes the HNSW scan for
    this small tenant (as for a large one) rather than read every row and sort it."""
    from indexing import sql

    configured_embedder()  # registered: E5 serves
    lines = [json.dumps({"content": f"memory number {n}"}) for n in range(400)]
    services.fact_import(tenant=tenant, lines=lines, actor=system_actor)
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(400, 384)).astype(np.float32)
    with tenant_scope(tenant):
        ids = sorted(Fact.objects.for_tenant(tenant).values_list("pk", flat=True))
        vectors_write(tenant=tenant, fact_ids=ids, models=[E5] * 400, vectors=list(vectors))
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_sort = off")
        rows = sql.vector_candidates(
            tenant_id=tenant.pk, vector=vectors[0], model=E5, dimension=384,
            filters=sql.Filters(), limit=100, ef_search=1,
        )  # fmt: skip
    scores = [score for _, score, _ in rows]
    assert len(scores) == 100
    assert rows[0][0] == ids[0] and scores[0] == pytest.approx(1.0, abs=1e-5)
    assert scores == sorted(scores, reverse=True)
