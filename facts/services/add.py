"""Adding facts: one (`fact_add`, which joins a near-duplicate or records a conflict) or many in
one transaction (`facts_add_many`, an import's path)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from facts.conflicts import conflicts_record_new
from facts.embedding import vectors_write
from facts.entities import facts_link_new_entities
from facts.events import fact_event_record as _event
from facts.events import fact_events_record
from facts.importance import importance_of_new
from facts.inputs import FactChanges, FactDraft
from facts.models import EventAction, Fact, Kind, Status
from facts.near_duplicates import (
    NearCheck,
    PassageVector,
    fact_join,
    fact_near_check,
    passage_vector,
)
from facts.services.change import fact_update
from facts.services.rows import (
    _facts_insert,
    _next_position,
    _schedule_embedding,
    _schedule_task,
    _snapshot,
    content_hash,
)
from indexing.vectors import vector_is_configured
from tenants.actors import Actor
from tenants.errors import InvalidInput
from tenants.models import Tenant
from tenants.scope import tenant_scope


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
        new, copies = _new_rows(tenant, drafts, values, results, actor)
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


def _new_rows(
    tenant: Tenant,
    drafts: list[FactDraft],
    values: dict[int, dict[str, Any]],
    results: list[AddResult | InvalidInput | None],
    actor: Actor,
) -> tuple[dict[int, Fact], dict[int, int]]:
    """For `facts_add_many`: the rows to insert for the drafts `values` holds (by the draft's
    index), and the drafts that repeat an earlier one of the batch (index -> the first one's).
    A draft whose text is stored already, or whose turn position is taken, gets its result in
    `results` at once."""
    hashes = {v["content_hash"] for v in values.values() if v["kind"] == Kind.FACT}
    stored = {
        (fact.scope, fact.content_hash): fact
        for fact in Fact.objects.for_tenant(tenant).filter(kind=Kind.FACT, content_hash__in=hashes)
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
    for i in values:  # in the order of the drafts
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
    return new, copies


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
