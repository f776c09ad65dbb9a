"""The relevance floor (retrieval.floor): small talk and questions about what a tenant never heard
of put no memory into an agent's context; real questions still get theirs; recall marks weak
hits and the API schema says what `score` and `relevance` mean."""

from __future__ import annotations

import pytest

from agenttools.mcp import Binding, tool_call
from facts.embedding import facts_embed_batch
from facts.inputs import fact_draft
from facts.services import fact_add
from retrieval.context import context_build
from retrieval.floor import FLOOR, relevance
from retrieval.inputs import recall_query
from retrieval.search import recall_search
from tenants.actors import Actor
from tenants.services import apikey_create

pytestmark = pytest.mark.django_db

MEMORIES = (
    "Alice uses vim as her editor, with her own config",
    "Our dog Rex loves the park by the lake",
    "Bob moved to Hangzhou last spring",
    "The team deploys on Tuesdays after the stand-up",
    "The staging database is restored every night at 2 am",
    "张伟喜欢喝龙井茶",
    "下周三团队去杭州团建",
)
SMALL_TALK = ("thanks!", "好的", "ok see you tomorrow", "哈哈没问题", "lol 😂", "收到，谢谢")


@pytest.fixture
def memories(tenant, system_actor) -> dict[str, int]:
    def add(text: str) -> int:
        draft = fact_draft({"content": text})
        return fact_add(tenant=tenant, actor=system_actor, draft=draft).fact.pk

    ids = {text: add(text) for text in MEMORIES}
    while facts_embed_batch(tenant=tenant):
        pass
    return ids


def _relevant(tenant, query: str) -> list[int]:
    block = context_build(tenant=tenant, query=query, important=False)
    return block.levels.get("relevant", [])


@pytest.mark.parametrize("said", SMALL_TALK)
def test_small_talk_puts_nothing_in_the_context_block(tenant, memories, said) -> None:
    assert _relevant(tenant, said) == []
    # Recall still answers when asked, every hit marked weak.
    hits = recall_search(tenant=tenant, query=recall_query({"query": said, "k": 5})).hits
    assert hits and all(hit.weak and hit.relevance < FLOOR for hit in hits)


@pytest.mark.parametrize(
    ("question", "memory"),
    [
        ("What editor does Alice use?", MEMORIES[0]),
        ("When does the team deploy?", MEMORIES[3]),
        ("张伟喜欢喝什么茶？", MEMORIES[5]),
    ],
)
def test_a_real_question_still_gets_its_memory(tenant, memories, question, memory) -> None:
    assert memories[memory] in _relevant(tenant, question)
    hits = recall_search(tenant=tenant, query=recall_query({"query": question, "k": 3})).hits
    found = [hit for hit in hits if hit.fact.pk == memories[memory]]
    assert found and not found[0].weak and found[0].relevance >= FLOOR


def test_a_question_about_someone_nobody_mentioned_gets_nothing(tenant, memories) -> None:
    # The observed problem: the dog and the Hangzhou memories came with it.
    assert _relevant(tenant, "What editor does Carol like?") == []
    asked = recall_query({"query": "What editor does Carol like?"})
    hits = recall_search(tenant=tenant, query=asked)
    assert hits.hits and all(hit.signals["unknown_name"] == 1.0 for hit in hits.hits)


def test_relevance_is_a_probability_that_grows_with_the_evidence() -> None:
    # The best hit of a query like small talk, and of a question its memory answers.
    none = {"vec": 0.05, "top_vec": 0.05, "fused": 1.0, "smalltalk": 0.6}
    strong = {"vec": 0.4, "top_vec": 0.4, "fts_cover": 0.6, "fts_mass": 0.5, "top_mass": 0.5,
              "fused": 1.0, "query_mass": 1.0, "smalltalk": 0.2}  # fmt: skip
    assert 0.0 <= relevance(none) < FLOOR <= relevance(strong) <= 1.0
    assert relevance(strong | {"smalltalk": 0.6}) < relevance(strong)
    assert relevance(strong | {"unknown_name": 1.0}) < relevance(strong)


def test_mcp_memory_context_leaves_small_talk_without_memories(tenant, memories) -> None:
    key = apikey_create(tenant=tenant, name="zed", actor=Actor.job("test")).key
    binding = Binding(tenant=tenant, actor=Actor.api_key(key), rights=frozenset({"read"}), scope="")
    for said in SMALL_TALK:
        block = tool_call(binding, "memory_context", {"task": said}).payload
        assert block["fact_ids"].get("relevant", []) == [], said
    asked = tool_call(binding, "memory_context", {"task": "What editor does Alice use?"}).payload
    shown = [i for ids in asked["fact_ids"].values() for i in ids]
    assert memories[MEMORIES[0]] in shown
    # memory_search still returns what it finds, each hit marked.
    found = tool_call(binding, "memory_search", {"query": "thanks!"}).payload["results"]
    assert all(row["weak"] is True and 0 <= row["relevance"] < FLOOR for row in found)
    found = tool_call(binding, "memory_search", {"query": "What editor does Alice use?"}).payload
    assert found["results"][0]["weak"] is False


def test_an_outsider_sees_nothing_of_the_tenants_memories(tenant, other_tenant, memories) -> None:
    assert _relevant(other_tenant, "What editor does Alice use?") == []
    hits = recall_search(
        tenant=other_tenant, query=recall_query({"query": "What editor does Alice use?"})
    ).hits
    assert not {hit.fact.pk for hit in hits} & set(memories.values())


def test_the_api_schema_says_what_score_and_relevance_mean(client) -> None:
    schema = client.get("/api/schema/?format=json").json()
    hit = schema["components"]["schemas"]["RecallHitOut"]
    assert {"score", "relevance", "weak", "fact"} <= set(hit["required"])
    properties = hit["properties"]
    assert "orders one query's hits" in properties["score"]["description"]
    assert properties["relevance"]["minimum"] == 0 and properties["relevance"]["maximum"] == 1
    assert "probability" in properties["relevance"]["description"]
    assert f"below the floor ({FLOOR})" in properties["weak"]["description"]


def test_rest_recall_returns_weak_hits_marked_and_strong_ones_not(
    tenant, other_tenant, memories
) -> None:
    from tests.api_fixtures import bearer

    client = bearer(apikey_create(tenant=tenant, name="api", actor=Actor.job("test")).token)
    said = client.post("/api/v1/recall", {"query": "thanks!", "k": 5}, format="json").json()
    assert said["results"] and all(
        hit["weak"] is True and 0 <= hit["relevance"] < FLOOR for hit in said["results"]
    )
    asked = client.post(
        "/api/v1/recall", {"query": "What editor does Alice use?", "k": 3}, format="json"
    ).json()["results"]
    assert asked[0]["fact"]["id"] == memories[MEMORIES[0]] and asked[0]["weak"] is False
    # An outsider's key finds none of these memories.
    outsider = bearer(apikey_create(tenant=other_tenant, name="api", actor=Actor.job("test")).token)
    theirs = outsider.post(
        "/api/v1/recall", {"query": "What editor does Alice use?"}, format="json"
    ).json()["results"]
    assert not {hit["fact"]["id"] for hit in theirs} & set(memories.values())


def test_the_small_talk_vectors_are_made_once_and_read_by_every_other_process(
    settings, tmp_path
) -> None:
    import numpy as np

    from indexing.embedders import get_embedder
    from retrieval import floor

    embedder = get_embedder(settings.MNEMOSYNE_EMBEDDER, str(settings.MNEMOSYNE_MODEL_DIR))
    settings.MNEMOSYNE_MODEL_DIR = tmp_path
    floor._smalltalk.clear()
    try:
        texts, made = floor.smalltalk_vectors(embedder)
        (kept,) = tmp_path.glob("smalltalk-*.npy")
        assert len(texts) >= 200 and made.shape[0] == len(texts)
        # As a new process would: what the file holds, not a new embedding.
        np.save(kept, made * 0.5, allow_pickle=False)
        floor._smalltalk.clear()
        _, read = floor.smalltalk_vectors(embedder)
        assert np.array_equal(read, made * 0.5)
    finally:
        floor._smalltalk.clear()
