"""What an imported bundle's records must hold, checked before anything of them is written.

A bundle's checksums prove it arrived as it was written; these checks prove that what was
written can be stored: every field a record carries has the type and the range its column
takes. A record that fails is refused with a BundleError naming the record and the field
(`record 3 (fact 12): trust_score: ...`), and the import stores nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from typing import Any

from facts.bundles import BundleError, BundleRecord
from facts.entities import entity_normalize
from facts.models import Category, EntityRole, EntityType, EventAction, Kind

Check = Callable[[Any], str | None]  # None when the value is good, else what is wrong
INT_MAX = 2**31 - 1


def _text(limit: int | None = None, *, empty: bool = True) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, str):
            return "must be text"
        if not empty and not value.strip():
            return "must not be empty"
        if limit is not None and len(value) > limit:
            return f"must be at most {limit} characters"
        return None

    return check


def _choice(values: list[str]) -> Check:
    def check(value: Any) -> str | None:
        return None if value in values else f"must be one of {', '.join(values)}"

    return check


def _count(value: Any) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= INT_MAX:
        return f"must be a whole number from 0 to {INT_MAX}"
    return None


def _number(low: float | None = None, high: float | None = None) -> Check:
    def check(value: Any) -> str | None:
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if not numeric or not math.isfinite(value):
            return "must be a number"
        if (low is not None and value < low) or (high is not None and value > high):
            return f"must be a number from {low} to {high}"
        return None

    return check


def _moment(value: Any) -> str | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        return "must be a date and time with its UTC offset (ISO 8601), or null"
    return None


def _optional(check: Check) -> Check:
    return lambda value: None if value is None else check(value)


def _list_of(check: Check, what: str) -> Check:
    def checked(value: Any) -> str | None:
        if not isinstance(value, list) or any(check(item) for item in value):
            return f"must be a list of {what}"
        return None

    return checked


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _object(value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be an object"


def _ident(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


def _link(value: Any) -> str | None:
    good = (
        isinstance(value, list)
        and len(value) == 2
        and _ident(value[0])
        and value[1] in EntityRole.values
    )
    return None if good else "must be [entity id, role]"


# Required fields, then optional ones (missing: the column's default).
FACT_REQUIRED: dict[str, Check] = {
    "kind": _choice(Kind.values),
    "content": _text(empty=False),
    "scope": _text(255),
    "session_id": _text(128),
    "position": _optional(_count),
    "speaker": _text(100),
    "category": _choice(Category.values),
    "tags": _list_of(_text(64), "tags of at most 64 characters"),
    "metadata": _object,
    "trust_score": _number(0, 1),
    "helpful_count": _count,
    "unhelpful_count": _count,
    "retrieval_count": _count,
    "last_retrieved_at": _moment,
    "importance": _number(),
    "mention_count": _count,
    "status": _text(12),
    "created_by": _text(200),
    "created_at": _moment,
}
FACT_OPTIONAL: dict[str, Check] = {
    "pinned": _boolean,
    "archived_at": _moment,
    "updated_at": _moment,
    "entities": _list_of(_link, "[entity id, role] pairs"),
    "feedback": _list_of(_object, "objects"),
    "history": _list_of(_object, "objects"),
}
FEEDBACK: dict[str, Check] = {"helpful": _boolean, "actor": _text(200, empty=False)}
EVENT: dict[str, Check] = {
    "action": _choice(EventAction.values),
    "actor": _text(200 - len("imported:"), empty=False),
}
EVENT_OPTIONAL: dict[str, Check] = {"at": _moment}


def _entity_name(value: Any) -> str | None:
    if problem := _text(200, empty=False)(value):
        return problem
    if len(entity_normalize(value)) > 200:
        return "must be at most 200 characters once normalised"
    return None


ENTITY_REQUIRED: dict[str, Check] = {"name": _entity_name}
ENTITY_OPTIONAL: dict[str, Check] = {
    "type": _optional(_choice(EntityType.values)),
    "aliases": _optional(_list_of(_text(200), "names of at most 200 characters")),
}


def _fields(
    body: dict[str, Any],
    required: dict[str, Check],
    optional: dict[str, Check],
    prefix: str = "",
) -> str | None:
    """What is wrong with the first bad field of `body`, the field named; None when none is."""
    for name, check in required.items():
        if name not in body:
            return f"{prefix}{name}: is missing"
        if problem := check(body[name]):
            return f"{prefix}{name}: {problem}"
    for name, check in optional.items():
        if name in body and (problem := check(body[name])):
            return f"{prefix}{name}: {problem}"
    return None


def _fact_problem(body: dict[str, Any]) -> str | None:
    if problem := _fields(body, FACT_REQUIRED, FACT_OPTIONAL):
        return problem
    for number, row in enumerate(body.get("feedback", [])):
        if problem := _fields(row, FEEDBACK, {"at": _moment}, f"feedback[{number}]."):
            return problem
    for number, row in enumerate(body.get("history", [])):
        if problem := _fields(row, EVENT, EVENT_OPTIONAL, f"history[{number}]."):
            return problem
    return None


def _vector_problem(body: dict[str, Any], served: tuple[str, int] | None) -> str | None:
    if problem := _text(100, empty=False)(body.get("model")):
        return f"model: {problem}"
    embedding = body.get("embedding")
    if not isinstance(embedding, list) or not embedding or any(_number()(x) for x in embedding):
        return "embedding: must be a list of numbers"
    if served is not None and body["model"] == served[0] and len(embedding) != served[1]:
        return f"embedding: must have {served[1]} numbers, the dimension of {served[0]}"
    return None


def _nul_at(value: Any, path: str) -> str | None:
    """Where `value` holds a NUL character (PostgreSQL's text and jsonb refuse it), or None."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        items = [(f"{path}.{k}" if path else str(k), v) for k, v in value.items()]
        if any("\x00" in k for k in value):
            return path or "a key"
    elif isinstance(value, list):
        items = [(f"{path}[{n}]", v) for n, v in enumerate(value)]
    for inner, item in items:
        if (found := _nul_at(item, inner)) is not None:
            return found
    return None


def bundle_record_check(record: BundleRecord, *, served: tuple[str, int] | None = None) -> None:
    """Raise BundleError naming the record and its first bad field. `served`: the model whose
    vectors the import keeps, and its dimension (None: it keeps none)."""
    body = record.body
    if not isinstance(body, dict):
        problem: str | None = "its body is not an object"
    elif (where := _nul_at(body, "")) is not None:
        problem = f"{where}: holds a NUL character, which the database cannot store"
    elif record.type == "fact":
        problem = _fact_problem(body)
    elif record.type == "entity":
        problem = _fields(body, ENTITY_REQUIRED, ENTITY_OPTIONAL)
    elif record.type == "vector":
        problem = _vector_problem(body, served)
    else:
        problem = None
    if problem is not None:
        raise BundleError(problem, record.label)
