"""Writes of facts: add, update, remove, restore, purge, feedback; each audited.

Every function takes the tenant first and runs inside `tenant_scope(tenant)`, so the ORM guard
and PostgreSQL's row-level security both hold. Input is validated here, once, for every surface.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.contrib.postgres.search import CombinedSearchVector, SearchVector
from django.db import IntegrityError, connection, transaction
from django.db.models import F, TextField, Value
from django.utils import timezone

from facts.conflicts import fact_join, fact_near_duplicate
from facts.entities import fact_link_entities
from facts.events import fact_event_record as _event
from facts.importance import importance_of_new, importance_recompute
from facts.models import (
    MAX_TAGS,
    Category,
    EventAction,
    Fact,
    FactVector,
    Feedback,
    Kind,
    Status,
)
from retrieval.text import analyze
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.jobs import job_send
from tenants.models import Tenant
from tenants.scope import current_scope_limit, scope_within, tenant_scope
from tenants.validation import check_storable

# In characters, as the API's schema states it (a Chinese character is 3 bytes of UTF-8).
MAX_CONTENT_CHARS = 16_384
MAX_METADATA_BYTES = 16 * 1024
TRUST_HELPFUL = 0.05
TRUST_UNHELPFUL = -0.10
# `type:name` segments joined by "/": user:alice/project:beta. Names may be any script.
_SCOPE_SEGMENT = re.compile(r"^[a-z][a-z0-9_-]{0,31}:[^\s/:]{1,100}$")
# Fields an audit event snapshots.
_AUDITED = (
    "content", "kind", "scope", "category", "tags", "trust_score", "status", "session_id", "pinned",
)  # fmt: skip


# -- validation -------------------------------------------------------------------------------


def clean_content(content: Any) -> str:
    if not isinstance(content, str):
        raise InvalidInput("content", "must be text")
    text = content.replace("\x00", "").strip()
    if not text:
        raise InvalidInput("content", "must not be empty")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInput("content", f"is longer than {MAX_CONTENT_CHARS:,} characters")
    return text


def clean_scope(scope: Any) -> str:
    """A scope path, checked; under a key's scope limit, "" means the limit itself and a scope
    outside it is refused."""
    limit = current_scope_limit()
    scope = _clean_scope_path(scope)
    if limit and not scope:
        return limit
    if not scope_within(scope, limit):
        raise InvalidInput("scope", f"this API key may only use the scope {limit} and below")
    return scope


def _clean_scope_path(scope: Any) -> str:
    if scope is None:
        return ""
    if not isinstance(scope, str):
        raise InvalidInput("scope", "must be text like user:alice/project:beta")
    scope = unicodedata.normalize("NFC", scope.strip()).strip("/")
    if not scope:
        return ""
    if len(scope) > 255:
        raise InvalidInput("scope", "is longer than 255 characters")
    for segment in scope.split("/"):
        if not _SCOPE_SEGMENT.match(segment):
            raise InvalidInput(
                "scope",
                f"segment {segment!r} is not type:name (e.g. user:alice/project:beta; the type "
                "is lowercase letters, digits, _ or -; the name has no spaces, '/' or ':')",
            )
    return scope


def clean_category(category: Any) -> str:
    if category is None:
        return Category.GENERAL
    if category not in Category.values:
        raise InvalidInput("category", f"must be one of {', '.join(Category.values)}")
    return category


def clean_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [t for t in tags.split(",")]
    if not isinstance(tags, list | tuple) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput("tags", "must be a list of text (or comma-separated text)")
    clean = list(dict.fromkeys(t.strip().lower() for t in tags if t.strip()))
    if len(clean) > MAX_TAGS:
        raise InvalidInput("tags", f"at most {MAX_TAGS} tags")
    if any(len(t) > 64 for t in clean):
        raise InvalidInput("tags", "each tag is at most 64 characters")
    return clean


def _clean_kind(kind: Any) -> str:
    if kind not in Kind.values:
        raise InvalidInput("kind", f"must be one of {', '.join(Kind.values)}")
    return kind


def _clean_short(field: str, value: Any, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit:
        raise InvalidInput(field, f"must be text of at most {limit} characters")
    return value.strip()


def _clean_metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata", "must be an object")
    import json

    try:
        size = len(json.dumps(metadata).encode())
    except (TypeError, ValueError):
        raise InvalidInput("metadata", "must be JSON") from None
    if size > MAX_METADATA_BYTES:
        raise InvalidInput("metadata", f"is larger than {MAX_METADATA_BYTES // 1024} KiB")
    return metadata


def clean_flag(field: str, value: Any) -> bool:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if not isinstance(value, bool):
        raise InvalidInput(field, "must be true or false")
    return value


def _clean_trust(field: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InvalidInput(field, "must be a number")
    if not low <= value <= high:
        raise InvalidInput(field, f"must be between {low:g} and {high:g}")
    return float(value)


def content_hash(content: str) -> str:
    """Equal for texts that differ only in Unicode form, case or spacing."""
    key = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return hashlib.sha256(key.encode()).hexdigest()


# -- helpers ----------------------------------------------------------------------------------


def _snapshot(fact: Fact, fields: tuple[str, ...] = _AUDITED) -> dict[str, Any]:
    return {field: getattr(fact, field) for field in fields}


def _search_vector(content: str) -> CombinedSearchVector:
    analyzed = analyze(content)
    return SearchVector(
        Value(analyzed.latin, output_field=TextField()), config="english"
    ) + SearchVector(Value(analyzed.han, output_field=TextField()), config="simple")


def _schedule_embedding(tenant: Tenant) -> None:
    """One embedding message per tenant and transaction, however many facts it adds (an import
    of 10,000 lines sends one; the task embeds every pending fact of the tenant in batches)."""
    tenant_id = tenant.pk
    connection = transaction.get_connection()
    # Django drops a callback whose savepoint rolls back, so one still listed will run.
    if any(
        getattr(callback, "embeds_tenant", None) == tenant_id
        for _savepoints, callback, _robust in connection.run_on_commit
    ):
        return

    def send() -> None:
        job_send("facts.tasks.facts_embed_pending", tenant_id)

    send.embeds_tenant = tenant_id  # type: ignore[attr-defined]
    # A lost message only delays embedding: beat's sweep finds unembedded facts anyway.
    transaction.on_commit(send, robust=True)


def _locked_fact(tenant: Tenant, fact_id: Any) -> Fact:
    if isinstance(fact_id, bool) or not isinstance(fact_id, int):
        try:
            fact_id = int(fact_id)
        except (TypeError, ValueError):
            raise InvalidInput("fact_id", "must be a whole number") from None
    fact = Fact.objects.for_tenant(tenant).select_for_update().filter(pk=fact_id).first()
    if fact is None:
        raise NotFound("fact", fact_id)
    return fact


def _next_position(tenant: Tenant, session_id: str) -> int:
    with connection.cursor() as cursor:
        # Serialise appends to one session, so two turns never get the same position.
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"{tenant.pk}/{session_id}"]
        )
    last = (
        Fact.objects.for_tenant(tenant)
        .filter(kind=Kind.TURN, session_id=session_id, position__isnull=False)
        .order_by("-position")
        .values_list("position", flat=True)
        .first()
    )
    return 0 if last is None else last + 1


# -- add --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AddResult:
    fact: Fact
    status: str  # "added" | "exists" | "restored" | "joined"
    # For "joined": how close the new statement's vector was to the fact it joined.
    similarity: float | None = None

    @property
    def created(self) -> bool:
        return self.status == "added"


def fact_add(
    *,
    tenant: Tenant,
    content: Any,
    actor: Actor,
    kind: str = Kind.FACT,
    scope: Any = None,
    category: Any = None,
    tags: Any = None,
    session_id: Any = None,
    position: int | None = None,
    speaker: Any = None,
    metadata: Any = None,
    trust: Any = None,
    created_at: datetime | None = None,
    idempotency_key: Any = None,
    join_similar: bool = True,
    pinned: Any = False,
) -> AddResult:
    """Store a memory. The same fact again (same scope, same text up to case and spacing)
    returns the existing one; a removed or archived one comes back.

    `idempotency_key` makes a retried write harmless: a second add with the same key (and the
    same text, kind, scope and session) returns the memory the first one stored, status
    "exists". Writers that buffer and retry (the Hermes provider) give every write its own key.

    A fact (never a turn) whose meaning is already stored in the same scope (a vector at least
    the tenant's `duplicate_threshold` close, or the same text up to punctuation, and nothing
    that disagrees) joins the stored fact: status "joined", that fact returned, its mention
    count, tags and entities grown. With `join_similar=False` (bulk imports) the worker's
    check does the same later.

    `pinned` ("always remember"): the fact comes first among the known facts and retention
    never archives it; adding a pinned text that is already stored pins the stored fact.
    """
    pinned = clean_flag("pin", pinned)
    text = clean_content(content)
    key = _clean_short("idempotency_key", idempotency_key, 128)
    kind = _clean_kind(kind)
    values = {
        "kind": kind,
        "content": text,
        "content_hash": content_hash(text),
        "scope": clean_scope(scope),
        "category": clean_category(category),
        "tags": clean_tags(tags),
        "session_id": _clean_short("session_id", session_id, 128),
        "speaker": _clean_short("speaker", speaker, 100),
        "metadata": _clean_metadata(metadata),
        "trust_score": (
            tenant.setting("default_trust")
            if trust is None
            else _clean_trust("trust", trust, 0.0, 1.0)
        ),
        "created_by": str(actor),
        "created_at": created_at or timezone.now(),
    }
    if position is not None and (
        isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < 2**31
    ):
        raise InvalidInput("position", "must be a whole number from 0 to 2147483647")
    if kind == Kind.TURN and not values["session_id"]:
        raise InvalidInput("session_id", "a turn belongs to a session")
    if key:
        values["metadata"] = {**values["metadata"], "idempotency_key": key}
    with tenant_scope(tenant):
        if key and (replayed := _replayed(tenant, values, key)) is not None:
            return AddResult(fact=replayed, status="exists")
        if kind == Kind.FACT:
            existing = _existing_fact(tenant, values)
            if existing is not None:
                return _pin_too(tenant, _readd(tenant, existing, actor), pinned, actor)
            near = (
                fact_near_duplicate(tenant=tenant, content=text, scope=values["scope"])
                if join_similar
                else None
            )
            if near is not None:
                joined = fact_join(
                    tenant=tenant, fact=near.fact, content=text, tags=values["tags"],
                    actor=actor, similarity=near.similarity,
                )  # fmt: skip
                joined_result = AddResult(fact=joined, status="joined", similarity=near.similarity)
                return _pin_too(tenant, joined_result, pinned, actor)
        elif position is None:
            position = _next_position(tenant, values["session_id"])
        try:
            with transaction.atomic():
                fact = Fact.objects.create(
                    tenant=tenant,
                    position=position,
                    pinned=pinned,
                    importance=importance_of_new(
                        trust=values["trust_score"], created_at=values["created_at"], pinned=pinned
                    ),
                    search_vector=_search_vector(text),
                    **values,
                )
        except IntegrityError as error:
            # Someone stored the same fact (or turn position) a moment ago.
            if kind == Kind.FACT and (existing := _existing_fact(tenant, values)) is not None:
                return _readd(tenant, existing, actor)
            if kind == Kind.TURN:
                raise InvalidInput("position", "that session already has a turn there") from error
            raise
        fact_link_entities(tenant=tenant, fact=fact)
        _event(tenant, fact.pk, EventAction.CREATE, actor, after=_snapshot(fact))
        _schedule_embedding(tenant)
        return AddResult(fact=fact, status="added")


def _pin_too(tenant: Tenant, result: AddResult, pinned: bool, actor: Actor) -> AddResult:
    if not pinned or result.fact.pinned:
        return result
    fact = fact_update(tenant=tenant, fact_id=result.fact.pk, actor=actor, pinned=True)
    return AddResult(fact=fact, status=result.status, similarity=result.similarity)


def _replayed(tenant: Tenant, values: dict[str, Any], key: str) -> Fact | None:
    """The memory an earlier write with this idempotency key stored, if any."""
    with connection.cursor() as cursor:
        # Held to the end of the transaction: a concurrent retry of the same write waits here,
        # then finds the first one's row.
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"{tenant.pk}/write/{key}"]
        )
    # kind, scope, session and text narrow the lookup to an index before the JSON test.
    return (
        Fact.objects.for_tenant(tenant)
        .filter(
            kind=values["kind"],
            scope=values["scope"],
            session_id=values["session_id"],
            content_hash=values["content_hash"],
            metadata__idempotency_key=key,
        )
        .first()
    )


def _existing_fact(tenant: Tenant, values: dict[str, Any]) -> Fact | None:
    return (
        Fact.objects.for_tenant(tenant)
        .filter(kind=Kind.FACT, scope=values["scope"], content_hash=values["content_hash"])
        .first()
    )


def _readd(tenant: Tenant, fact: Fact, actor: Actor) -> AddResult:
    if fact.status not in (Status.REMOVED, Status.ARCHIVED):
        return AddResult(fact=fact, status="exists")
    before = _snapshot(fact, ("status",))
    fact.status = Status.ACTIVE
    fact.save(update_fields=["status", "updated_at"])
    _event(tenant, fact.pk, EventAction.RESTORE, actor, before=before, after={"status": "active"})
    return AddResult(fact=fact, status="restored")


# -- update, remove, restore, purge -----------------------------------------------------------

_UNSET: Any = object()


def fact_update(
    *,
    tenant: Tenant,
    fact_id: Any,
    actor: Actor,
    content: Any = _UNSET,
    category: Any = _UNSET,
    tags: Any = _UNSET,
    scope: Any = _UNSET,
    trust_delta: Any = _UNSET,
    pinned: Any = _UNSET,
) -> Fact:
    """Change what is given; the audit event records exactly the fields that changed."""
    changes: dict[str, Any] = {}
    if pinned is not _UNSET:
        changes["pinned"] = clean_flag("pin", pinned)
    if content is not _UNSET:
        changes["content"] = clean_content(content)
    if category is not _UNSET:
        changes["category"] = clean_category(category)
    if tags is not _UNSET:
        changes["tags"] = clean_tags(tags)
    if scope is not _UNSET:
        changes["scope"] = clean_scope(scope)
    delta = None if trust_delta is _UNSET else _clean_trust("trust_delta", trust_delta, -1.0, 1.0)
    if not changes and delta is None:
        raise InvalidInput(
            "fact", "nothing to update: give content, category, tags, scope, trust_delta or pin"
        )
    with tenant_scope(tenant):
        fact = _locked_fact(tenant, fact_id)
        if delta is not None:
            changes["trust_score"] = round(min(1.0, max(0.0, fact.trust_score + delta)), 6)
        changed = {k: v for k, v in changes.items() if getattr(fact, k) != v}
        if not changed:
            return fact
        before = {k: getattr(fact, k) for k in changed}
        for field, value in changed.items():
            setattr(fact, field, value)
        update_fields = [*changed, "updated_at"]
        if "content" in changed or "scope" in changed:
            fact.content_hash = content_hash(fact.content)
            if fact.kind == Kind.FACT and (
                Fact.objects.for_tenant(tenant)
                .filter(kind=Kind.FACT, scope=fact.scope, content_hash=fact.content_hash)
                .exclude(pk=fact.pk)
                .exists()
            ):
                raise InvalidInput("content", "another fact in this scope says the same")
            update_fields.append("content_hash")
        if "content" in changed:
            fact.search_vector = _search_vector(fact.content)
            # The old vectors describe the old text.
            FactVector.objects.for_tenant(tenant).filter(fact_id=fact.pk).delete()
            fact.embedding_model = ""
            update_fields += ["search_vector", "embedding_model"]
        fact.save(update_fields=update_fields)
        if "content" in changed:
            fact_link_entities(tenant=tenant, fact=fact)  # what it names may have changed
        _event(tenant, fact.pk, EventAction.UPDATE, actor, before=before, after=changed)
        if "content" in changed:
            _schedule_embedding(tenant)
        if "pinned" in changed or "trust_score" in changed:
            importance_recompute(tenant=tenant, fact_ids=[fact.pk])
        fact.refresh_from_db(fields=["search_vector", "importance"])
        return fact


def _set_status(
    tenant: Tenant, fact_id: Any, actor: Actor, status: str, action: str, allowed_from: set[str]
) -> Fact:
    with tenant_scope(tenant):
        fact = _locked_fact(tenant, fact_id)
        if fact.status == status:
            return fact
        if fact.status not in allowed_from:
            raise InvalidInput("fact_id", f"fact {fact.pk} is {fact.status}; cannot {action} it")
        before = {"status": fact.status}
        fact.status = status
        fact.save(update_fields=["status", "updated_at"])
        _event(tenant, fact.pk, action, actor, before=before, after={"status": status})
        return fact


def fact_remove(*, tenant: Tenant, fact_id: Any, actor: Actor) -> Fact:
    """Soft removal: the fact leaves retrieval and stays, with its history, for the audit."""
    return _set_status(
        tenant,
        fact_id,
        actor,
        Status.REMOVED,
        EventAction.REMOVE,
        {Status.ACTIVE, Status.ARCHIVED, Status.SUPERSEDED},
    )


def fact_restore(*, tenant: Tenant, fact_id: Any, actor: Actor) -> Fact:
    return _set_status(
        tenant,
        fact_id,
        actor,
        Status.ACTIVE,
        EventAction.RESTORE,
        {Status.REMOVED, Status.ARCHIVED},
    )


def fact_purge(*, tenant: Tenant, fact_id: Any, actor: Actor, reason: str) -> int:
    """Delete a fact for good (with its vectors, links and feedback, and out of its archive
    bundle). The audit keeps that it existed, who purged it and why, but not its text: the
    text in its earlier events becomes "[purged]". Returns the purged id."""
    from facts.archive import facts_purge

    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("reason", "a purge needs a reason for the audit trail")
    with tenant_scope(tenant):
        fact = _locked_fact(tenant, fact_id)
        return facts_purge(tenant=tenant, facts=[fact], actor=actor, reason=reason)[0]


# -- feedback ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeedbackResult:
    fact_id: int
    old_trust: float
    new_trust: float
    helpful_count: int
    unhelpful_count: int


def fact_feedback(*, tenant: Tenant, fact_id: Any, helpful: Any, actor: Actor) -> FeedbackResult:
    """helpful: trust +0.05; unhelpful: -0.10; clamped to [0, 1]."""
    if not isinstance(helpful, bool):
        raise InvalidInput("helpful", "must be true (helpful) or false (unhelpful)")
    with tenant_scope(tenant):
        fact = _locked_fact(tenant, fact_id)
        old = fact.trust_score
        delta = TRUST_HELPFUL if helpful else TRUST_UNHELPFUL
        fact.trust_score = round(min(1.0, max(0.0, old + delta)), 6)
        if helpful:
            fact.helpful_count += 1
        else:
            fact.unhelpful_count += 1
        fact.save(update_fields=["trust_score", "helpful_count", "unhelpful_count", "updated_at"])
        Feedback.objects.create(tenant=tenant, fact=fact, helpful=helpful, actor=str(actor))
        importance_recompute(tenant=tenant, fact_ids=[fact.pk])
        _event(
            tenant,
            fact.pk,
            EventAction.FEEDBACK,
            actor,
            before={"trust_score": old},
            after={"trust_score": fact.trust_score, "helpful": helpful},
        )
        return FeedbackResult(
            fact_id=fact.pk,
            old_trust=old,
            new_trust=fact.trust_score,
            helpful_count=fact.helpful_count,
            unhelpful_count=fact.unhelpful_count,
        )


def fact_record_retrievals(*, tenant: Tenant, fact_ids: list[int], at: datetime) -> int:
    """Count that these facts were shown to an agent. Not audited: reading is not a change."""
    with tenant_scope(tenant):
        return (
            Fact.objects.for_tenant(tenant)
            .filter(pk__in=fact_ids)
            .update(retrieval_count=F("retrieval_count") + 1, last_retrieved_at=at)
        )


# -- bulk import ------------------------------------------------------------------------------

MAX_IMPORT_LINES = 10_000
IMPORT_FIELDS = (
    "content", "kind", "scope", "category", "tags", "session_id", "position", "speaker",
    "metadata", "trust", "created_at",
)  # fmt: skip


@dataclass(frozen=True)
class ImportLine:
    line: int
    status: str  # "added" | "exists" | "restored" | "error"
    fact_id: int | None = None
    field: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class ImportReport:
    lines: list[ImportLine]

    @property
    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("added", "exists", "restored", "error"), 0)
        for line in self.lines:
            counts[line.status] += 1
        return counts


def _import_values(raw: str) -> dict[str, Any]:
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
    if "created_at" in values and values["created_at"] is not None:
        values["created_at"] = _import_time(values["created_at"])
    return values


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _import_time(value: Any) -> datetime:
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None:
        raise InvalidInput("created_at", "must be an ISO 8601 time, e.g. 2026-01-31T09:30:00Z")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment


def fact_import(
    *, tenant: Tenant, lines: list[str], actor: Actor, max_lines: int = MAX_IMPORT_LINES
) -> ImportReport:
    """Add facts from JSON Lines (one object with fact_add's fields per line), reporting each
    line. A bad line is reported and skipped, the others are stored; blank lines are ignored.
    The whole import is one transaction: it lands completely or not at all."""
    # A byte-order mark (a file saved by an editor, or files joined) is not part of the JSON.
    numbered = [(n, raw.strip().lstrip("\ufeff").strip()) for n, raw in enumerate(lines, 1)]
    numbered = [(n, raw) for n, raw in numbered if raw]
    if not numbered:
        raise InvalidInput("body", "no facts: send one JSON object per line")
    if len(numbered) > max_lines:
        raise InvalidInput("body", f"at most {max_lines} lines per import; split the file")
    report: list[ImportLine] = []
    with tenant_scope(tenant):
        for number, raw in numbered:
            try:
                values = _import_values(raw)
                with transaction.atomic():  # a savepoint: a refused line leaves nothing behind
                    result = fact_add(tenant=tenant, actor=actor, join_similar=False, **values)
            except InvalidInput as error:
                report.append(ImportLine(number, "error", field=error.field, message=error.message))
                continue
            report.append(ImportLine(number, result.status, fact_id=result.fact.pk))
        summary = ImportReport(lines=report)
        _event(
            tenant, None, EventAction.IMPORT, actor, after={"lines": len(report), **summary.counts}
        )
    return summary


MAX_BULK = 200


@dataclass(frozen=True)
class BulkResult:
    done: list[int]
    skipped: dict[int, str]  # fact id -> why (not found, already removed, ...)


def _bulk_ids(fact_ids: Any) -> list[int]:
    if not isinstance(fact_ids, list | tuple) or not fact_ids:
        raise InvalidInput("ids", "select at least one fact")
    if len(fact_ids) > MAX_BULK:
        raise InvalidInput("ids", f"at most {MAX_BULK} facts at once")
    ids = []
    for value in fact_ids:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InvalidInput("ids", "must be fact ids")
        ids.append(value)
    return list(dict.fromkeys(ids))


def facts_bulk_remove(*, tenant: Tenant, fact_ids: Any, actor: Actor) -> BulkResult:
    """Remove each of the facts (as fact_remove, each audited); the others are reported."""
    done, skipped = [], {}
    for fact_id in _bulk_ids(fact_ids):
        try:
            with transaction.atomic():
                fact_remove(tenant=tenant, fact_id=fact_id, actor=actor)
        except (InvalidInput, NotFound) as error:
            skipped[fact_id] = getattr(error, "message", "not found")
        else:
            done.append(fact_id)
    return BulkResult(done=done, skipped=skipped)


def facts_bulk_tag(*, tenant: Tenant, fact_ids: Any, tag: Any, actor: Actor) -> BulkResult:
    """Add one tag to each of the facts (as fact_update, each audited)."""
    if not isinstance(tag, str) or not tag.strip() or len(tag.strip()) > 64:
        raise InvalidInput("tag", "must be 1-64 characters")
    tag = tag.strip()
    done, skipped = [], {}
    for fact_id in _bulk_ids(fact_ids):
        try:
            with transaction.atomic():
                fact = fact_get_for_update(tenant=tenant, fact_id=fact_id)
                if tag in fact.tags:
                    skipped[fact_id] = "has the tag already"
                    continue
                fact_update(tenant=tenant, fact_id=fact_id, actor=actor, tags=[*fact.tags, tag])
        except (InvalidInput, NotFound) as error:
            skipped[fact_id] = getattr(error, "message", "not found")
        else:
            done.append(fact_id)
    return BulkResult(done=done, skipped=skipped)


def fact_get_for_update(*, tenant: Tenant, fact_id: int) -> Fact:
    with tenant_scope(tenant):
        fact = Fact.objects.for_tenant(tenant).select_for_update().filter(pk=fact_id).first()
    if fact is None:
        raise NotFound("fact", fact_id)
    return fact
