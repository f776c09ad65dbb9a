"""Conflicts and near-duplicates: statements that disagree become `Conflict` rows for an admin
to decide; statements that say what is already stored join the stored fact.

- When a fact is stored, `facts.near_duplicates` finds the fact it repeats (and joins it) and
  the facts it disagrees with; `conflicts_record_new` records those conflicts at once.
- After a worker embedded facts, `conflicts_check` compares each with its nearest neighbours
  and with the facts that share its entities (`facts.contradiction.pair_judge`): a
  disagreement is recorded once per pair, a duplicate that slipped through (an import, a
  vector that came later) joins the older fact. Beat's sweep runs the same check over facts
  stored before, and over facts changed since they were checked.
- `conflict_resolve`: keep both, supersede the older by the newer (it leaves recall, keeps its
  history, its trust drops), or dismiss. Audited on both facts. A tenant may let a clear,
  newer statement supersede the older one at once (`conflict_auto_supersede`).

The reads of conflicts (a page of them, one of them) are in `facts.selectors.conflicts`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from facts.contradiction import CONTRADICT, DUPLICATE, Verdict, pair_judge
from facts.inputs import MAX_ID
from facts.models import (
    Conflict,
    ConflictResolution,
    ConflictScan,
    ConflictStatus,
    EventAction,
    Fact,
    FactEntity,
    Kind,
    Status,
)
from facts.near_duplicates import NEIGHBOUR_MIN_COSINE, _set_status_event, fact_join
from indexing import sql
from indexing.vectors import serving_space
from tenants import cross_tenant
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.models import Tenant
from tenants.scope import scope_within, tenant_scope

logger = logging.getLogger(__name__)

# Neighbours compared with a new fact: the nearest vectors, and the facts sharing an entity.
NEIGHBOURS = 10
ENTITY_NEIGHBOURS = 30
# An entity linked to more facts than this says little about which pairs disagree.
ENTITY_MAX_FACTS = 200
CHECK_BATCH = 200
# How long the scan waits for a fact still without a vector before it passes it by.
HOLE_WAIT = timedelta(minutes=10)
TRUST_SUPERSEDED = 0.2  # how much trust a superseded fact loses
JOB = Actor.job("conflicts")


def _in_scope(scope: str, other: str) -> bool:
    """The same scope, or one inside the other (user:alice and user:alice/project:x)."""
    return scope_within(other, scope) or scope_within(scope, other)


def conflicts_record_new(
    *, tenant: Tenant, fact: Fact, disagreeing: list[tuple[Fact, Verdict]]
) -> list[Conflict]:
    """Record the conflicts a new fact raised when it was stored (`fact_near_check`), each as
    the worker's check would: once per pair, and superseding the older fact at once where the
    tenant chose that for clear disagreements. Caller holds the tenant scope."""
    recorded = []
    for older, verdict in disagreeing:
        with transaction.atomic():
            conflict = _record(tenant, older, fact, verdict)
        if conflict is not None:
            recorded.append(conflict)
    return recorded


# -- detection --------------------------------------------------------------------------------


def _candidates(
    tenant: Tenant, facts: list[Fact], space: Any
) -> dict[int, dict[int, float | None]]:
    """Candidate partners of each fact: its vector neighbours (with their cosine) and the facts
    that share one of its (not too common) entities. A handful of statements for the whole
    batch, not a handful per fact."""
    ids = [f.pk for f in facts]
    found: dict[int, dict[int, float | None]] = {fid: {} for fid in ids}
    if space is not None:
        near = sql.vector_neighbours_of(
            tenant_id=tenant.pk, fact_ids=ids, model=space.name, dimension=space.dimension,
            filters=sql.Filters(kind=Kind.FACT), limit=NEIGHBOURS,
            min_score=NEIGHBOUR_MIN_COSINE,
        )  # fmt: skip
        for fid, rows in near.items():
            found[fid].update(rows)
    links = FactEntity.objects.for_tenant(tenant)
    entities_of: dict[int, set[int]] = {}
    for fid, entity_id in links.filter(fact_id__in=ids).values_list("fact_id", "entity_id"):
        entities_of.setdefault(fid, set()).add(entity_id)
    named = set().union(*entities_of.values()) if entities_of else set()
    narrow = set(sql.entities_within(tenant_id=tenant.pk, entity_ids=sorted(named),
                                     most=ENTITY_MAX_FACTS))  # fmt: skip
    facts_of: dict[int, set[int]] = {}
    for entity_id, fid in links.filter(entity_id__in=narrow).values_list("entity_id", "fact_id"):
        facts_of.setdefault(entity_id, set()).add(fid)
    for fid, entity_ids in entities_of.items():
        shared = set().union(*(facts_of.get(e, set()) for e in entity_ids)) - {fid}
        for other in sorted(shared, reverse=True)[:ENTITY_NEIGHBOURS]:
            found[fid].setdefault(other, None)
    return found


def _record(tenant: Tenant, older: Fact, newer: Fact, verdict: Verdict) -> Conflict | None:
    first, second = sorted((older, newer), key=lambda f: f.pk)
    try:
        with transaction.atomic():
            conflict, created = Conflict.objects.for_tenant(tenant).get_or_create(
                fact_a=first,
                fact_b=second,
                defaults={
                    "tenant": tenant,
                    "reason": verdict.reason,
                    "score": verdict.score,
                    "detected_by": str(JOB),
                },
            )
    except IntegrityError:
        return None
    if not created:
        return None  # known already: decided pairs are not raised again
    if int(tenant.setting("conflict_auto_supersede")) and verdict.clear and newer.pk != older.pk:
        _resolve(tenant, conflict, ConflictResolution.SUPERSEDE, JOB,
                 "a clear, newer statement (automatic)")  # fmt: skip
    return conflict


@dataclass(frozen=True)
class CheckResult:
    checked: int
    conflicts: int
    joined: int


def _newer(a: Fact, b: Fact) -> tuple[Fact, Fact]:
    """(older, newer) by when they were stated."""
    return (a, b) if (a.created_at, a.pk) <= (b.created_at, b.pk) else (b, a)


def _partners(
    tenant: Tenant, candidates: dict[int, dict[int, float | None]], space: Any
) -> tuple[dict[int, Fact], dict[tuple[int, int], float]]:
    """The candidates' partners that are active facts, by id, and the cosine of each pair that
    was found by a shared entity rather than by its vector (one statement for all of them)."""
    partners = {
        p.pk: p
        for p in Fact.objects.for_tenant(tenant)
        .filter(pk__in={pid for found in candidates.values() for pid in found},
                status=Status.ACTIVE, kind=Kind.FACT)
        .defer("search_vector")
    }  # fmt: skip
    missing = [
        (fid, pid)
        for fid, found in candidates.items()
        for pid, score in found.items()
        if score is None and pid in partners
    ]
    scores = (
        sql.vector_pair_scores(tenant_id=tenant.pk, pairs=missing, model=space.name)
        if space is not None
        else {}
    )
    return partners, scores


def conflicts_check(*, tenant: Tenant, fact_ids: list[int]) -> CheckResult:
    """Compare each of these facts with its neighbours; record the pairs that disagree, join
    a duplicate to the older fact. Idempotent: a pair is recorded once, whatever its fate."""
    conflicts = joined = checked = 0
    with tenant_scope(tenant):
        space = serving_space()
        facts = list(
            Fact.objects.for_tenant(tenant)
            .filter(pk__in=fact_ids, status=Status.ACTIVE, kind=Kind.FACT)
            .defer("search_vector")
            .order_by("pk")
        )
        candidates = _candidates(tenant, facts, space)
        partners, scores = _partners(tenant, candidates, space)
        threshold = float(tenant.setting("duplicate_threshold"))
        gone: set[int] = set()  # left recall during this check (joined, superseded)
        for fact in facts:
            checked += 1
            if fact.pk in gone:
                continue
            for pid in sorted(candidates[fact.pk]):
                partner = partners.get(pid)
                if partner is None or pid in gone or not _in_scope(fact.scope, partner.scope):
                    continue
                similarity = candidates[fact.pk][pid]
                if similarity is None:
                    similarity = scores.get((fact.pk, pid))
                older, newer = _newer(partner, fact)
                verdict = pair_judge(older.content, newer.content, similarity=similarity,
                                     duplicate_threshold=threshold)  # fmt: skip
                if verdict.label == CONTRADICT:
                    with transaction.atomic():
                        conflict = _record(tenant, older, newer, verdict)
                    conflicts += conflict is not None
                    if conflict is not None and conflict.resolution == ConflictResolution.SUPERSEDE:
                        gone.add(older.pk)
                        if older.pk == fact.pk:
                            break
                elif verdict.label == DUPLICATE and older.scope == newer.scope:
                    with transaction.atomic():
                        if _join_later(tenant, older, newer, similarity or 1.0):
                            joined += 1
                            gone.add(newer.pk)
                    if newer.pk == fact.pk:
                        break  # this fact is gone into the older one
    return CheckResult(checked=checked, conflicts=conflicts, joined=joined)


def _join_later(tenant: Tenant, older: Fact, newer: Fact, similarity: float) -> bool:
    """A duplicate found after both were stored: the newer joins the older and leaves recall."""
    newer = Fact.objects.for_tenant(tenant).select_for_update().get(pk=newer.pk)
    if newer.status != Status.ACTIVE:
        return False
    fact_join(tenant=tenant, fact=older, content=newer.content, tags=newer.tags, actor=JOB,
              similarity=round(similarity, 4))  # fmt: skip
    newer.status, newer.superseded_by = Status.SUPERSEDED, older
    newer.save(update_fields=["status", "superseded_by", "updated_at"])
    _set_status_event(tenant, newer, EventAction.SUPERSEDE, JOB, before={"status": "active"},
                      after={"status": "superseded", "superseded_by": older.pk,
                             "reason": "duplicate"})  # fmt: skip
    return True


def conflicts_check_pending(*, tenant: Tenant, limit: int = CHECK_BATCH) -> CheckResult:
    """Check the tenant's embedded facts that were never checked, or changed since: new facts
    after the worker embedded them, and (the sweep) facts stored before conflicts were looked
    for. Returns what it did; call again while `checked` is `limit`.

    The tenant's scan row is held (SELECT ... FOR UPDATE) from reading how far the checks came
    to writing how far they now are, so two workers never check the same facts at once: the
    second waits for the first's batch, then takes the next one."""
    with tenant_scope(tenant):
        ConflictScan.objects.for_tenant(tenant).get_or_create(defaults={"tenant": tenant})
        scan = ConflictScan.objects.for_tenant(tenant).select_for_update().get()
        started = timezone.now()
        last_at: datetime = scan.at
        facts = Fact.objects.for_tenant(tenant).filter(status=Status.ACTIVE, kind=Kind.FACT)
        embedded = facts.exclude(embedding_model="")
        changes: dict[str, Any] = {}
        # First the facts the scan passed that changed since `at`, in the order they changed.
        changed = list(
            embedded.filter(pk__lte=scan.last_fact_id, updated_at__gt=last_at)
            .order_by("updated_at", "pk")
            .values_list("pk", "updated_at")[:limit]
        )
        ids = [pk for pk, _ in changed]
        if len(changed) == limit:
            # More may have changed: `at` moves to the last moment this batch covers whole.
            # (All of a full batch changed at one moment, a bulk change: the rest of that
            # moment is passed by, or the scan would check these again and again.)
            last = changed[-1][1]
            earlier = [when for _, when in changed if when < last]
            changes["at"] = earlier[-1] if earlier else last
            if not earlier:
                logger.warning("tenant %s: conflict scan passes facts changed at %s in bulk",
                               tenant.pk, last)  # fmt: skip
        else:
            changes["at"] = started
            # Then the facts it has not reached. Workers commit their embedding batches in any
            # order: a fact still without a vector below newer embedded ones is a hole the scan
            # must not pass, or that fact would never be checked. One left without a vector for
            # long (its embedder fails on it) is not waited for.
            hole = (
                facts.filter(embedding_model="", pk__gt=scan.last_fact_id,
                             updated_at__gt=started - HOLE_WAIT)
                .order_by("pk")
                .values_list("pk", flat=True)
                .first()
            )  # fmt: skip
            newer = embedded.filter(pk__gt=scan.last_fact_id)
            if hole is not None:
                newer = newer.filter(pk__lt=hole)
            fresh = list(newer.order_by("pk").values_list("pk", flat=True)[: limit - len(ids)])
            if fresh:
                changes["last_fact_id"] = fresh[-1]
            ids += fresh
        result = conflicts_check(tenant=tenant, fact_ids=ids) if ids else CheckResult(0, 0, 0)
        if changes:
            ConflictScan.objects.for_tenant(tenant).filter(pk=scan.pk).update(**changes)
    return result


def tenants_with_unchecked_facts() -> list[int]:
    """Tenants with embedded facts stored after their last conflict check."""
    return cross_tenant.tenants_unchecked()


# -- decisions --------------------------------------------------------------------------------


def _resolve(
    tenant: Tenant, conflict: Conflict, decision: str, actor: Actor, note: str
) -> Conflict:
    a = Fact.objects.for_tenant(tenant).select_for_update().get(pk=conflict.fact_a_id)
    b = Fact.objects.for_tenant(tenant).select_for_update().get(pk=conflict.fact_b_id)
    older, newer = _newer(a, b)
    if decision == ConflictResolution.SUPERSEDE:
        if older.status not in (Status.ACTIVE, Status.ARCHIVED):
            raise InvalidInput(
                "decision", f"fact {older.pk} is {older.status}: nothing to supersede"
            )
        before = {"status": older.status, "trust_score": older.trust_score}
        older.status, older.superseded_by = Status.SUPERSEDED, newer
        older.trust_score = round(max(0.0, older.trust_score - TRUST_SUPERSEDED), 6)
        older.save(update_fields=["status", "superseded_by", "trust_score", "updated_at"])
        after = {"status": "superseded", "superseded_by": newer.pk,
                 "trust_score": older.trust_score, "conflict": conflict.pk}  # fmt: skip
        _set_status_event(tenant, older, EventAction.SUPERSEDE, actor, before=before, after=after)
    conflict.status = ConflictStatus.RESOLVED
    conflict.resolution = decision
    conflict.note = note
    conflict.resolved_by = str(actor)
    conflict.resolved_at = timezone.now()
    conflict.save(update_fields=["status", "resolution", "note", "resolved_by", "resolved_at"])
    for fact, other in ((a, b), (b, a)):
        _set_status_event(tenant, fact, EventAction.CONFLICT, actor,
                          after={"conflict": conflict.pk, "with": other.pk, "decision": decision,
                                 "note": note})  # fmt: skip
    return conflict


def conflict_resolve(
    *, tenant: Tenant, conflict_id: int, decision: str, actor: Actor, note: str = ""
) -> Conflict:
    """Decide an open conflict: `keep_both`, `supersede` (the older by the newer) or
    `dismiss` (not a conflict), with a note (`facts.inputs.conflict_decision` and
    `conflict_note` give them). Audited on both facts."""
    with tenant_scope(tenant), transaction.atomic():
        conflict = None
        if 0 < conflict_id <= MAX_ID:
            conflict = (
                Conflict.objects.for_tenant(tenant)
                .select_for_update()
                .filter(pk=conflict_id)
                .first()
            )
        if conflict is None:
            raise NotFound("conflict", conflict_id)
        if conflict.status != ConflictStatus.OPEN:
            raise InvalidInput("decision", f"conflict {conflict.pk} was decided already")
        return _resolve(tenant, conflict, decision, actor, note)
