"""What the MCP tools, resources and prompt do, for one API key: parse, call one service or
selector, format. Synchronous Django code; `mcp_server.server` runs it in the web request's own
thread.

The tenant, the author of every change and the scope prefix come from the key (`Binding`), never
from an argument. Errors are answers, not exceptions: a bad argument is `{"error": "<argument>:
<what is wrong>"}`, another tenant's fact is "not found" exactly like a missing one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from django.db import InterfaceError, OperationalError

from agentspec import mcp as catalog
from agentspec.mcp import ToolSpec
from agenttools import arguments as inputs
from agenttools import core
from agenttools.core import Binding, Refused, results, scope_of, scopes_of, visible
from facts.graph import entity_facts, entity_related
from facts.inputs import MAX_ID, clean_scope, fact_changes, fact_draft
from facts.models import Fact, Kind
from facts.selectors.facts import fact_get, fact_list
from facts.services import fact_add, fact_feedback, fact_remove, fact_update
from retrieval.context import context_cached, retrievals_record
from retrieval.latency import recall_latency_note
from tenants.errors import InvalidInput, NotFound
from tenants.inputs import scope_outside
from tenants.scope import scope_within

logger = logging.getLogger(__name__)

UNAVAILABLE = (
    "the memory store is unavailable right now (its database does not answer); try again shortly"
)


class StoreUnavailable(Exception):
    """The database does not answer (not even to check the key)."""


@dataclass(frozen=True)
class Outcome:
    payload: dict[str, Any]
    is_error: bool = False


# -- results -------------------------------------------------------------------------------------


def fact_json(fact: Fact, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "fact_id": fact.pk,
        "content": fact.content,
        "kind": fact.kind,
        "scope": fact.scope,
        "category": fact.category,
        "tags": list(fact.tags),
        "trust_score": round(fact.trust_score, 6),
        "created_at": fact.created_at.isoformat(),
    }
    if fact.kind == Kind.TURN:
        row.update(session_id=fact.session_id, position=fact.position, speaker=fact.speaker)
    row.update(extra)
    return row


# -- read tools ----------------------------------------------------------------------------------


def _search(binding: Binding, args: inputs.Arguments) -> dict[str, Any]:
    return _recall(binding, inputs.search_args(args))


def _shown(binding: Binding, hits: list[Any]) -> list[dict[str, Any]]:
    """An agent was shown these: they count as retrieved."""
    retrievals_record(tenant=binding.tenant, fact_ids=[hit.fact.pk for hit in hits])
    return [
        fact_json(
            hit.fact, score=round(hit.score, 6), relevance=round(hit.relevance, 6), weak=hit.weak
        )
        for hit in hits
    ]


def _recall(binding: Binding, given: inputs.SearchArgs) -> dict[str, Any]:
    result = core.recall(
        binding,
        query=given.query,
        k=given.k,
        scope=given.scope,
        kind=given.kind,
        category=given.category,
        min_trust=given.min_trust,
        **given.filters,
    )
    # The wait goes on the dashboard.
    recall_latency_note(tenant=binding.tenant, ms=result.timings_ms["total"])
    return results(_shown(binding, result.hits))


def _context(binding: Binding, args: inputs.Arguments) -> dict[str, Any]:
    given = inputs.context_args(args)
    if given.scope and given.scopes:
        raise InvalidInput("scopes", "give scope or scopes, not both")
    block = context_cached(
        tenant=binding.tenant,
        query=given.task or None,
        scope=scope_of(binding, given.scope) or None,
        scopes=tuple(scopes_of(binding, given.scopes)) if given.scopes else (),
        budget=given.budget,
    )
    return {"text": block.text, "tokens": block.tokens, "fact_ids": block.levels}


def _graph(selector: Callable[..., list[Any]], fallback: bool) -> Callable[..., dict[str, Any]]:
    def run(binding: Binding, args: inputs.Arguments) -> dict[str, Any]:
        given = inputs.entity_args(args)
        hits, matched_by = core.entity_recall(
            binding,
            selector,
            name=given.entity,
            limit=given.limit,
            fallback=fallback,
            scope=given.scope,
            kind=given.kind,
        )
        if matched_by == "text":
            return results(_shown(binding, hits), matched_by="text")
        rows = [
            fact_json(hit.fact, score=round(hit.score, 6), entities=hit.entities, hops=hit.hops)
            for hit in hits
        ]
        return results(rows, matched_by="entity")

    return run


def _recent(binding: Binding, args: inputs.Arguments) -> dict[str, Any]:
    given = inputs.recent_args(args)
    page = fact_list(
        tenant=binding.tenant,
        scope_prefix=scope_of(binding, given.scope) or None,
        kind=given.kind,
        category=given.category,
        limit=given.limit,
        cursor=given.cursor,
    )
    return results([fact_json(fact) for fact in page.facts], next_cursor=page.next_cursor)


# -- write tools ---------------------------------------------------------------------------------


def _store(binding: Binding, args: inputs.Arguments) -> dict[str, Any]:
    given = inputs.store_args(args)
    result = fact_add(
        tenant=binding.tenant,
        actor=binding.actor,
        draft=fact_draft(
            {
                "content": given.content,
                "scope": scope_of(binding, given.scope),
                "category": given.category,
                "tags": given.tags,
                "pinned": given.pinned,
            }
        ),
    )
    return {"fact_id": result.fact.pk, "status": result.status, "scope": result.fact.scope}


def _feedback(binding: Binding, args: inputs.Arguments) -> dict[str, Any]:
    given = inputs.feedback_args(args)
    visible(binding, given.fact_id)
    result = fact_feedback(
        tenant=binding.tenant, fact_id=given.fact_id, helpful=given.helpful, actor=binding.actor
    )
    return asdict(result)  # fact_id, old and new trust, helpful and unhelpful counts


def _update(binding: Binding, args: inputs.Arguments) -> dict[str, Any]:
    given = inputs.update_args(args)
    visible(binding, given.fact_id)
    changes = dict(given.changes)
    if "scope" in changes:
        moved = clean_scope(changes["scope"])
        if not scope_within(moved, binding.limit):
            raise scope_outside(binding.limit)
        changes["scope"] = moved
    fact = fact_update(
        tenant=binding.tenant,
        fact_id=given.fact_id,
        actor=binding.actor,
        changes=fact_changes({**changes}),
    )
    return {"fact_id": fact.pk, "updated": True, "fact": fact_json(fact)}


def _remove(binding: Binding, args: inputs.Arguments) -> dict[str, Any]:
    given = inputs.remove_args(args)
    visible(binding, given.fact_id)
    fact = fact_remove(tenant=binding.tenant, fact_id=given.fact_id, actor=binding.actor)
    return {"fact_id": fact.pk, "removed": True}


HANDLERS: dict[str, Callable[[Binding, inputs.Arguments], dict[str, Any]]] = {
    "memory_search": _search,
    "memory_context": _context,
    "memory_probe": _graph(entity_facts, fallback=True),
    "memory_related": _graph(entity_related, fallback=False),
    "memory_recent": _recent,
    "memory_store": _store,
    "memory_feedback": _feedback,
    "memory_update": _update,
    "memory_remove": _remove,
}


# -- the entry points the server calls -----------------------------------------------------------


def tools_for(binding: Binding) -> list[ToolSpec]:
    """The tools this key may call: a read key sees no tool that changes memory."""
    return [tool for tool in catalog.TOOLS if binding.may(tool.need)]


def _error(message: str) -> Outcome:
    return Outcome({"error": message}, is_error=True)


def tool_call(binding: Binding, name: str, arguments: Any) -> Outcome:
    """Run one tool call. Never raises for anything a caller did or a database outage."""
    spec = catalog.TOOLS_BY_NAME.get(name)
    if spec is None:
        known = ", ".join(tool.name for tool in tools_for(binding))
        return _error(f"unknown tool {name!r}; this server has {known}")
    try:
        if not binding.may(spec.need):
            may = " and ".join(sorted(binding.rights)) or "do nothing"
            raise Refused(f"{name} needs a key that may {spec.need}; this API key may only {may}")
        return Outcome(HANDLERS[name](binding, inputs.Arguments(spec, arguments)))
    except InvalidInput as problem:
        return _error(f"{problem.field}: {problem.message}")
    except NotFound as missing:
        field = "fact_id" if missing.what == "fact" else missing.what
        return _error(f"{field}: {missing}")
    except Refused as refusal:
        return _error(str(refusal))
    except (OperationalError, InterfaceError):
        logger.warning("tenant %s: MCP tool %s failed", binding.tenant.pk, name, exc_info=True)
        return _error(UNAVAILABLE)


# -- resources and the prompt ------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    text: str
    mime_type: str


def _fact_line(fact: Fact) -> str:
    notes = [fact.category] if fact.category != "general" else []
    notes.append(f"trust {fact.trust_score:.2f}")
    return f"- [fact {fact.pk}] {' '.join(fact.content.split())} ({'; '.join(notes)})"


def known_facts(binding: Binding) -> Document:
    """The team's most important facts (those an agent reads first), with their ids."""
    block = context_cached(tenant=binding.tenant, scope=binding.scope or None, important=True)
    facts = [fact_get(tenant=binding.tenant, fact_id=i) for i in block.levels.get("important", [])]
    where = f" (scope {binding.scope})" if binding.scope else ""
    lines = [f"# Known facts of {binding.tenant.name}{where}", ""]
    lines += [_fact_line(fact) for fact in facts] or ["(none yet)"]
    return Document("\n".join(lines) + "\n", "text/markdown")


def fact_document(binding: Binding, fact_id: str) -> Document:
    try:
        ident = int(fact_id)
    except ValueError:
        raise NotFound("fact", fact_id) from None
    if not 0 < ident <= MAX_ID:
        raise NotFound("fact", fact_id)
    fact = visible(binding, ident)
    row = fact_json(
        fact,
        status=fact.status,
        helpful_count=fact.helpful_count,
        unhelpful_count=fact.unhelpful_count,
        retrieval_count=fact.retrieval_count,
        created_by=fact.created_by,
        updated_at=fact.updated_at.isoformat(),
    )
    return Document(json.dumps(row, ensure_ascii=False), "application/json")


def prompt_text(binding: Binding, task: str | None) -> str:
    """How an agent should use this memory; what it may change depends on the key."""
    lines = [
        f"You have access to {binding.tenant.name}'s shared long-term memory (Mnemosyne) "
        "through the memory_* tools.",
        "",
        "- Before you answer anything about the user, the team, its projects or its "
        "conventions, call memory_context with the task, or memory_search with a question. "
        "memory_probe gathers everything about one person or thing.",
        "- Each memory has a fact_id. Mention the ids of the memories you relied on.",
    ]
    if binding.may("write"):
        lines += [
            "- After relying on a memory, call memory_feedback: helpful true if it was right, "
            "false if it was wrong or outdated.",
            "- When you learn something durable (a preference, a decision, a convention), "
            "store it with memory_store: one self-contained fact per call, in the scope it "
            "belongs to. Never store secrets.",
            "- Correct a wrong memory with memory_update; memory_remove one that is no longer "
            "true.",
        ]
    else:
        lines.append("- This memory is read-only for you: you cannot store or change memories.")
    if task:
        lines += ["", f"Your task: {task}", "Start by calling memory_context with this task."]
    return "\n".join(lines)
