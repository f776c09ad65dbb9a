"""Example values of the REST API's OpenAPI schema, shared by the views of every resource."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample

_FACT = {
    "id": 42,
    "kind": "fact",
    "content": "Alice prefers green tea over coffee in the morning",
    "scope": "user:alice",
    "session_id": "",
    "position": None,
    "speaker": "",
    "category": "user_pref",
    "tags": ["drinks"],
    "metadata": {},
    "trust_score": 0.55,
    "helpful_count": 1,
    "unhelpful_count": 0,
    "retrieval_count": 3,
    "last_retrieved_at": "2026-12-02T10:00:00Z",
    "importance": 0.4,
    "pinned": False,
    "mention_count": 1,
    "status": "active",
    "superseded_by": None,
    "embedded": True,
    "created_by": "apikey:7:hermes-research",
    "created_at": "2026-12-01T09:30:00Z",
    "updated_at": "2026-12-02T10:00:00Z",
}
_ENTITY = {
    "id": 5, "name": "Alice", "type": "person", "aliases": ["ali"], "fact_count": 12,
    "created_at": "2026-12-01T09:30:00Z",
}  # fmt: skip
_AUDIT = {
    "source": "fact", "id": 901, "action": "feedback", "actor": "apikey:7:hermes-research",
    "fact_id": 42, "target": "", "before": {"trust_score": 0.5},
    "after": {"trust_score": 0.55, "helpful": True}, "at": "2026-12-02T10:00:00Z",
}  # fmt: skip
_CURSOR = "MjAyNi0xMi0wMVQwOTozMDowMCswMDowMHw0Mg=="


_JOB = {
    "id": 3, "status": "running", "reason": "dictionary: Northstar", "total": 12000,
    "done": 4800, "percent": 40, "error": "", "created_by": "user:1:olivia",
    "created_at": "2026-12-02T10:00:00Z", "started_at": "2026-12-02T10:00:01Z",
    "finished_at": None,
}  # fmt: skip


_ENTITY_EVENT = {
    "id": 12, "entity_id": 5, "action": "merge", "actor": "user:1:olivia",
    "before": {"name": "老王", "aliases": []},
    "after": {"aliases": ["王总"], "merged": {"id": 9, "name": "王总", "type": "person",
              "aliases": []}, "relinked_facts": 4},
    "at": "2026-12-02T10:00:00Z",
}  # fmt: skip
_HITS = {"results": [{"fact": _FACT, "score": 0.55, "entities": ["Northstar"], "hops": 1}]}
_TERM = {"term": "北极星计划", "type": "product", "created_by": "user:1:olivia",
         "created_at": "2026-12-02T10:00:00Z"}  # fmt: skip
_CONFLICT = {
    "id": 7, "status": "open", "reason": "value", "score": 0.9,
    "fact_a": _FACT, "fact_b": _FACT | {"id": 43, "content": "Alice prefers coffee now"},
    "resolution": "", "note": "", "detected_by": "job:conflicts",
    "detected_at": "2026-12-02T10:00:00Z", "resolved_by": "", "resolved_at": None,
}  # fmt: skip


def _answer(name: str, value: Any) -> list[OpenApiExample]:
    return [OpenApiExample(name, value=value, response_only=True)]
