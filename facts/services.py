"""Writes of facts: add, update, remove, restore, purge, feedback; each audited.

Every function takes the tenant first and runs inside `tenant_scope(tenant)`, so the ORM guard
and PostgreSQL's row-level security both hold. Input comes parsed: `facts.inputs` turns every
surface's raw input into the typed values (FactDraft, FactChanges, ...) these functions take.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from django.contrib.postgres.search import SearchVectorField
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from facts.conflicts import (
    NearCheck,
    PassageVector,
    conflicts_record_new,
    fact_join,
    fact_near_check,
    passage_vector,
)
from facts.embedding import tables_analyze_own_changes, vectors_write
from facts.entities import fact_link_entities, facts_link_new_entities
from facts.events import fact_event_record as _event
from facts.events import fact_events_record
from facts.importance import importance_of_new, importance_recompute
from facts.inputs import FactChanges, FactDraft, import_line
from facts.models import (
    EventAction,
    Fact,
    FactVector,
    Feedback,
    Kind,
    Status,
)
from indexing.text import SEARCH_VECTOR_SQL, analyze
from indexing.vectors import vector_is_configured
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.jobs import job_send_coalesced
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.services import under_legal_hold

TRUST_HELPFUL = 0.05
# Rows per INSERT statement of a bulk write.
BULK_BATCH = 1000
TRUST_UNHELPFUL = -0.10
# Fields an audit event snapshots.
_AUDITED = (
    "content", "kind", "scope", "category", "tags", "trust_score", "status", "session_id", "pinned",
)  # fmt: skip


def content_hash(content: str) -> str:
    """Equal for texts that differ only in Unicode form, case or spacing."""
    key = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return hashlib.sha256(key.encode()).hexdigest()


# -- helpers ----------------------------------------------------------------------------------


def _snapshot(fact: Fact, fields: tuple[str, ...] = _AUDITED) -> dict[str, Any]:
    return {field: getattr(fact, field) for field in fields}


def _search_vector(content: str) -> RawSQL:
    """A text's search vector, for an UPDATE (new facts get theirs from `_facts_insert`)."""
    analyzed = analyze(content)
    # A constant statement; the text goes in as parameters.
    return RawSQL(SEARCH_VECTOR_SQL, (analyzed.latin, analyzed.han), SearchVectorField())  # noqa: S611


def _facts_insert(facts: list[Fact], *, skip_taken: bool = False) -> bool:
    """Insert new facts (one, or an import's or a bundle's many) with their search vectors,
    one statement per BULK_BATCH rows, and give each its id. `bulk_create` did the same but
    compiled a search vector expression for every row, half the importing process's time.

    A row whose fact (or turn position) is already stored raises IntegrityError; with
    `skip_taken` (one fact only), it is left out instead (ON CONFLICT DO NOTHING, after a
    concurrent writer's transaction has ended) and False is returned, the fact left without
    an id. A savepoint to catch the error cost the single add two more statements.

    The statement is written with PostgreSQL's own placeholders ($1, $2, ...) and sent through
    a raw cursor, which binds on the server: psycopg rewrites a statement with %s placeholders
    itself, and for one this long (too long for its cache) that took 0.40 s of the 0.46 s the
    importing process spent here for 2,000 facts."""
    fields = [
        f for f in Fact._meta.concrete_fields if not f.primary_key and f.name != "search_vector"
    ]
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
    width = len(fields) + 2  # the fields, then the search vector's two texts

    def row(first: int) -> str:
        values = [f"${first + n}" for n in range(len(fields))]
        search = SEARCH_VECTOR_SQL % (f"${first + len(fields)}", f"${first + len(fields) + 1}")
        return f"({', '.join(values)}, {search})"

    if skip_taken and len(facts) != 1:
        raise ValueError("skip_taken inserts one fact")
    conflict = "ON CONFLICT DO NOTHING " if skip_taken else ""
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.RawCursor(connection.connection) as cursor:
        for start in range(0, len(facts), BULK_BATCH):
            chunk = facts[start : start + BULK_BATCH]
            params: list[Any] = []
            for fact in chunk:
                params += [f.get_db_prep_save(f.pre_save(fact, True), connection) for f in fields]
                analyzed = analyze(fact.content)
                params += [analyzed.latin, analyzed.han]
            rows = ", ".join(row(1 + n * width) for n in range(len(chunk)))
            cursor.execute(
                # Columns of the model and placeholders only; every value is a parameter.
                f"INSERT INTO facts_fact ({columns}, search_vector) VALUES {rows} "  # noqa: S608
                f"{conflict}RETURNING id",
                params,
            )
            ids = cursor.fetchall()
            if not ids and skip_taken:
                return False
            for fact, (pk,) in zip(chunk, ids, strict=True):
                fact.pk = pk
                fact._state.adding = False
                fact._state.db = connection.alias
    return True


def _schedule_embedding(tenant: Tenant) -> None:
    """One embedding message per tenant and transaction, however many facts it adds (an import
    of 10,000 lines sends one; the task embeds every pending fact of the tenant in batches)."""
    _schedule_task(tenant, "facts.tasks.facts_embed_pending")


def _schedule_task(tenant: Tenant, name: str) -> None:
    """Send the task `name(tenant)`, which does all of the tenant's pending work of its kind,
    once the transaction commits: one message per tenant and transaction."""
    tenant_id = tenant.pk
    connection = transaction.get_connection()
    # Django drops a callback whose savepoint rolls back, so one still listed will run.
    if any(
        getattr(callback, "sends", None) == (name, tenant_id)
        for _savepoints, callback, _robust in connection.run_on_commit
    ):
        return

    def send() -> None:
        job_send_coalesced(name, tenant_id)

    send.sends = (name, tenant_id)  # type: ignore[attr-defined]
    # A lost message only delays the work: beat's sweeps find it anyway.
    transaction.on_commit(send, robust=True)


def _locked_fact(tenant: Tenant, fact_id: int) -> Fact:
    fact: Fact | None = (
        Fact.objects.for_tenant(tenant).select_for_update().filter(pk=fact_id).first()
    )
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
    *, tenant: Tenant, draft: FactDraft, actor: Actor, join_similar: bool = True
) -> AddResult:
    """Store a memory. The same fact again (same scope, same text up to case and spacing)
    returns the existing one; a removed or archived one comes back.

    `draft.idempotency_key` makes a retried write harmless: a second add with the same key (and
    the same text, kind, scope and session) returns the memory the first one stored, status
    "exists". Writers that buffer and retry (the Hermes provider) give every write its own key.

    A fact (never a turn) whose meaning is already stored in the same scope (a vector at least
    the tenant's `duplicate_threshold` close, or the same text up to punctuation, and nothing
    that disagrees) joins the stored fact: status "joined", that fact returned, its mention
    count, tags and entities grown. A near fact of the scope that the new one disagrees with
    (another value, a negation, a comparison turned round) is never joined: the new fact is
    stored and the conflict recorded (or the older fact superseded, by the tenant's
    `conflict_auto_supersede`). With `join_similar=False` (bulk imports) the worker's check
    does the same later.

    `draft.pinned` ("always remember"): the fact comes first among the known facts and
    retention never archives it; adding a pinned text that is already stored pins the stored
    fact.
    """
    pinned, text, key, kind, position = (
        draft.pinned, draft.content, draft.idempotency_key, draft.kind, draft.position
    )  # fmt: skip
    values = _add_values(tenant, draft, actor)
    vector: PassageVector | None = None
    check = NearCheck(None, [])
    with tenant_scope(tenant):
        if key and (replayed := _replayed(tenant, values, key)) is not None:
            return AddResult(fact=replayed, status="exists")
        if kind == Kind.FACT:
            existing = _existing_fact(tenant, values)
            if existing is not None:
                return _pin_too(tenant, _readd(tenant, existing, actor), pinned, actor)
            if join_similar and (vector := passage_vector(tenant=tenant, text=text)):
                check = fact_near_check(
                    tenant=tenant, content=text, scope=values["scope"], query=vector
                )
            if (near := check.duplicate) is not None:
                joined = fact_join(
                    tenant=tenant, fact=near.fact, content=text, tags=values["tags"],
                    actor=actor, similarity=near.similarity,
                )  # fmt: skip
                joined_result = AddResult(fact=joined, status="joined", similarity=near.similarity)
                return _pin_too(tenant, joined_result, pinned, actor)
        elif position is None:
            position = _next_position(tenant, values["session_id"])
        fact = _new_fact(tenant, values, position, pinned)
        # The near-duplicate check embedded the text as the worker would (a fact is embedded as
        # its text): kept, the fact is found by meaning at once and the worker does not embed
        # it again. During a model switch the vector is the serving model's: kept too, and the
        # worker still makes both models' (`embedding_model` names the configured one).
        if vector is not None and vector_is_configured(vector.model):
            fact.embedding_model = vector.model
        if not _facts_insert([fact], skip_taken=True):
            # Someone stored the same fact (or turn position) a moment ago.
            if kind == Kind.FACT and (existing := _existing_fact(tenant, values)) is not None:
                return _pin_too(tenant, _readd(tenant, existing, actor), pinned, actor)
            if kind == Kind.TURN:
                raise InvalidInput("position", "that session already has a turn there")
            raise IntegrityError(f"fact {values['content_hash']}: taken by a row not visible here")
        facts_link_new_entities(tenant=tenant, facts=[fact])
        _event(tenant, fact.pk, EventAction.CREATE, actor, after=_snapshot(fact))
        if kind == Kind.FACT and check.disagreeing:
            conflicts_record_new(tenant=tenant, fact=fact, disagreeing=check.disagreeing)
        if vector is not None:
            vectors_write(tenant=tenant, fact_ids=[fact.pk], models=[vector.model],
                          vectors=[vector.vector])  # fmt: skip
        if fact.embedding_model:
            _schedule_task(tenant, "facts.tasks.facts_check_conflicts")
        else:
            _schedule_embedding(tenant)
        return AddResult(fact=fact, status="added")


def facts_add_many(
    *, tenant: Tenant, drafts: list[FactDraft], actor: Actor
) -> list[AddResult | InvalidInput]:
    """Store many memories in one transaction, each as `fact_add(join_similar=False)` would
    one after the other, in a handful of statements: one lookup of the texts already stored,
    one insert of the new rows, one of their entity links, one of their audit events and one
    embedding message. Returns, per draft, its result or why it was refused (a turn position
    its session already holds). Writes with an idempotency key, and every draft after a
    concurrent writer stored one of the same, go through `fact_add` one by one."""
    results: list[AddResult | InvalidInput | None] = [None] * len(drafts)

    def one(i: int) -> AddResult | InvalidInput:
        try:
            with transaction.atomic():
                return fact_add(tenant=tenant, draft=drafts[i], actor=actor, join_similar=False)
        except InvalidInput as error:
            return error

    with tenant_scope(tenant), transaction.atomic():
        for i, draft in enumerate(drafts):
            if draft.idempotency_key:
                results[i] = one(i)
        todo = [i for i, result in enumerate(results) if result is None]
        values = {i: _add_values(tenant, drafts[i], actor) for i in todo}
        hashes = {v["content_hash"] for v in values.values() if v["kind"] == Kind.FACT}
        stored = {
            (fact.scope, fact.content_hash): fact
            for fact in Fact.objects.for_tenant(tenant).filter(
                kind=Kind.FACT, content_hash__in=hashes
            )
        }
        sessions = {v["session_id"] for v in values.values() if v["kind"] == Kind.TURN}
        taken = set(
            Fact.objects.for_tenant(tenant)
            .filter(kind=Kind.TURN, session_id__in=sessions, position__isnull=False)
            .values_list("session_id", "position")
        )
        next_position: dict[str, int] = {}
        new: dict[int, Fact] = {}
        first_of: dict[tuple[str, str], int] = {}  # a text twice in the batch: the first one
        copies: dict[int, int] = {}
        for i in todo:
            draft, row = drafts[i], values[i]
            if row["kind"] == Kind.FACT:
                key = (row["scope"], row["content_hash"])
                if key in stored:
                    results[i] = _pin_too(
                        tenant, _readd(tenant, stored[key], actor), draft.pinned, actor
                    )
                elif key in first_of:
                    copies[i] = first_of[key]
                else:
                    first_of[key] = i
                    new[i] = _new_fact(tenant, row, None, draft.pinned)
                continue
            session = row["session_id"]
            if session not in next_position:
                next_position[session] = _next_position(tenant, session)
            position = next_position[session] if draft.position is None else draft.position
            if (session, position) in taken:
                results[i] = InvalidInput("position", "that session already has a turn there")
                continue
            taken.add((session, position))
            next_position[session] = max(next_position[session], position + 1)
            new[i] = _new_fact(tenant, row, position, draft.pinned)
        try:
            with transaction.atomic():
                _facts_insert(list(new.values()))
        except IntegrityError:  # someone stored one of these a moment ago: one by one
            for i in sorted([*new, *copies]):
                results[i] = one(i)
            new, copies = {}, {}
        if new:
            facts_link_new_entities(tenant=tenant, facts=list(new.values()))
            fact_events_record(
                tenant, [(fact.pk, _snapshot(fact)) for fact in new.values()], EventAction.CREATE,
                actor,
            )  # fmt: skip
            _schedule_embedding(tenant)
        for i, fact in new.items():
            results[i] = AddResult(fact=fact, status="added")
        for i, first in copies.items():
            fact = new[first]
            results[i] = _pin_too(tenant, AddResult(fact=fact, status="exists"),
                                  drafts[i].pinned, actor)  # fmt: skip
    done = [result for result in results if result is not None]
    assert len(done) == len(drafts), "every draft has its result"  # noqa: S101
    return done


def _add_values(tenant: Tenant, draft: FactDraft, actor: Actor) -> dict[str, Any]:
    """The columns a new fact takes from its draft (position, pinned and the derived ones aside)."""
    values: dict[str, Any] = {
        "kind": draft.kind,
        "content": draft.content,
        "content_hash": content_hash(draft.content),
        "scope": draft.scope,
        "category": draft.category,
        "tags": list(draft.tags),
        "session_id": draft.session_id,
        "speaker": draft.speaker,
        "metadata": dict(draft.metadata),
        "trust_score": tenant.setting("default_trust") if draft.trust is None else draft.trust,
        "created_by": str(actor),
        "created_at": draft.created_at or timezone.now(),
    }
    if draft.idempotency_key:
        values["metadata"] = {**values["metadata"], "idempotency_key": draft.idempotency_key}
    return values


def _new_fact(
    tenant: Tenant,
    values: dict[str, Any],
    position: int | None,
    pinned: bool,
) -> Fact:
    """A new fact's row, for `_facts_insert` (which makes its search vector)."""
    return Fact(
        tenant=tenant,
        position=position,
        pinned=pinned,
        importance=importance_of_new(
            trust=values["trust_score"], created_at=values["created_at"], pinned=pinned
        ),
        **values,
    )


def _pin_too(tenant: Tenant, result: AddResult, pinned: bool, actor: Actor) -> AddResult:
    if not pinned or result.fact.pinned:
        return result
    fact = fact_update(
        tenant=tenant, fact_id=result.fact.pk, changes=FactChanges(pinned=True), actor=actor
    )
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
    found: Fact | None = (
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
    return found


def _existing_fact(tenant: Tenant, values: dict[str, Any]) -> Fact | None:
    found: Fact | None = (
        Fact.objects.for_tenant(tenant)
        .filter(kind=Kind.FACT, scope=values["scope"], content_hash=values["content_hash"])
        .first()
    )
    return found


def _readd(tenant: Tenant, fact: Fact, actor: Actor) -> AddResult:
    if fact.status not in (Status.REMOVED, Status.ARCHIVED):
        return AddResult(fact=fact, status="exists")
    before = _snapshot(fact, ("status",))
    fact.status = Status.ACTIVE
    fact.save(update_fields=["status", "updated_at"])
    _event(tenant, fact.pk, EventAction.RESTORE, actor, before=before, after={"status": "active"})
    return AddResult(fact=fact, status="restored")


# -- update, remove, restore, purge -----------------------------------------------------------


def fact_update(*, tenant: Tenant, fact_id: int, changes: FactChanges, actor: Actor) -> Fact:
    """Change what is given; the audit event records exactly the fields that changed."""
    delta = changes.trust_delta
    values = changes.given()
    with tenant_scope(tenant):
        fact = _locked_fact(tenant, fact_id)
        if delta is not None:
            values["trust_score"] = round(min(1.0, max(0.0, fact.trust_score + delta)), 6)
        changed = {k: v for k, v in values.items() if getattr(fact, k) != v}
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
    tenant: Tenant, fact_id: int, actor: Actor, status: str, action: str, allowed_from: set[str]
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


def fact_remove(*, tenant: Tenant, fact_id: int, actor: Actor) -> Fact:
    """Soft removal: the fact leaves retrieval and stays, with its history, for the audit."""
    return _set_status(
        tenant,
        fact_id,
        actor,
        Status.REMOVED,
        EventAction.REMOVE,
        {Status.ACTIVE, Status.ARCHIVED, Status.SUPERSEDED},
    )


def fact_restore(*, tenant: Tenant, fact_id: int, actor: Actor) -> Fact:
    return _set_status(
        tenant,
        fact_id,
        actor,
        Status.ACTIVE,
        EventAction.RESTORE,
        {Status.REMOVED, Status.ARCHIVED},
    )


@transaction.atomic
def fact_purge(*, tenant: Tenant, fact_id: int, actor: Actor, reason: str) -> int:
    """Delete a fact for good (with its vectors, links and feedback, and out of its archive
    bundle). The audit keeps that it existed, who purged it and why, but not its text: the
    text in its earlier events becomes "[purged]". Returns the purged id (`reason` as
    `facts.inputs.purge_reason` gives it). Refused while the tenant is under legal hold."""
    from facts.archive import facts_purge

    with tenant_scope(tenant):
        fact = _locked_fact(tenant, fact_id)
        if under_legal_hold(tenant):
            raise InvalidInput(
                "legal_hold", "the tenant is under legal hold: nothing is purged until it is lifted"
            )
        return facts_purge(tenant=tenant, facts=[fact], actor=actor, reason=reason)[0]


# -- feedback ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeedbackResult:
    fact_id: int
    old_trust: float
    new_trust: float
    helpful_count: int
    unhelpful_count: int


def fact_feedback(*, tenant: Tenant, fact_id: int, helpful: bool, actor: Actor) -> FeedbackResult:
    """helpful: trust +0.05; unhelpful: -0.10; clamped to [0, 1]."""
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


def fact_record_retrievals(
    *, tenant: Tenant, fact_ids: list[int], at: datetime, times: list[int] | None = None
) -> int:
    """Count that these facts were shown to an agent, `times[i]` times each (once when absent),
    the last at `at`. Not audited: reading is not a change. Safe to run twice: a fact already
    marked retrieved at `at` or later is not counted again (a message delivered again after its
    worker died; one that arrives after a later one goes uncounted too, so the count is at most
    the truth). One UPDATE per distinct number of times."""
    if times is not None and len(times) != len(fact_ids):
        raise ValueError("times: one count per fact id")
    by_times: dict[int, list[int]] = {}
    for fact_id, n in zip(fact_ids, times or [1] * len(fact_ids), strict=True):
        by_times.setdefault(max(1, int(n)), []).append(fact_id)
    count = 0
    with tenant_scope(tenant):
        for n, ids in sorted(by_times.items()):
            count += (
                Fact.objects.for_tenant(tenant)
                .filter(pk__in=ids)
                .filter(Q(last_retrieved_at__isnull=True) | Q(last_retrieved_at__lt=at))
                .update(retrieval_count=F("retrieval_count") + n, last_retrieved_at=at)
            )
    return count


# -- bulk import ------------------------------------------------------------------------------

MAX_IMPORT_LINES = 10_000


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
    outcomes: dict[int, AddResult | InvalidInput] = {}
    drafts: dict[int, FactDraft] = {}
    for number, raw in numbered:
        try:
            drafts[number] = import_line(raw)
        except InvalidInput as error:
            outcomes[number] = error
    with tenant_scope(tenant), transaction.atomic():
        added = facts_add_many(tenant=tenant, drafts=list(drafts.values()), actor=actor)
        outcomes.update(zip(drafts, added, strict=True))
        report = [
            ImportLine(number, "error", field=outcome.field, message=outcome.message)
            if isinstance(outcome, InvalidInput)
            else ImportLine(number, outcome.status, fact_id=outcome.fact.pk)
            for number, outcome in sorted(outcomes.items())
        ]
        summary = ImportReport(lines=report)
        _event(
            tenant, None, EventAction.IMPORT, actor, after={"lines": len(report), **summary.counts}
        )
    # With no worker running, none would analyse what the import changed. Each process plans
    # its same-tenant foreign-key checks once and keeps the plan until the table's statistics
    # change: planned while the table was new, a check read every fact of the tenant through
    # the index on the tenant alone. bench.ingest's long import (20,000 lines into a new
    # database, no worker) took 46.3 s, each 2,000 lines 1.5 s at first and 7.4 s at the end;
    # with the tables analysed, 11.4 s, 1.0 to 1.3 s each 2,000.
    tables_analyze_own_changes()
    return summary


@dataclass(frozen=True)
class BulkResult:
    done: list[int]
    skipped: dict[int, str]  # fact id -> why (not found, already removed, ...)


def facts_bulk_remove(*, tenant: Tenant, fact_ids: tuple[int, ...], actor: Actor) -> BulkResult:
    """Remove each of the facts (as fact_remove, each audited); the others are reported."""
    done, skipped = [], {}
    for fact_id in fact_ids:
        try:
            with transaction.atomic():
                fact_remove(tenant=tenant, fact_id=fact_id, actor=actor)
        except (InvalidInput, NotFound) as error:
            skipped[fact_id] = getattr(error, "message", "not found")
        else:
            done.append(fact_id)
    return BulkResult(done=done, skipped=skipped)


def facts_bulk_tag(
    *, tenant: Tenant, fact_ids: tuple[int, ...], tag: str, actor: Actor
) -> BulkResult:
    """Add one tag to each of the facts (as fact_update, each audited)."""
    done, skipped = [], {}
    for fact_id in fact_ids:
        try:
            with transaction.atomic():
                fact = fact_get_for_update(tenant=tenant, fact_id=fact_id)
                if tag in fact.tags:
                    skipped[fact_id] = "has the tag already"
                    continue
                fact_update(
                    tenant=tenant,
                    fact_id=fact_id,
                    changes=FactChanges(tags=(*fact.tags, tag)),
                    actor=actor,
                )
        except (InvalidInput, NotFound) as error:
            skipped[fact_id] = getattr(error, "message", "not found")
        else:
            done.append(fact_id)
    return BulkResult(done=done, skipped=skipped)


def fact_get_for_update(*, tenant: Tenant, fact_id: int) -> Fact:
    with tenant_scope(tenant):
        fact: Fact | None = (
            Fact.objects.for_tenant(tenant).select_for_update().filter(pk=fact_id).first()
        )
    if fact is None:
        raise NotFound("fact", fact_id)
    return fact
