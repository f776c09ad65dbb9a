"""What the agent endpoints do for a Hermes profile: the `fact_store` and `fact_feedback` tools,
and the writes its local buffer sends (turns, facts, mirrored built-in memories, session ends).

Argument names, enums and result shapes of the tools are those of Hermes' bundled holographic
provider (schemas in `agenttools.hermes_schemas`), so a profile can switch providers without the
model (or its user) relearning anything.

These functions validate, call one service or selector, and format. A bad argument raises
InvalidInput naming it; a call the key may not make raises Refused. The tenant comes from the
request's API key and cannot be named by any argument.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agenttools.candidates import candidate_facts
from agenttools.hermes_schemas import (
    ACTIONS,
    CATEGORIES,
    FACT,
    FEEDBACK_ACTIONS,
    KINDS,
    MAX_LIMIT,
    TURN,
)
from facts.inputs import (
    ToolArguments,
    clean_entity_name,
    clean_scope,
    entity_names,
    fact_changes,
    fact_draft,
)
from facts.models import Fact
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.models import Tenant

HERMES_MEMORY_TAG = "hermes-memory"
WRITE_OPS = ("turn", "fact", "memory", "session_end")


class Refused(Exception):
    """The call is well formed but this key may not do it (e.g. a read-only key writes)."""


@dataclass(frozen=True)
class Binding:
    """Who the profile acts for: the request's API key, with the profile's scope and session."""

    tenant: Tenant  # with the profile's setting overrides applied (never saved)
    actor: Actor
    key_prefix: str
    can_read: bool
    can_write: bool
    scope: str
    session_id: str


# -- arguments --------------------------------------------------------------------------------


def _args(args: dict[str, Any]) -> ToolArguments:
    return ToolArguments(args, required="is required for this action")


def _limit(args: ToolArguments) -> int:
    return args.whole("limit", low=1, high=MAX_LIMIT, default=10)


def _read_scope(binding: Binding, args: ToolArguments) -> str:
    given = args.given("scope")
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


def _add(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
    from facts.services import fact_add

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
    from retrieval.inputs import recall_query
    from retrieval.search import recall_search

    _need(binding, write=False)
    args = _args(raw)
    hits = recall_search(
        tenant=binding.tenant,
        query=recall_query(
            {
                "query": args.text("query", required=True),
                "k": _limit(args),
                "scope": _read_scope(binding, args),
                "kind": args.choice("kind", KINDS),
                "category": args.choice("category", CATEGORIES),
                "min_trust": args.number("min_trust", low=0.0, high=1.0),
            }
        ),
    ).hits
    return _results([fact_json(h.fact, h.score, channels=h.channels) for h in hits])


def _graph_rows(hits: list[Any]) -> dict[str, Any]:
    return _results([fact_json(h.fact, h.score, entities=h.entities, hops=h.hops) for h in hits])


def _entity_action(selector: Callable[..., list[Any]]) -> Callable[[Binding, dict], dict]:
    def action(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
        _need(binding, write=False)
        args = _args(raw)
        entity = clean_entity_name("entity", args.given("entity"))
        filters = dict(
            scope=_read_scope(binding, args),
            category=args.choice("category", CATEGORIES),
            kind=args.choice("kind", KINDS),
        )
        hits = selector(tenant=binding.tenant, name=entity, limit=_limit(args), **filters)
        if hits:
            return _graph_rows(hits)
        # No such entity: what the words find, as the holographic provider falls back to.
        return _search(binding, {**raw, "query": entity}) | {"matched_by": "text"}

    return action


def _probe(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from facts.graph import entity_facts

    return _entity_action(entity_facts)(binding, args)


def _related(binding: Binding, args: dict[str, Any]) -> dict[str, Any]:
    from facts.graph import entity_related

    return _entity_action(entity_related)(binding, args)


def _reason(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
    from facts.graph import entities_reason

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
    from facts.graph import fact_contradictions

    _need(binding, write=False)
    args = _args(raw)
    pairs = fact_contradictions(
        tenant=binding.tenant,
        scope=_read_scope(binding, args),
        category=args.choice("category", CATEGORIES),
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


def _update(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
    from facts.services import fact_update

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
    from facts.services import fact_remove

    _need(binding, write=True)
    fact_id = _args(raw).fact_id()
    try:
        fact_remove(tenant=binding.tenant, fact_id=fact_id, actor=binding.actor)
    except NotFound:
        return {"removed": False, "reason": f"fact {fact_id} not found"}
    return {"removed": True}


def _list(binding: Binding, raw: dict[str, Any]) -> dict[str, Any]:
    from facts.selectors.facts import fact_list

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
    from facts.services import fact_feedback as rate

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


def _said(payload: dict[str, Any]) -> list[tuple[str, str]]:
    said = payload.get("said")
    if not isinstance(said, list) or not all(
        isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        for pair in said
    ):
        raise InvalidInput("said", "must be a list of [speaker, text] pairs")
    return [(speaker, text) for speaker, text in said]


def _payload_text(payload: dict[str, Any], name: str) -> str:
    value = payload.get(name) or ""
    if not isinstance(value, str):
        raise InvalidInput(name, "must be text")
    return value.strip()


def _at(payload: dict[str, Any]) -> datetime | None:
    value = payload.get("at")
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise InvalidInput("at", "must be an ISO 8601 date and time") from None


def _write_turn(binding: Binding, key: str, payload: dict[str, Any]) -> None:
    from facts.services import fact_add

    at = _at(payload)
    for index, (speaker, text) in enumerate(_said(payload)):
        if not text.strip():
            continue
        fact_add(
            tenant=binding.tenant,
            actor=binding.actor,
            draft=fact_draft(
                {
                    "content": text,
                    "kind": TURN,
                    "session_id": _payload_text(payload, "session_id")
                    or binding.session_id
                    or "hermes",
                    "speaker": speaker,
                    "scope": payload.get("scope") or binding.scope,
                    "metadata": payload.get("metadata"),
                    "created_at": at,
                    "idempotency_key": f"{key}:{index}",
                }
            ),
        )


def _write_fact(binding: Binding, key: str, payload: dict[str, Any]) -> None:
    from facts.services import fact_add

    fact_add(
        tenant=binding.tenant,
        actor=binding.actor,
        draft=fact_draft(
            {
                "content": _payload_text(payload, "content"),
                "category": payload.get("category"),
                "tags": payload.get("tags"),
                "scope": payload.get("scope") or binding.scope,
                "metadata": payload.get("metadata"),
                "idempotency_key": key,
            }
        ),
    )


def _write_memory(binding: Binding, key: str, payload: dict[str, Any]) -> None:
    """Mirror a write of Hermes' built-in memory tool: add, replace or remove an entry."""
    from facts.services import fact_add, fact_remove
    from retrieval.inputs import recall_query
    from retrieval.search import recall_search

    action = payload.get("action")
    if action not in ("add", "replace", "remove"):
        raise InvalidInput("action", "must be one of add, replace, remove")
    target = _payload_text(payload, "target") or "memory"
    old_text = _payload_text(payload, "old_text")
    content = _payload_text(payload, "content")
    if action in ("replace", "remove") and old_text:
        # Hermes names the old entry by a piece of its text: find the mirrored facts that
        # contain it.
        hits = recall_search(
            tenant=binding.tenant,
            query=recall_query({"query": old_text, "k": 20, "kind": FACT, "min_trust": 0}),
        ).hits
        for hit in hits:
            fact = hit.fact
            if HERMES_MEMORY_TAG in fact.tags and old_text in fact.content:
                fact_remove(tenant=binding.tenant, fact_id=fact.pk, actor=binding.actor)
    if action in ("add", "replace") and content:
        fact_add(
            tenant=binding.tenant,
            actor=binding.actor,
            draft=fact_draft(
                {
                    "content": content,
                    "category": "user_pref" if target == "user" else "general",
                    "tags": [HERMES_MEMORY_TAG, target],
                    "scope": payload.get("scope") or binding.scope,
                    "metadata": {"source": "hermes-memory", "target": target},
                    "idempotency_key": key,
                }
            ),
        )


def session_end(binding: Binding, key: str, said: list[str], session_id: str) -> int:
    """Auto-extraction at the end of a session: the candidate facts in what the user said,
    stored once each (a re-sent key stores nothing new). Returns how many candidates."""
    from facts.services import fact_add

    candidates = candidate_facts(said)
    for index, candidate in enumerate(candidates):
        fact_add(
            tenant=binding.tenant,
            actor=binding.actor,
            draft=fact_draft(
                {
                    "content": candidate.content,
                    "category": candidate.category,
                    "tags": ["auto-extracted"],
                    "scope": binding.scope,
                    "metadata": {
                        "source": "auto-extract",
                        "rule": candidate.rule,
                        "session_id": session_id,
                    },
                    "idempotency_key": f"{key}:{index}",
                }
            ),
        )
    return len(candidates)


def _write_session_end(binding: Binding, key: str, payload: dict[str, Any]) -> None:
    said = payload.get("said")
    if not isinstance(said, list) or not all(isinstance(text, str) for text in said):
        raise InvalidInput("said", "must be a list of texts")
    session_end(binding, key, said, _payload_text(payload, "session_id") or binding.session_id)


_WRITES: dict[str, Callable[[Binding, str, dict[str, Any]], None]] = {
    "turn": _write_turn,
    "fact": _write_fact,
    "memory": _write_memory,
    "session_end": _write_session_end,
}


def agent_write(binding: Binding, *, op: str, key: str, payload: dict[str, Any]) -> None:
    """One buffered write, exactly once: its idempotency key goes with every fact it stores."""
    if not binding.can_write:
        raise Refused("this profile's API key is read-only: it may not change memories")
    _WRITES[op](binding, key, payload)
