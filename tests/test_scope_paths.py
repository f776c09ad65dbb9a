"""Scopes are paths: `project:beta` reads `project:beta` and `project:beta/...`, never the sibling
`project:beta2`, in recall, every level of the context, the fact list and the tools."""

from __future__ import annotations

import pytest

from agenttools.mcp import Binding, tool_call
from facts.inputs import fact_draft
from facts.selectors.facts import fact_list
from facts.services import fact_add
from retrieval.context import context_build
from retrieval.inputs import recall_query
from retrieval.search import recall_search
from tenants.actors import Actor
from tenants.scope import scope_within

pytestmark = pytest.mark.django_db

SCOPES = ("project:beta", "project:beta/area:api", "project:beta2")
COVERED = {"project:beta", "project:beta/area:api"}


@pytest.fixture
def beta(tenant, system_actor) -> dict[str, dict[str, int]]:
    """In each scope: a fact about the release train, and turns of one session named after it."""
    made: dict[str, dict[str, int]] = {}
    for scope in SCOPES:
        fact = fact_add(
            tenant=tenant,
            actor=system_actor,
            draft=fact_draft(
                {"content": f"The release train for {scope} leaves on Tuesday", "scope": scope}
            ),
        ).fact
        turn = fact_add(
            tenant=tenant,
            actor=system_actor,
            draft=fact_draft(
                {
                    "content": f"We talked about the release train of {scope}",
                    "scope": scope,
                    "kind": "turn",
                    "session_id": "s-1",
                    "position": SCOPES.index(scope),
                    "speaker": "user",
                }
            ),
        ).fact
        made[scope] = {"fact": fact.pk, "turn": turn.pk}
    return made


def _scopes_of(tenant, ids) -> set[str]:
    page = fact_list(tenant=tenant, status=None, limit=200)
    return {f.scope for f in page.facts if f.pk in set(ids)}


def test_the_helper_treats_slash_as_the_boundary() -> None:
    assert scope_within("project:beta", "project:beta/")
    assert scope_within("project:beta/area:api", "project:beta")
    assert not scope_within("project:beta2", "project:beta")
    assert not scope_within("project:beta", "project:beta/area:api")


def test_recall_reads_the_path_not_the_sibling(tenant, beta) -> None:
    hits = recall_search(
        tenant=tenant,
        query=recall_query({"query": "release train Tuesday", "scope": "project:beta", "k": 20}),
    )
    assert {h.fact.scope for h in hits.hits} == COVERED


def test_every_context_level_reads_the_path_not_the_sibling(tenant, beta) -> None:
    block = context_build(tenant=tenant, query="release train", scope="project:beta",
                          session_id="s-1", hot_restore=True)  # fmt: skip
    # The query's own level, alone (the levels above take every fact it would find).
    relevant = context_build(tenant=tenant, query="release train", scope="project:beta",
                             important=False).levels  # fmt: skip
    levels = {**block.levels, "relevant": relevant["relevant"]}
    for level, ids in levels.items():
        assert ids, level
        assert _scopes_of(tenant, ids) <= COVERED, level
    assert "project:beta2" not in block.text
    assert beta["project:beta/area:api"]["turn"] in block.levels["recent"]


def test_the_list_reads_the_path_not_the_sibling(tenant, beta) -> None:
    page = fact_list(tenant=tenant, scope_prefix="project:beta", limit=50)
    assert {f.scope for f in page.facts} == COVERED
    assert {f.scope for f in fact_list(tenant=tenant, scope_prefix="project:beta2").facts} == {
        "project:beta2"
    }


def test_the_tools_read_the_path_not_the_sibling(tenant, beta, system_actor) -> None:
    from tenants.services import apikey_create

    key = apikey_create(tenant=tenant, name="beta", actor=system_actor).key
    binding = Binding(tenant=tenant, actor=Actor.api_key(key),
                      rights=frozenset({"read", "write"}), scope="")  # fmt: skip
    found = tool_call(binding, "memory_search", {"query": "release train", "scope": "project:beta"})
    assert {row["scope"] for row in found.payload["results"]} == COVERED
    recent = tool_call(binding, "memory_recent", {"scope": "project:beta", "limit": 50})
    assert {row["scope"] for row in recent.payload["results"]} == COVERED
    # A key bound to the path: the same, without naming a scope.
    bound = Binding(tenant=tenant, actor=Actor.api_key(key),
                    rights=frozenset({"read"}), scope="project:beta")  # fmt: skip
    found = tool_call(bound, "memory_search", {"query": "release train"})
    assert {row["scope"] for row in found.payload["results"]} == COVERED
    assert tool_call(bound, "memory_search", {"query": "train", "scope": "project:beta2"}).is_error
