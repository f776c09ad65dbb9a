"""Reads of facts, always inside the tenant's scope; another tenant's id is simply not found."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from facts.entities import entity_normalize
from facts.models import (
    DictionaryEntry,
    Entity,
    EventAction,
    Fact,
    FactEntity,
    FactEvent,
    FactVector,
    Kind,
    Status,
)
from tenants.errors import InvalidInput, NotFound
from tenants.models import Tenant, TenantAction, TenantEvent
from tenants.scope import current_scope_limit, scope_q, tenant_scope

MAX_PAGE = 200
MAX_ID = 2**63 - 1  # bigint


def _fact_id(value: Any) -> int:
    if isinstance(value, bool):
        raise InvalidInput("fact_id", "must be a whole number")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidInput("fact_id", "must be a whole number") from None


def fact_get(*, tenant: Tenant, fact_id: Any) -> Fact:
    with tenant_scope(tenant):
        fact = Fact.objects.for_tenant(tenant).filter(pk=_fact_id(fact_id)).first()
    if fact is None:
        raise NotFound("fact", fact_id)
    return fact


@dataclass(frozen=True)
class FactPage:
    facts: list[Fact]
    next_cursor: str | None


def _encode_cursor(fact: Fact) -> str:
    raw = f"{fact.created_at.isoformat()}|{fact.pk}"
    return base64.urlsafe_b64encode(raw.encode()).decode()


ORDERS = ("newest", "importance")


def _encode_importance_cursor(fact: Fact) -> str:
    raw = f"importance|{fact.importance!r}|{fact.pk}"
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_importance_cursor(cursor: str) -> tuple[float, int]:
    try:
        tag, value, ident = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        importance, pk = float(value), int(ident)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput("cursor", "is not a cursor this list gave out") from None
    if tag != "importance" or importance != importance or not 0 < pk <= MAX_ID:
        raise InvalidInput("cursor", "is not a cursor this list gave out")
    return importance, pk


def _decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        stamp, _, ident = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        moment, pk = datetime.fromisoformat(stamp), int(ident)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput("cursor", "is not a cursor this list gave out") from None
    # A hand-made cursor must not reach PostgreSQL as an out-of-range id or a naive time.
    if moment.tzinfo is None or not 0 < pk <= MAX_ID:
        raise InvalidInput("cursor", "is not a cursor this list gave out")
    return moment, pk


def _choice(field: str, value: str | None, allowed: list[str]) -> str | None:
    if value is not None and value not in allowed:
        raise InvalidInput(field, f"must be one of {', '.join(allowed)}")
    return value


def fact_list(
    *,
    tenant: Tenant,
    scope_prefix: str | None = None,
    category: str | None = None,
    kind: str | None = None,
    status: str | None = Status.ACTIVE,
    trust_min: float | None = None,
    trust_max: float | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    entity_id: int | None = None,
    limit: int = 50,
    cursor: str | None = None,
    order: str = "newest",
) -> FactPage:
    """Newest first (or most important first: `order="importance"`), in pages; `cursor`
    continues where the last page ended (keyset: stays fast however deep one pages)."""
    from facts.models import Category

    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInput("limit", f"must be a whole number from 1 to {MAX_PAGE}")
    filters = Q()
    if scope_prefix:
        filters &= scope_q(scope_prefix)
    if _choice("category", category, Category.values):
        filters &= Q(category=category)
    if _choice("kind", kind, Kind.values):
        filters &= Q(kind=kind)
    if _choice("status", status, Status.values):
        filters &= Q(status=status)
    for field, value, lookup in (
        ("trust_min", trust_min, "trust_score__gte"),
        ("trust_max", trust_max, "trust_score__lte"),
    ):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidInput(field, "must be a number")
            filters &= Q(**{lookup: value})
    if created_after is not None:
        filters &= Q(created_at__gte=created_after)
    if created_before is not None:
        filters &= Q(created_at__lt=created_before)
    if order not in ORDERS:
        raise InvalidInput("order", f"must be one of {', '.join(ORDERS)}")
    by_importance = order == "importance"
    if cursor and by_importance:
        value, ident = _decode_importance_cursor(cursor)
        filters &= Q(importance__lt=value) | Q(importance=value, pk__lt=ident)
    elif cursor:
        stamp, ident = _decode_cursor(cursor)
        filters &= Q(created_at__lt=stamp) | Q(created_at=stamp, pk__lt=ident)
    ordering = ("-importance", "-id") if by_importance else ("-created_at", "-id")
    with tenant_scope(tenant):
        facts = Fact.objects.for_tenant(tenant)
        if entity_id is not None:
            links = FactEntity.objects.for_tenant(tenant).filter(entity_id=entity_id)
            facts = facts.filter(pk__in=links.values("fact_id"))
        rows = list(facts.filter(filters).defer("search_vector").order_by(*ordering)[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    encode = _encode_importance_cursor if by_importance else _encode_cursor
    return FactPage(facts=rows, next_cursor=encode(rows[-1]) if more and rows else None)


def fact_history(*, tenant: Tenant, fact_id: Any) -> list[FactEvent]:
    """Every recorded change of a fact, oldest first (also after it was purged)."""
    ident = _fact_id(fact_id)
    with tenant_scope(tenant):
        if current_scope_limit() and not Fact.objects.for_tenant(tenant).filter(pk=ident).exists():
            raise NotFound("fact", fact_id)  # outside the key's scope limit
        events = list(
            FactEvent.objects.for_tenant(tenant).filter(fact_id=ident).order_by("at", "id")
        )
    if not events:
        raise NotFound("fact", fact_id)
    return events


def fact_entities(*, tenant: Tenant, fact_id: Any) -> list[Entity]:
    with tenant_scope(tenant):
        ids = FactEntity.objects.for_tenant(tenant).filter(fact_id=_fact_id(fact_id))
        return list(
            Entity.objects.for_tenant(tenant)
            .filter(pk__in=ids.values("entity_id"))
            .order_by("name")
        )


def fact_vectors(*, tenant: Tenant, fact_id: Any) -> list[FactVector]:
    """The fact's vectors, one per embedding model, oldest model first."""
    with tenant_scope(tenant):
        return list(
            FactVector.objects.for_tenant(tenant)
            .filter(fact_id=_fact_id(fact_id))
            .order_by("created_at", "id")
        )


def fact_count(*, tenant: Tenant, status: str | None = Status.ACTIVE) -> int:
    with tenant_scope(tenant):
        facts = Fact.objects.for_tenant(tenant)
        return (facts.filter(status=status) if status else facts).count()


# -- entities ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntityPage:
    entities: list[Entity]
    next_cursor: str | None


def _active_fact_count(tenant: Tenant) -> Coalesce:
    """Per entity: how many active facts name it (a subquery, so lists stay one query)."""
    links = (
        FactEntity.objects.for_tenant(tenant)
        .filter(entity_id=OuterRef("pk"), fact__status=Status.ACTIVE)
        .order_by()
        .values("entity_id")
        .annotate(n=Count("*"))
        .values("n")
    )
    return Coalesce(Subquery(links, output_field=IntegerField()), 0)


def _entity_id(value: Any) -> int:
    if isinstance(value, bool):
        raise InvalidInput("entity_id", "must be a whole number")
    try:
        ident = int(value)
    except (TypeError, ValueError):
        raise InvalidInput("entity_id", "must be a whole number") from None
    if not 0 < ident <= MAX_ID:
        raise NotFound("entity", value)
    return ident


def entity_get(*, tenant: Tenant, entity_id: Any) -> Entity:
    """The entity, with `fact_count` (its active facts)."""
    ident = _entity_id(entity_id)
    with tenant_scope(tenant):
        entity = (
            Entity.objects.for_tenant(tenant)
            .annotate(fact_count=_active_fact_count(tenant))
            .filter(pk=ident)
            .first()
        )
    if entity is None:
        raise NotFound("entity", entity_id)
    return entity


def _encode_key(*parts: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(parts).encode()).decode()


def _decode_key(cursor: str, shape: tuple[type, ...]) -> list[Any]:
    try:
        parts = json.loads(base64.urlsafe_b64decode(cursor.encode()).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        parts = None
    if not isinstance(parts, list) or len(parts) != len(shape):
        raise InvalidInput("cursor", "is not a cursor this list gave out")
    if not all(
        isinstance(p, t) and not isinstance(p, bool) for p, t in zip(parts, shape, strict=True)
    ):
        raise InvalidInput("cursor", "is not a cursor this list gave out")
    return parts


def entity_list(
    *,
    tenant: Tenant,
    query: str | None = None,
    type: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> EntityPage:
    """Entities by name (an alias matches too), each with `fact_count`; keyset pages."""
    from facts.models import EntityType

    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInput("limit", f"must be a whole number from 1 to {MAX_PAGE}")
    filters = Q()
    if query and query.strip():
        key = entity_normalize(query)
        filters &= Q(normalized__contains=key) | Q(aliases__contains=[key])
    if _choice("type", type, EntityType.values):
        filters &= Q(type=type)
    if cursor:
        name, ident = _decode_key(cursor, (str, int))
        filters &= Q(normalized__gt=name) | Q(normalized=name, pk__gt=ident)
    with tenant_scope(tenant):
        rows = list(
            Entity.objects.for_tenant(tenant)
            .filter(filters)
            .order_by("normalized", "id")[: limit + 1]
        )
        more = len(rows) > limit
        rows = rows[:limit]
        # One grouped count for the page: a subquery per entity would read a popular entity's
        # links one by one (seconds with 100,000 facts); one join reads them all at once.
        counts = dict(
            FactEntity.objects.for_tenant(tenant)
            .filter(entity_id__in=[e.pk for e in rows], fact__status=Status.ACTIVE)
            .order_by()
            .values_list("entity_id")
            .annotate(n=Count("*"))
        ) if rows else {}  # fmt: skip
    for entity in rows:
        entity.fact_count = counts.get(entity.pk, 0)
    last = rows[-1] if rows else None
    return EntityPage(
        entities=rows,
        next_cursor=_encode_key(last.normalized, last.pk) if more and last else None,
    )


def entity_facts(
    *, tenant: Tenant, entity_id: Any, status: str | None = Status.ACTIVE, limit: int = 50,
    cursor: str | None = None,
) -> FactPage:  # fmt: skip
    """The facts that name an entity, newest first (404 for another tenant's entity)."""
    entity = entity_get(tenant=tenant, entity_id=entity_id)
    return fact_list(tenant=tenant, entity_id=entity.pk, status=status, limit=limit, cursor=cursor)


# -- audit ------------------------------------------------------------------------------------
# Two append-only tables make the audit log: FactEvent (what happened to facts) and TenantEvent
# (settings, members, keys, retention). One list shows both, newest first.

AUDIT_SOURCES = ("fact", "tenant")
# Sort rank within one instant, so the order (at, source, id) is total and a cursor is exact.
_SOURCE_RANK = {"fact": 1, "tenant": 0}


@dataclass(frozen=True)
class AuditEvent:
    source: str
    id: int
    action: str
    actor: str
    fact_id: int | None
    target: str
    before: Any
    after: Any
    at: datetime

    @property
    def key(self) -> tuple[datetime, int, int]:
        return (self.at, _SOURCE_RANK[self.source], self.id)


@dataclass(frozen=True)
class AuditPage:
    events: list[AuditEvent]
    next_cursor: str | None


def audit_actions() -> list[str]:
    return [*EventAction.values, *TenantAction.values]


def _keyset(source: str, after: tuple[datetime, int, int] | None) -> Q:
    """Rows strictly after the cursor in the order (at, source rank, id), descending."""
    if after is None:
        return Q()
    at, rank, ident = after
    mine = _SOURCE_RANK[source]
    if mine < rank:
        return Q(at__lte=at)
    if mine > rank:
        return Q(at__lt=at)
    return Q(at__lt=at) | Q(at=at, pk__lt=ident)


def audit_event_list(
    *,
    tenant: Tenant,
    source: str | None = None,
    action: str | None = None,
    actor: str | None = None,
    fact_id: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> AuditPage:
    """The tenant's audit events, newest first, filtered; keyset pages over both tables.

    `actor` matches exactly or as a prefix of whole parts: `apikey:7` matches `apikey:7:hermes`.
    `fact_id` keeps only that fact's events (also after it was purged).
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInput("limit", f"must be a whole number from 1 to {MAX_PAGE}")
    _choice("source", source, list(AUDIT_SOURCES))
    _choice("action", action, audit_actions())
    after: tuple[datetime, int, int] | None = None
    if cursor:
        stamp, rank, ident = _decode_key(cursor, (str, int, int))
        try:
            moment = datetime.fromisoformat(stamp)
        except ValueError:
            raise InvalidInput("cursor", "is not a cursor this list gave out") from None
        if moment.tzinfo is None or rank not in (0, 1) or not 0 < ident <= MAX_ID:
            raise InvalidInput("cursor", "is not a cursor this list gave out")
        after = (moment, rank, ident)
    common = Q()
    if action:
        common &= Q(action=action)
    if actor:
        common &= Q(actor=actor) | Q(actor__startswith=f"{actor}:")
    if since is not None:
        common &= Q(at__gte=since)
    if until is not None:
        common &= Q(at__lt=until)
    sources = [source] if source else list(AUDIT_SOURCES)
    if fact_id is not None:
        sources = [s for s in sources if s == "fact"]
    events: list[AuditEvent] = []
    with tenant_scope(tenant):
        if "fact" in sources:
            rows = FactEvent.objects.for_tenant(tenant).filter(common & _keyset("fact", after))
            if fact_id is not None:
                rows = rows.filter(fact_id=fact_id)
            events += [
                AuditEvent("fact", e.pk, e.action, e.actor, e.fact_id, "", e.before, e.after, e.at)
                for e in rows.order_by("-at", "-id")[: limit + 1]
            ]
        if "tenant" in sources:
            rows = TenantEvent.objects.for_tenant(tenant).filter(common & _keyset("tenant", after))
            events += [
                AuditEvent(
                    "tenant", e.pk, e.action, e.actor, None, e.target, e.before, e.after, e.at
                )
                for e in rows.order_by("-at", "-id")[: limit + 1]
            ]
    events.sort(key=lambda e: e.key, reverse=True)
    more = len(events) > limit
    events = events[:limit]
    last = events[-1] if events else None
    next_cursor = None
    if more and last is not None:
        next_cursor = _encode_key(last.at.isoformat(), _SOURCE_RANK[last.source], last.id)
    return AuditPage(events=events, next_cursor=next_cursor)


def audit_event_iter(
    *, tenant: Tenant, page_size: int = MAX_PAGE, **filters: Any
) -> Iterator[AuditEvent]:
    """Every matching event, newest first, a page (one short transaction) at a time."""
    cursor = None
    while True:
        page = audit_event_list(tenant=tenant, limit=page_size, cursor=cursor, **filters)
        yield from page.events
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


# -- retention --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetentionPreview:
    """What the policy would do if it ran now: facts it would archive (by reason) and purge."""

    legal_hold: bool
    active: int
    archived: int
    archive_unretrieved: int
    archive_low_trust: int
    archive_over_limit: int
    archive: int
    purge: int
    policy: dict[str, Any]  # the limits counted with


def retention_preview(
    *, tenant: Tenant, changes: dict[str, Any] | None = None, now: datetime | None = None
) -> RetentionPreview:
    """Count what the tenant's policy (with `changes` applied, unsaved) would archive and
    purge now, in one query. Nothing is archived or purged under legal hold.

    - unretrieved: active facts not retrieved (or, never retrieved, not created) for N days;
    - low trust: active facts below the trust floor;
    - over limit: the active facts beyond `max_active_facts` once the two above are gone;
    - purge: archived facts archived more than M days ago.
    """
    from tenants.selectors import retention_policy_get
    from tenants.services import retention_changes_validate

    policy = retention_policy_get(tenant=tenant)
    values = {
        field: getattr(policy, field)
        for field in (
            "archive_after_days_unretrieved",
            "archive_below_trust",
            "max_active_facts",
            "purge_archived_after_days",
            "legal_hold",
            "run_every_hours",
        )
    }
    if changes:
        values.update(retention_changes_validate(dict(changes)))
    moment = now or timezone.now()
    active = Q(status=Status.ACTIVE)
    archivable = active & Q(pinned=False)  # a pinned fact is never archived
    archived = Q(status=Status.ARCHIVED)
    rules: dict[str, Q] = {}  # only the limits that are set: an unset one archives nothing
    if values["archive_after_days_unretrieved"] is not None:
        cutoff = moment - timedelta(days=values["archive_after_days_unretrieved"])
        rules["unretrieved"] = Q(last_seen__lt=cutoff)
    if values["archive_below_trust"] is not None:
        rules["low_trust"] = Q(trust_score__lt=values["archive_below_trust"])
    aggregates = {
        "active": Count("pk", filter=active),
        "archivable": Count("pk", filter=archivable),
        "archived": Count("pk", filter=archived),
    }
    for name, rule in rules.items():
        aggregates[name] = Count("pk", filter=archivable & rule)
    if rules:
        either = Q()
        for rule in rules.values():
            either |= rule
        aggregates["either"] = Count("pk", filter=archivable & either)
    if values["purge_archived_after_days"] is not None:
        cutoff = moment - timedelta(days=values["purge_archived_after_days"])
        aggregates["purge"] = Count("pk", filter=archived & Q(archived_on__lt=cutoff))
    with tenant_scope(tenant):
        found = (
            Fact.objects.for_tenant(tenant)
            .annotate(
                last_seen=Coalesce("last_retrieved_at", "created_at"),
                # When retention archived it; its last change for facts archived otherwise.
                archived_on=Coalesce("archived_at", "updated_at"),
            )
            .aggregate(**aggregates)
        )
    counts = {"unretrieved": 0, "low_trust": 0, "either": 0, "purge": 0, **found}
    over = 0
    if values["max_active_facts"] is not None:
        over = max(0, counts["active"] - counts["either"] - values["max_active_facts"])
        over = min(over, counts["archivable"] - counts["either"])
    hold = bool(values["legal_hold"])
    return RetentionPreview(
        legal_hold=hold,
        active=counts["active"],
        archived=counts["archived"],
        archive_unretrieved=0 if hold else counts["unretrieved"],
        archive_low_trust=0 if hold else counts["low_trust"],
        archive_over_limit=0 if hold else over,
        archive=0 if hold else counts["either"] + over,
        purge=0 if hold else counts["purge"],
        policy=values | {"updated_at": policy.updated_at},
    )


# -- the web admin's dashboard and fact page ----------------------------------------------------


TRUST_BANDS = 10


@dataclass(frozen=True)
class FactCounts:
    facts: int  # active curated facts
    turns: int  # active conversation turns
    archived: int
    removed: int
    superseded: int
    unembedded: int  # active facts without a vector of `embedding_model` (the backlog)
    # Active facts per trust band: [0, 0.1), [0.1, 0.2), ... [0.9, 1.0] (1.0 in the last).
    trust_bands: list[int]


def fact_counts(*, tenant: Tenant, embedding_model: str | None) -> FactCounts:
    """How many facts the tenant has in each state, and the active ones by trust, in one pass
    over its facts.

    `embedding_model` is the model new vectors are made with; active facts whose newest vector
    is of another model (or that have none) are the embedding backlog. None: no model yet, so
    every active fact waits."""
    active = Q(status=Status.ACTIVE)
    waiting = active & ~Q(embedding_model=embedding_model) if embedding_model else active
    bands = {}
    for band in range(TRUST_BANDS):
        low, high = band / TRUST_BANDS, (band + 1) / TRUST_BANDS
        upper = Q(trust_score__lte=high) if band == TRUST_BANDS - 1 else Q(trust_score__lt=high)
        bands[f"band{band}"] = Count("pk", filter=active & Q(trust_score__gte=low) & upper)
    with tenant_scope(tenant):
        found = Fact.objects.for_tenant(tenant).aggregate(
            facts=Count("pk", filter=active & Q(kind=Kind.FACT)),
            turns=Count("pk", filter=active & Q(kind=Kind.TURN)),
            archived=Count("pk", filter=Q(status=Status.ARCHIVED)),
            removed=Count("pk", filter=Q(status=Status.REMOVED)),
            superseded=Count("pk", filter=Q(status=Status.SUPERSEDED)),
            unembedded=Count("pk", filter=waiting),
            **bands,
        )
    trust = [found.pop(f"band{band}") for band in range(TRUST_BANDS)]
    return FactCounts(**found, trust_bands=trust)


def entity_count(*, tenant: Tenant) -> int:
    with tenant_scope(tenant):
        return Entity.objects.for_tenant(tenant).count()


def conflict_open_count(*, tenant: Tenant) -> int:
    from facts.models import Conflict, ConflictStatus

    with tenant_scope(tenant):
        return Conflict.objects.for_tenant(tenant).filter(status=ConflictStatus.OPEN).count()


@dataclass(frozen=True)
class DayCount:
    day: date
    facts: int
    turns: int


def fact_added_per_day(
    *, tenant: Tenant, days: int = 30, now: datetime | None = None
) -> list[DayCount]:
    """Facts and turns stored per day (UTC) over the last `days` days, today included; days
    without any are there with zeros."""
    from django.db.models.functions import TruncDate

    today = (now or timezone.now()).astimezone(UTC).date()
    first = today - timedelta(days=days - 1)
    since = datetime(first.year, first.month, first.day, tzinfo=UTC)
    with tenant_scope(tenant):
        rows = (
            Fact.objects.for_tenant(tenant)
            .filter(created_at__gte=since)
            .annotate(day=TruncDate("created_at", tzinfo=UTC))
            .values_list("day", "kind")
            .annotate(n=Count("pk"))
            .order_by()
        )
        counted = {(day, kind): n for day, kind, n in rows}
    return [
        DayCount(
            day=first + timedelta(days=offset),
            facts=counted.get((first + timedelta(days=offset), Kind.FACT), 0),
            turns=counted.get((first + timedelta(days=offset), Kind.TURN), 0),
        )
        for offset in range(days)
    ]


def entity_top(*, tenant: Tenant, limit: int = 10) -> list[tuple[Entity, int]]:
    """The entities most active facts mention, with that count."""
    with tenant_scope(tenant):
        counts = list(
            FactEntity.objects.for_tenant(tenant)
            .filter(fact__status=Status.ACTIVE)
            .values_list("entity_id")
            .annotate(n=Count("*"))
            .order_by("-n", "entity_id")[:limit]
        )
        entities = Entity.objects.for_tenant(tenant).in_bulk([ident for ident, _ in counts])
    return [(entities[ident], n) for ident, n in counts if ident in entities]


def fact_feedback_list(*, tenant: Tenant, fact_id: Any, limit: int = 100) -> list[Any]:
    """The fact's feedback, newest first."""
    from facts.models import Feedback

    with tenant_scope(tenant):
        return list(
            Feedback.objects.for_tenant(tenant)
            .filter(fact_id=_fact_id(fact_id))
            .order_by("-at", "-id")[:limit]
        )


def fact_conflicts(*, tenant: Tenant, fact_id: Any) -> list[Any]:
    """The conflicts the fact is part of (either side), newest first, both facts loaded."""
    from facts.models import Conflict

    ident = _fact_id(fact_id)
    with tenant_scope(tenant):
        return list(
            Conflict.objects.for_tenant(tenant)
            .filter(Q(fact_a_id=ident) | Q(fact_b_id=ident))
            .select_related("fact_a", "fact_b")
            .defer("fact_a__search_vector", "fact_b__search_vector")
            .order_by("-detected_at", "-id")
        )


@dataclass(frozen=True)
class TrustPoint:
    at: datetime
    trust: float
    action: str
    actor: str


def fact_trust_history(events: list[FactEvent]) -> list[TrustPoint]:
    """The fact's trust over time, from its audit events (oldest first): where it started and
    every change (feedback, updates)."""
    points = []
    for event in events:
        after = event.after if isinstance(event.after, dict) else {}
        value = after.get("trust_score")
        if isinstance(value, int | float) and not isinstance(value, bool):
            points.append(TrustPoint(event.at, float(value), event.action, event.actor))
    return points


def fact_iter(*, tenant: Tenant, page_size: int = MAX_PAGE, **filters: Any) -> Iterator[Fact]:
    """Every fact `fact_list` would page through with these filters, newest first, a page (one
    short transaction) at a time: for exports."""
    cursor = None
    while True:
        page = fact_list(tenant=tenant, limit=page_size, cursor=cursor, **filters)
        yield from page.facts
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def dictionary_entries(*, tenant: Tenant) -> list[DictionaryEntry]:
    """The tenant's user dictionary, by term."""
    with tenant_scope(tenant):
        return list(DictionaryEntry.objects.for_tenant(tenant).order_by("normalized"))
