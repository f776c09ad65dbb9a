"""Raw input about facts, parsed once into frozen typed values; a bad value raises InvalidInput
naming its field.

Every surface (REST API, pages, Hermes agent tools, MCP tools, importers, the command line)
parses through these functions, and the services take only the values they return. The limits
and choices of a fact live here and nowhere else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agentspec.limits import (
    MAX_CONTENT_CHARS as MAX_CONTENT_CHARS,
)
from agentspec.limits import (
    MAX_ENTITY_NAME_CHARS as MAX_ENTITY_NAME_CHARS,
)
from agentspec.limits import MAX_ID as MAX_ID
from agentspec.limits import MAX_TAG_CHARS as MAX_TAG_CHARS
from agentspec.limits import MAX_TAGS as MAX_TAGS
from facts.entities import entity_normalize
from facts.models import Category, ConflictResolution, EntityType, Kind
from tenants.errors import InvalidInput
from tenants.inputs import MAX_SCOPE_CHARS as MAX_SCOPE_CHARS
from tenants.inputs import clean_scope as clean_scope
from tenants.validation import check_choice, check_storable

MAX_METADATA_BYTES = 16 * 1024
MAX_SESSION_ID_CHARS = 128
MAX_SPEAKER_CHARS = 100
MAX_IDEMPOTENCY_KEY_CHARS = 128
MAX_POSITION = 2**31 - 1
MAX_BULK = 200
MAX_PURGE_REASON_CHARS = 500
MAX_TERM_CHARS = 100
MAX_NOTE_CHARS = 1000
MAX_ACTOR_CHARS = 200  # an audit filter by author: user:3, apikey:7, job:retention
DECISIONS: tuple[str, ...] = tuple(ConflictResolution.values)
CATEGORIES: list[str] = list(Category.values)
KINDS: list[str] = list(Kind.values)
# `type:name` segments joined by "/": user:alice/project:beta. Names may be any script.


# -- one value each -------------------------------------------------------------------------------


def clean_content(content: Any) -> str:
    if not isinstance(content, str):
        raise InvalidInput("content", "must be text")
    text = content.replace("\x00", "").strip()
    if not text:
        raise InvalidInput("content", "must not be empty")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInput("content", f"is longer than {MAX_CONTENT_CHARS:,} characters")
    return text


def clean_category(category: Any) -> str:
    if category is None:
        return Category.GENERAL
    return str(check_choice("category", category, Category.values))


def clean_tags(tags: Any) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = [t for t in tags.split(",")]
    if not isinstance(tags, list | tuple) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput("tags", "must be a list of text (or comma-separated text)")
    clean = tuple(dict.fromkeys(t.strip().lower() for t in tags if t.strip()))
    if len(clean) > MAX_TAGS:
        raise InvalidInput("tags", f"at most {MAX_TAGS} tags")
    if any(len(t) > MAX_TAG_CHARS for t in clean):
        raise InvalidInput("tags", "each tag is at most 64 characters")
    return clean


def clean_kind(kind: Any) -> str:
    if kind is None:
        return Kind.FACT
    return str(check_choice("kind", kind, Kind.values))


def clean_short(name: str, value: Any, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit:
        raise InvalidInput(name, f"must be text of at most {limit} characters")
    return value.strip()


def clean_metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata", "must be an object")
    try:
        size = len(json.dumps(metadata).encode())
    except (TypeError, ValueError):
        raise InvalidInput("metadata", "must be JSON") from None
    if size > MAX_METADATA_BYTES:
        raise InvalidInput("metadata", f"is larger than {MAX_METADATA_BYTES // 1024} KiB")
    return metadata


def clean_flag(name: str, value: Any) -> bool:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if not isinstance(value, bool):
        raise InvalidInput(name, "must be true or false")
    return value


def clean_trust(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InvalidInput(name, "must be a number")
    if not low <= value <= high:
        raise InvalidInput(name, f"must be between {low:g} and {high:g}")
    return float(value)


def clean_position(position: Any) -> int | None:
    if position is None:
        return None
    if (
        isinstance(position, bool)
        or not isinstance(position, int)
        or not 0 <= position <= MAX_POSITION
    ):
        raise InvalidInput("position", "must be a whole number from 0 to 2147483647")
    return position


def clean_time(name: str, value: Any) -> datetime | None:
    """An ISO 8601 time (a datetime passes as it is); without a zone it is UTC."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None:
        raise InvalidInput(name, "must be an ISO 8601 time, e.g. 2026-01-31T09:30:00Z")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# -- a new fact -----------------------------------------------------------------------------------

DRAFT_FIELDS = (
    "content", "kind", "scope", "category", "tags", "session_id", "position", "speaker",
    "metadata", "trust", "created_at", "idempotency_key", "pinned",
)  # fmt: skip


@dataclass(frozen=True)
class FactDraft:
    """A memory to store, every field checked and in its one form."""

    content: str
    kind: str = Kind.FACT
    scope: str = ""
    category: str = Category.GENERAL
    tags: tuple[str, ...] = ()
    session_id: str = ""
    position: int | None = None
    speaker: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    trust: float | None = None  # None: the tenant's default_trust
    created_at: datetime | None = None  # None: now
    idempotency_key: str = ""
    pinned: bool = False


def fact_draft(raw: Mapping[str, Any]) -> FactDraft:
    """A new fact or turn from raw fields (those of DRAFT_FIELDS; `pin` is taken for `pinned`)."""
    raw = dict(raw)
    if "pin" in raw:
        raw.setdefault("pinned", raw.pop("pin"))
    unknown = sorted(set(raw) - set(DRAFT_FIELDS))
    if unknown:
        raise InvalidInput(unknown[0], f"unknown field (known: {', '.join(DRAFT_FIELDS)})")
    pinned = clean_flag("pin", raw.get("pinned", False))
    content = clean_content(raw.get("content"))
    key = clean_short("idempotency_key", raw.get("idempotency_key"), MAX_IDEMPOTENCY_KEY_CHARS)
    kind = clean_kind(raw.get("kind"))
    draft = FactDraft(
        content=content,
        kind=kind,
        scope=clean_scope(raw.get("scope")),
        category=clean_category(raw.get("category")),
        tags=clean_tags(raw.get("tags")),
        session_id=clean_short("session_id", raw.get("session_id"), MAX_SESSION_ID_CHARS),
        speaker=clean_short("speaker", raw.get("speaker"), MAX_SPEAKER_CHARS),
        metadata=clean_metadata(raw.get("metadata")),
        trust=None if raw.get("trust") is None else clean_trust("trust", raw["trust"], 0.0, 1.0),
        position=clean_position(raw.get("position")),
        created_at=clean_time("created_at", raw.get("created_at")),
        idempotency_key=key,
        pinned=pinned,
    )
    if kind == Kind.TURN and not draft.session_id:
        raise InvalidInput("session_id", "a turn belongs to a session")
    return draft


# -- changes to a fact ----------------------------------------------------------------------------

CHANGE_FIELDS = ("content", "category", "tags", "scope", "trust_delta", "pinned")


@dataclass(frozen=True)
class FactChanges:
    """What to change in a fact: None leaves a field as it is."""

    content: str | None = None
    category: str | None = None
    tags: tuple[str, ...] | None = None
    scope: str | None = None
    trust_delta: float | None = None
    pinned: bool | None = None

    def given(self) -> dict[str, Any]:
        """The fields to set (all but trust_delta, which moves trust from where it is)."""
        fields = {
            "pinned": self.pinned,
            "content": self.content,
            "category": self.category,
            "tags": None if self.tags is None else list(self.tags),
            "scope": self.scope,
        }
        return {name: value for name, value in fields.items() if value is not None}


def fact_changes(raw: Mapping[str, Any]) -> FactChanges:
    """Changes from raw fields (those of CHANGE_FIELDS; `pin` is taken for `pinned`); a field
    absent from `raw` stays as it is."""
    raw = dict(raw)
    if "pin" in raw:
        raw.setdefault("pinned", raw.pop("pin"))
    unknown = sorted(set(raw) - set(CHANGE_FIELDS))
    if unknown:
        raise InvalidInput(unknown[0], f"unknown field (known: {', '.join(CHANGE_FIELDS)})")
    changes = FactChanges(
        pinned=clean_flag("pin", raw["pinned"]) if "pinned" in raw else None,
        content=clean_content(raw["content"]) if "content" in raw else None,
        category=clean_category(raw["category"]) if "category" in raw else None,
        tags=clean_tags(raw["tags"]) if "tags" in raw else None,
        scope=clean_scope(raw["scope"]) if "scope" in raw else None,
        trust_delta=(
            clean_trust("trust_delta", raw["trust_delta"], -1.0, 1.0)
            if "trust_delta" in raw
            else None
        ),
    )
    if changes == FactChanges():
        raise InvalidInput(
            "fact", "nothing to update: give content, category, tags, scope, trust_delta or pin"
        )
    return changes


# -- other writes ---------------------------------------------------------------------------------


def helpful(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput("helpful", "must be true (helpful) or false (unhelpful)")
    return value


def purge_reason(value: Any) -> str:
    reason = (value or "").strip() if isinstance(value, str | None) else ""
    if not reason:
        raise InvalidInput("reason", "a purge needs a reason for the audit trail")
    return reason


def bulk_ids(fact_ids: Any) -> tuple[int, ...]:
    if not isinstance(fact_ids, list | tuple) or not fact_ids:
        raise InvalidInput("ids", "select at least one fact")
    if len(fact_ids) > MAX_BULK:
        raise InvalidInput("ids", f"at most {MAX_BULK} facts at once")
    ids = []
    for value in fact_ids:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InvalidInput("ids", "must be fact ids")
        ids.append(value)
    return tuple(dict.fromkeys(ids))


def bulk_tag(tag: Any) -> str:
    if not isinstance(tag, str) or not tag.strip() or len(tag.strip()) > MAX_TAG_CHARS:
        raise InvalidInput("tag", "must be 1-64 characters")
    return tag.strip()


# -- entities and the user dictionary --------------------------------------------------------------


def clean_entity_name(field: str, value: Any, limit: int = MAX_ENTITY_NAME_CHARS) -> str:
    """A name as it is shown (spaces collapsed); it must say something once normalized."""
    if not isinstance(value, str) or not entity_normalize(value):
        raise InvalidInput(field, "must be a non-empty name")
    name = " ".join(value.split())
    if len(name) > limit:
        raise InvalidInput(field, f"is longer than {limit} characters")
    return name


def clean_term(value: Any) -> str:
    """A term of the user dictionary."""
    return clean_entity_name("term", value, MAX_TERM_CHARS)


def clean_entity_type(value: Any) -> str:
    if value is None:  # absent is not a type either
        raise InvalidInput("type", f"must be one of {', '.join(EntityType.values)}")
    return str(check_choice("type", value, EntityType.values))


def optional_entity_type(value: Any) -> str | None:
    """A type, or None (absent or blank: the caller's default)."""
    return None if value in (None, "") else clean_entity_type(value)


# -- conflicts ------------------------------------------------------------------------------------


def conflict_decision(value: Any) -> str:
    if value is None:  # absent is not a decision either
        raise InvalidInput("decision", f"must be one of {', '.join(DECISIONS)}")
    return str(check_choice("decision", value, list(DECISIONS)))


def conflict_note(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_NOTE_CHARS:
        raise InvalidInput("note", "must be text of at most 1000 characters")
    return value.strip()


# -- the lists' orders ----------------------------------------------------------------------------

# How a list of facts may be ordered, and how each is said.
FACT_ORDERS = {"newest": "newest first", "importance": "most important first"}


# -- the entity graph's reads --------------------------------------------------------------------

MAX_GRAPH_LIMIT = 100
MAX_GRAPH_NAMES = 10
GRAPH_HOPS = (1, 2)


def graph_limit(value: Any) -> int:
    """How many hits a graph read returns: a whole number from 1 to MAX_GRAPH_LIMIT."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_GRAPH_LIMIT:
        raise InvalidInput("limit", f"must be a whole number from 1 to {MAX_GRAPH_LIMIT}")
    return value


def graph_hops(value: Any) -> int:
    """How far `related` walks: 1 (facts naming the entity with others) or 2."""
    if isinstance(value, bool) or value not in GRAPH_HOPS:
        raise InvalidInput("hops", "must be 1 or 2")
    return int(value)


def entity_names(field: str, value: Any) -> tuple[str, ...]:
    """One to MAX_GRAPH_NAMES entity names (a list), each checked by `clean_entity_name`."""
    if not isinstance(value, list | tuple) or not value:
        raise InvalidInput(field, "must be a non-empty list of names")
    if len(value) > MAX_GRAPH_NAMES:
        raise InvalidInput(field, f"at most {MAX_GRAPH_NAMES} names")
    return tuple(clean_entity_name(field, name) for name in value)


# -- imports (JSON Lines) -------------------------------------------------------------------------

IMPORT_FIELDS = (
    "content", "kind", "scope", "category", "tags", "session_id", "position", "speaker",
    "metadata", "trust", "created_at",
)  # fmt: skip


def import_line(raw: str) -> FactDraft:
    """One line of a JSON Lines import: an object with some of IMPORT_FIELDS."""
    try:
        values = json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise InvalidInput("line", "is nested too deeply") from None
    except ValueError as error:
        raise InvalidInput("line", f"is not JSON ({error})") from None
    if not isinstance(values, dict):
        raise InvalidInput("line", "must be a JSON object, one fact per line")
    unknown = sorted(set(values) - set(IMPORT_FIELDS))
    if unknown:
        raise InvalidInput(unknown[0], f"unknown field (known: {', '.join(IMPORT_FIELDS)})")
    if "content" not in values:
        raise InvalidInput("content", "is required")
    check_storable(values, "")
    return fact_draft(values)


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")
