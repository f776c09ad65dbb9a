"""The Hermes plugin's tools over the agent-tool core: `fact_store` and `fact_feedback`, as the
REST agent endpoint (`POST /api/v1/agent/tools/<tool>`) runs them for a profile.

Argument names, enums and result shapes are those of Hermes' bundled holographic provider
(definitions in `agentspec.hermes`), so a profile can switch providers without the model (or its
user) relearning anything. Each action parses its arguments, calls the core
(`agenttools.core`) or one service or selector, and shapes the answer. A bad argument raises
InvalidInput naming it; a call the key may not make raises Refused.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from agentspec.hermes import (
    ACTIONS,
    CATEGORIES,
    FACT,
    FEEDBACK_ACTIONS,
    KINDS,
    MAX_LIMIT,
    TURN,
)
from agenttools import core
from agenttools.arguments import ToolArguments, recall_filters
from agenttools.core import READ, WRITE, Binding, Refused, results, scope_of
from facts.graph import entities_reason, entity_facts, entity_related, fact_contradictions
from facts.inputs import clean_entity_name, entity_names, fact_changes, fact_draft
from facts.models import Fact
from facts.selectors.facts import fact_list
from facts.services import fact_add, fact_remove, fact_update
from facts.services import fact_feedback as rate
from tenants.errors import InvalidInput, NotFound

READ_ONLY = "this profile's API key is read-only: it may not change memories"

# -- arguments --------------------------------------------------------------------------------


def _args(args: dict[str, Any]) -> ToolArguments:
    return ToolArguments(args, required="is required for this action")


def _limit(args: ToolArguments) -> int:
    return args.whole("limit", low=1, high=MAX_LIMIT, default=10)


def _read_scope(binding: Binding, args: ToolArguments) -> str:
    return scope_of(binding, args.given("scope"))


# -- results ----------------------------------------------------------------------------------


def _stamp(moment: datetime | None) -> str | None:
    # The holographic provider's SQLite timestamps: UTC, "YYYY-MM-DD HH:MM:SS".
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment else None


def fact_json(fact: Fact, score: float | None = None, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "fact_id": fact.pk,
        "content": fact.content,
        "category": fact.category,
        "tags": ",".join(fact.tags),
        "trust_score": round(fact.trust_score, 6),
        "retrieval_count": fact.retrieval_count,
        "helpful_count": fact.helpful_count,
        "created_at": _stamp(fact.created_at),
        "updated_at": _stamp(fact.updated_at),
        "kind": fact.kind,
        "scope": fact.scope,
    }
    if fact.kind == TURN:
        row.update(session_id=fact.session_id, position=fact.position, speaker=fact.speaker)
    if score is not None:
        row["score"] = round(score, 6)
    row.update(extra)
    return row


# -- fact_store actions -----------------------------------------------------------------------


def _need(binding: Binding, write: bool) -> None:
    if write and not binding.may(WRITE):
        raise Refused(READ_ONLY)
    if not write and not binding.may(READ):
        raise Refused("this profile's API key may write but not read memories")


def _add(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
    _need(binding, write=True)
    args = _args(raw)
    kind = args.choice("kind", KINDS) or FACT
    given_scope = args.given("scope")
    draft = fact_draft(
        {
            "content": args.text("content", required=True),
            "kind": kind,
            "category": args.choice("category", CATEGORIES),
            "tags": args.given("tags"),
            "scope": given_scope if given_scope is not None else binding.scope,
            # Hermes names the session at initialize; a profile run without one still has turns.
            "session_id": (binding.session_id or "hermes") if kind == TURN else None,
            "pinned": args.given("pin") or False,
        }
    )
    result = fact_add(tenant=binding.tenant, draft=draft, actor=binding.actor)
    # holographic answers "added" for a duplicate too; "exists"/"restored" say more.
    return {"fact_id": result.fact.pk, "status": result.status}


def _search(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
    _need(binding, write=False)
    args = _args(raw)
    hits = core.recall(
        binding,
        query=args.text("query", required=True),
        k=_limit(args),
        scope=args.given("scope"),
        kind=args.choice("kind", KINDS),
        category=args.choice("category", CATEGORIES),
        min_trust=args.number("min_trust", low=0.0, high=1.0),
        **recall_filters(args),
    ).hits
    return results(
        [
            fact_json(
                h.fact, h.score, channels=h.channels, relevance=round(h.relevance, 6), weak=h.weak
            )
            for h in hits
        ]
    )


def _graph_rows(hits: list[Any]) -> dict[str, Any]:
    return results([fact_json(h.fact, h.score, entities=h.entities, hops=h.hops) for h in hits])


def _entity_action(selector: Callable[..., list[Any]]) -> Callable[[Binding, dict], dict]:
    def action(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
        _need(binding, write=False)
        args = _args(raw)
        entity = clean_entity_name("entity", args.given("entity"))
        hits, _ = core.entity_recall(
            binding,
            selector,
            name=entity,
            limit=_limit(args),
            fallback=False,
            scope=args.given("scope"),
            category=args.choice("category", CATEGORIES),
            kind=args.choice("kind", KINDS),
        )
        if hits:
            return _graph_rows(hits)
        # No such entity: what the words find, as the holographic provider falls back to.
        return _search(binding, {**raw, "query": entity}) | {"matched_by": "text"}

    return action


_probe = _entity_action(entity_facts)
_related = _entity_action(entity_related)


def _reason(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
    _need(binding, write=False)
    args = _args(raw)
    hits = entities_reason(
        tenant=binding.tenant,
        names=entity_names("entities", args.names("entities")),
        scope=_read_scope(binding, args),
        category=args.choice("category", CATEGORIES),
        kind=args.choice("kind", KINDS),
        limit=_limit(args),
    )
    return _graph_rows(hits)


def _contradict(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
    _need(binding, write=False)
    args = _args(raw)
    pairs = fact_contradictions(
        tenant=binding.tenant,
        scope=_read_scope(binding, args),
        category=args.choice("category", CATEGORIES),
        limit=_limit(args),
    )
    return results(
        [
            {
                "fact_a": fact_json(p.fact_a),
                "fact_b": fact_json(p.fact_b),
                "entity_overlap": p.entity_overlap,
                "content_similarity": p.content_similarity,
                "contradiction_score": p.contradiction_score,
                "shared_entities": p.shared_entities,
                "recorded": p.recorded,
            }
            for p in pairs
        ]
    )


def _update(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
    _need(binding, write=True)
    args = _args(raw)
    given: dict[str, Any] = {}
    for name in ("content", "tags", "scope"):
        if args.given(name) is not None:
            given[name] = args.raw[name]
    if (category := args.choice("category", CATEGORIES)) is not None:
        given["category"] = category
    if (delta := args.number("trust_delta", low=-1.0, high=1.0)) is not None:
        given["trust_delta"] = delta
    if args.given("pin") is not None:
        given["pinned"] = args.raw["pin"]
    fact_id = args.fact_id()
    if not given:
        raise InvalidInput("content", "give content, category, tags, scope, trust_delta or pin")
    changes = fact_changes(given)
    try:
        fact_update(tenant=binding.tenant, fact_id=fact_id, changes=changes, actor=binding.actor)
    except NotFound:
        return {"updated": False, "reason": f"fact {fact_id} not found"}
    return {"updated": True}


def _remove(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
    _need(binding, write=True)
    fact_id = _args(raw).fact_id()
    try:
        fact_remove(tenant=binding.tenant, fact_id=fact_id, actor=binding.actor)
    except NotFound:
        return {"removed": False, "reason": f"fact {fact_id} not found"}
    return {"removed": True}


def _list(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
    _need(binding, write=False)
    args = _args(raw)
    page = fact_list(
        tenant=binding.tenant,
        scope_prefix=_read_scope(binding, args) or None,
        category=args.choice("category", CATEGORIES),
        # Turns would bury the curated facts; ask for kind "turn" to see them.
        kind=args.choice("kind", KINDS) or FACT,
        trust_min=args.number("min_trust", low=0.0, high=1.0),
        limit=_limit(args),
    )
    facts = [fact_json(f) for f in page.facts]
    return {"facts": facts, "count": len(facts)}


_ACTIONS: dict[str, Callable[[Binding, dict[str, Any]], dict[str, Any]]] = {
    "add": _add,
    "search": _search,
    "probe": _probe,
    "related": _related,
    "reason": _reason,
    "contradict": _contradict,
    "update": _update,
    "remove": _remove,
    "list": _list,
}


def fact_store(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    action = _args(args).choice("action", ACTIONS)
    if action is None:
        raise InvalidInput("action", f"is required: one of {', '.join(ACTIONS)}")
    return _ACTIONS[action](binding, args)


def fact_feedback(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    _need(binding, write=True)
    given = _args(args)
    action = given.choice("action", FEEDBACK_ACTIONS)
    if action is None:
        raise InvalidInput("action", "is required: helpful or unhelpful")
    fact_id = given.fact_id()
    try:
        result = rate(
            tenant=binding.tenant, fact_id=fact_id, helpful=action == "helpful", actor=binding.actor
        )
    except NotFound:
        raise InvalidInput("fact_id", f"fact {fact_id} not found") from None
    return {
        "fact_id": result.fact_id,
        "old_trust": result.old_trust,
        "new_trust": result.new_trust,
        "helpful_count": result.helpful_count,
        "unhelpful_count": result.unhelpful_count,
    }


HANDLERS: dict[str, Callable[[Binding, dict[str, Any]], dict[str, Any]]] = {
    "fact_store": fact_store,
    "fact_feedback": fact_feedback,
}
