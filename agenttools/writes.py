"""The writes a Hermes profile's local buffer sends (turns, facts, mirrored built-in memories,
session ends), each stored exactly once: its idempotency key goes with every fact it stores.
The REST agent endpoint `POST /api/v1/agent/writes` runs them; the tenant, author and scope
limit are the key's (`agenttools.core.Binding`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from agentspec.candidates import candidate_facts
from agentspec.hermes import FACT, TURN
from agenttools.core import WRITE, Binding, Refused
from agenttools.hermes import READ_ONLY
from facts.inputs import fact_draft
from facts.services import fact_add, fact_remove
from retrieval.inputs import recall_query
from retrieval.search import recall_search
from tenants.errors import InvalidInput

HERMES_MEMORY_TAG = "hermes-memory"
WRITE_OPS = ("turn", "fact", "memory", "session_end")


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
    if not binding.may(WRITE):
        raise Refused(READ_ONLY)
    _WRITES[op](binding, key, payload)
