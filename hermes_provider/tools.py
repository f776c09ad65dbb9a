"""The tools the model calls: `fact_store` and `fact_feedback`.

Argument names, enums and result shapes are those of Hermes' bundled holographic provider, so a
profile can switch providers without the model (or its user) relearning anything. Extra optional
arguments: `scope` (where to write, or the scope prefix to read) and `kind` (`fact` or `turn`).

These functions validate, call one service or selector, and format. They never raise: a bad
argument is `{"error": "<argument>: <what is wrong>"}`. The tenant comes from the provider's API
key and cannot be named by any argument.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tenants.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    # Models need Django configured, which the provider does at initialize, after this import.
    from facts.models import Fact
    from tenants.actors import Actor
    from tenants.models import Tenant

ACTIONS = ["add", "search", "probe", "related", "reason", "contradict", "update", "remove", "list"]
FEEDBACK_ACTIONS = ["helpful", "unhelpful"]
CATEGORIES = ["user_pref", "project", "tool", "general"]  # facts.models.Category
FACT, TURN = "fact", "turn"  # facts.models.Kind
KINDS = [FACT, TURN]
MAX_LIMIT = 100

FACT_STORE_SCHEMA: dict[str, Any] = {
    "name": "fact_store",
    "description": (
        "Long-term memory shared by your team (Mnemosyne): curated facts and past "
        "conversation turns, in any language.\n\n"
        "ACTIONS:\n"
        "• add — Store a fact the user would expect you to remember.\n"
        "• search — Find memories by meaning and keywords ('editor config', '部署流程').\n"
        "• probe — Entity recall: ALL facts about a person/thing.\n"
        "• related — What connects to an entity? Facts linking it to others, and theirs.\n"
        "• reason — Facts connected to MULTIPLE entities at once.\n"
        "• contradict — Memory hygiene: pairs of facts that may make conflicting claims.\n"
        "• update/remove/list — CRUD operations.\n\n"
        "IMPORTANT: Before answering questions about the user or the team, search or probe first."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ACTIONS},
            "content": {"type": "string", "description": "Fact content (required for 'add')."},
            "query": {"type": "string", "description": "Search query (required for 'search')."},
            "entity": {"type": "string", "description": "Entity name for 'probe'/'related'."},
            "entities": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Entity names for 'reason'.",
            },
            "fact_id": {"type": "integer", "description": "Fact ID for 'update'/'remove'."},
            "category": {"type": "string", "enum": CATEGORIES},
            "tags": {"type": "string", "description": "Comma-separated tags."},
            "trust_delta": {"type": "number", "description": "Trust adjustment for 'update'."},
            "pin": {
                "type": "boolean",
                "description": "Optional for 'add'/'update': true = always remember this fact "
                "(it leads the known facts and is never archived); false = unpin.",
            },
            "min_trust": {"type": "number", "description": "Minimum trust filter (default: 0.3)."},
            "limit": {"type": "integer", "description": "Max results (default: 10)."},
            "scope": {
                "type": "string",
                "description": "Optional scope path like 'user:alice/project:beta': where 'add' "
                "stores, the prefix other actions read (default: this profile's scope).",
            },
            "kind": {
                "type": "string",
                "enum": KINDS,
                "description": "Optional: 'fact' (curated statements) or 'turn' (conversation "
                "turns). Default: both for 'search', facts for 'list'.",
            },
        },
        "required": ["action"],
    },
}

FACT_FEEDBACK_SCHEMA: dict[str, Any] = {
    "name": "fact_feedback",
    "description": (
        "Rate a fact after using it. Mark 'helpful' if accurate, 'unhelpful' if outdated. "
        "This trains the memory — good facts rise, bad facts sink."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": FEEDBACK_ACTIONS},
            "fact_id": {"type": "integer", "description": "The fact ID to rate."},
        },
        "required": ["action", "fact_id"],
    },
}

TOOL_SCHEMAS = [FACT_STORE_SCHEMA, FACT_FEEDBACK_SCHEMA]
TOOL_NAMES = {schema["name"] for schema in TOOL_SCHEMAS}


class Refused(Exception):
    """The call is well formed but this key may not do it (e.g. a read-only key writes)."""


@dataclass(frozen=True)
class Binding:
    """Who the provider acts for: fixed by the API key at initialize, never by arguments."""

    tenant: Tenant  # with the profile's setting overrides applied (never saved)
    actor: Actor
    key_prefix: str
    can_read: bool
    can_write: bool
    scope: str
    session_id: str


# -- arguments --------------------------------------------------------------------------------


def _given(args: dict[str, Any], name: str) -> Any:
    value = args.get(name)
    return None if value is None or (isinstance(value, str) and not value.strip()) else value


def _text(args: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    value = _given(args, name)
    if value is None:
        if required:
            raise InvalidInput(name, "is required for this action")
        return None
    if not isinstance(value, str):
        raise InvalidInput(name, "must be text")
    return value.strip()


def _whole(args: dict[str, Any], name: str, default: int | None, low: int, high: int) -> int:
    value = _given(args, name)
    if value is None:
        if default is None:
            raise InvalidInput(name, "is required for this action")
        return default
    # Models sometimes send numbers as text ("5") or as 5.0.
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(name, "must be a whole number")
    if not low <= value <= high:
        raise InvalidInput(name, f"must be from {low} to {high}")
    return value


def _number(args: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = _given(args, name)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InvalidInput(name, "must be a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InvalidInput(name, "must be a number")
    if not low <= value <= high:
        raise InvalidInput(name, f"must be from {low:g} to {high:g}")
    return float(value)


def _choice(args: dict[str, Any], name: str, allowed: list[str]) -> str | None:
    value = _given(args, name)
    if value is not None and value not in allowed:
        raise InvalidInput(name, f"must be one of {', '.join(allowed)}")
    return value


def _names(args: dict[str, Any], name: str) -> list[str]:
    value = _given(args, name)
    if isinstance(value, str):
        value = [part for part in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(name, "must be a list of names")
    names = [v.strip() for v in value if v.strip()]
    if not names:
        raise InvalidInput(name, "must name at least one entity")
    return names


def _fact_id(args: dict[str, Any]) -> int:
    return _whole(args, "fact_id", None, 1, 2**63 - 1)


def _limit(args: dict[str, Any]) -> int:
    return _whole(args, "limit", 10, 1, MAX_LIMIT)


def _read_scope(binding: Binding, args: dict[str, Any]) -> str:
    from facts.services import clean_scope

    given = _given(args, "scope")
    return clean_scope(given) if given is not None else binding.scope


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


def _results(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"results": rows, "count": len(rows)}


# -- fact_store actions -----------------------------------------------------------------------


def _need(binding: Binding, write: bool) -> None:
    if write and not binding.can_write:
        raise Refused("this profile's API key is read-only: it may not change memories")
    if not write and not binding.can_read:
        raise Refused("this profile's API key may write but not read memories")


def _add(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from facts.services import fact_add

    _need(binding, write=True)
    kind = _choice(args, "kind", KINDS) or FACT
    given_scope = _given(args, "scope")
    result = fact_add(
        tenant=binding.tenant,
        actor=binding.actor,
        content=_text(args, "content", required=True),
        kind=kind,
        category=_choice(args, "category", CATEGORIES),
        tags=_given(args, "tags"),
        scope=given_scope if given_scope is not None else binding.scope,
        # Hermes names the session at initialize; a profile run without one still has turns.
        session_id=(binding.session_id or "hermes") if kind == TURN else None,
        pinned=_given(args, "pin") or False,
    )
    # holographic answers "added" for a duplicate too; "exists"/"restored" say more.
    return {"fact_id": result.fact.pk, "status": result.status}


def _search(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from retrieval.search import recall_search

    _need(binding, write=False)
    hits = recall_search(
        tenant=binding.tenant,
        query=_text(args, "query", required=True),
        k=_limit(args),
        scope=_read_scope(binding, args),
        kind=_choice(args, "kind", KINDS),
        category=_choice(args, "category", CATEGORIES),
        min_trust=_number(args, "min_trust", 0.0, 1.0),
    ).hits
    return _results([fact_json(h.fact, h.score, channels=h.channels) for h in hits])


def _graph_rows(hits: list[Any]) -> dict[str, Any]:
    return _results([fact_json(h.fact, h.score, entities=h.entities, hops=h.hops) for h in hits])


def _entity_action(selector: Callable[..., list[Any]]) -> Callable[[Binding, dict], dict]:
    def action(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
        _need(binding, write=False)
        entity = _text(args, "entity", required=True)
        filters = dict(
            scope=_read_scope(binding, args),
            category=_choice(args, "category", CATEGORIES),
            kind=_choice(args, "kind", KINDS),
        )
        hits = selector(tenant=binding.tenant, name=entity, limit=_limit(args), **filters)
        if hits:
            return _graph_rows(hits)
        # No such entity: what the words find, as the holographic provider falls back to.
        return _search(binding, {**args, "query": entity}) | {"matched_by": "text"}

    return action


def _probe(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from facts.graph import entity_facts

    return _entity_action(entity_facts)(binding, args)


def _related(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from facts.graph import entity_related

    return _entity_action(entity_related)(binding, args)


def _reason(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from facts.graph import entities_reason

    _need(binding, write=False)
    hits = entities_reason(
        tenant=binding.tenant,
        names=_names(args, "entities"),
        scope=_read_scope(binding, args),
        category=_choice(args, "category", CATEGORIES),
        kind=_choice(args, "kind", KINDS),
        limit=_limit(args),
    )
    return _graph_rows(hits)


def _contradict(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from facts.graph import fact_contradictions

    _need(binding, write=False)
    pairs = fact_contradictions(
        tenant=binding.tenant,
        scope=_read_scope(binding, args),
        category=_choice(args, "category", CATEGORIES),
        limit=_limit(args),
    )
    return _results(
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


def _update(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from facts.services import fact_update

    _need(binding, write=True)
    changes: dict[str, Any] = {}
    for name in ("content", "tags", "scope"):
        if _given(args, name) is not None:
            changes[name] = args[name]
    if (category := _choice(args, "category", CATEGORIES)) is not None:
        changes["category"] = category
    if (delta := _number(args, "trust_delta", -1.0, 1.0)) is not None:
        changes["trust_delta"] = delta
    if _given(args, "pin") is not None:
        changes["pinned"] = args["pin"]
    fact_id = _fact_id(args)
    if not changes:
        raise InvalidInput("content", "give content, category, tags, scope, trust_delta or pin")
    try:
        fact_update(tenant=binding.tenant, fact_id=fact_id, actor=binding.actor, **changes)
    except NotFound:
        return {"updated": False, "reason": f"fact {fact_id} not found"}
    return {"updated": True}


def _remove(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from facts.services import fact_remove

    _need(binding, write=True)
    fact_id = _fact_id(args)
    try:
        fact_remove(tenant=binding.tenant, fact_id=fact_id, actor=binding.actor)
    except NotFound:
        return {"removed": False, "reason": f"fact {fact_id} not found"}
    return {"removed": True}


def _list(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from facts.selectors import fact_list

    _need(binding, write=False)
    page = fact_list(
        tenant=binding.tenant,
        scope_prefix=_read_scope(binding, args) or None,
        category=_choice(args, "category", CATEGORIES),
        # Turns would bury the curated facts; ask for kind "turn" to see them.
        kind=_choice(args, "kind", KINDS) or FACT,
        trust_min=_number(args, "min_trust", 0.0, 1.0),
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
    action = _choice(args, "action", ACTIONS)
    if action is None:
        raise InvalidInput("action", f"is required: one of {', '.join(ACTIONS)}")
    return _ACTIONS[action](binding, args)


def fact_feedback(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from facts.services import fact_feedback as rate

    _need(binding, write=True)
    action = _choice(args, "action", FEEDBACK_ACTIONS)
    if action is None:
        raise InvalidInput("action", "is required: helpful or unhelpful")
    fact_id = _fact_id(args)
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


def error(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


def call(binding: Binding, tool_name: str, args: Any) -> str:
    """Run one tool call; always a JSON string. Database outages are the caller's to report."""
    handler = HANDLERS.get(tool_name)
    if handler is None:
        return error(f"unknown tool {tool_name!r}; this provider has {', '.join(sorted(HANDLERS))}")
    if not isinstance(args, dict):
        return error("arguments must be a JSON object")
    try:
        return json.dumps(handler(binding, args), ensure_ascii=False, default=str)
    except InvalidInput as problem:
        return error(f"{problem.field}: {problem.message}")
    except Refused as refusal:
        return error(str(refusal))
