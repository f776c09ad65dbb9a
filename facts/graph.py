"""Reads of the entity graph: the facts about an entity, what connects to it, the facts that link
several entities, an entity's neighbourhood, and the open conflicts (recorded by the worker,
facts.conflicts) that the Hermes `contradict` action lists.

Facts are linked to the entities they name when they are stored (facts.entities). These reads
walk those links, always inside the tenant's scope; an entity is found by its name or an alias,
compared after normalisation ("Alice", " alice " and an alias "Ali" are one entity).

They take parsed values: every surface checks names, limits and hops with facts.inputs
(`clean_entity_name`, `entity_names`, `graph_limit`, `graph_hops`) and scopes and choices with
the same functions its writes use.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Count, Q, QuerySet

from facts.entities import entity_normalize
from facts.models import Conflict, ConflictStatus, Entity, Fact, FactEntity, Kind, Status
from tenants.errors import NotFound
from tenants.models import Tenant
from tenants.scope import scope_path, scope_q, tenant_scope

MAX_ENTITIES = 10  # entities one name may stand for (an exact name or alias, else words)
# Co-mentioned entities followed by `entity_related` (the strongest connections first).
RELATED_NEIGHBOURS = 20
# An entity's newest facts that `entity_related` and the neighbourhood walk from: a speaker named
# by every turn of a long conversation is tied to others by its recent facts, and the walk stays
# as fast for it as for an entity named twice.
RECENT_FACTS = 2000
# The newest facts of each co-mentioned entity that `entity_related` looks at for two hops.
TWO_HOP_FACTS = 100


@dataclass
class GraphHit:
    fact: Fact
    score: float
    entities: list[str] = field(default_factory=list)  # the entities that tie it to the question
    hops: int = 1


@dataclass
class Contradiction:
    fact_a: Fact
    fact_b: Fact
    entity_overlap: float
    content_similarity: float
    contradiction_score: float
    shared_entities: list[str]
    recorded: bool = True  # an open Conflict row (the review queue's), never a guess
    conflict_id: int | None = None
    reason: str = ""  # negation, opposite, number, date, value


def _entities_named(tenant: Tenant, key: str) -> list[Entity]:
    """The entity called `key` (name or alias); else those whose name contains it as a word,
    so "alice" finds "Alice Chen" when no entity is called just "Alice"."""
    entities = Entity.objects.for_tenant(tenant)
    exact = list(entities.filter(Q(normalized=key) | Q(aliases__contains=[key]))[:MAX_ENTITIES])
    if exact:
        return exact
    word = re.compile(rf"(?<!\w){re.escape(key)}(?!\w)")
    return [e for e in entities.filter(normalized__contains=key)[:50] if word.search(e.normalized)][
        :MAX_ENTITIES
    ]


def _facts(
    tenant: Tenant, scope: str | None, category: str | None, kind: str | None
) -> QuerySet[Fact]:
    facts = Fact.objects.for_tenant(tenant).filter(status=Status.ACTIVE)
    prefix = scope_path(scope)
    if prefix:
        facts = facts.filter(scope_q(prefix))
    if category:
        facts = facts.filter(category=category)
    if kind:
        facts = facts.filter(kind=kind)
    return facts.defer("search_vector")


def _by_trust(facts: QuerySet[Fact]) -> QuerySet[Fact]:
    return facts.order_by("-trust_score", "-importance", "-created_at", "-id")


def entity_facts(
    *,
    tenant: Tenant,
    name: str,
    scope: str | None = None,
    category: str | None = None,
    kind: str | None = None,
    limit: int = 10,
) -> list[GraphHit]:
    """Every active fact about the entity `name`, most trusted first. Empty when the tenant
    knows no such entity."""
    key = entity_normalize(name)
    with tenant_scope(tenant):
        entities = _entities_named(tenant, key)
        if not entities:
            return []
        linked = FactEntity.objects.for_tenant(tenant).filter(entity__in=entities)
        facts = _by_trust(
            _facts(tenant, scope, category, kind).filter(pk__in=linked.values("fact_id"))
        )[:limit]
        names = [e.name for e in entities]
        return [GraphHit(fact=f, score=f.trust_score, entities=names) for f in facts]


def _entity_by_id(tenant: Tenant, entity_id: int) -> Entity:
    entity = Entity.objects.for_tenant(tenant).filter(pk=entity_id).first()
    if entity is None:
        raise NotFound("entity", entity_id)
    return entity


def _recent_facts(tenant_id: int, entity_ids: Sequence[int], *, active: bool) -> list[int]:
    """The ids of the newest RECENT_FACTS facts linked to any of `entity_ids` (active ones only,
    with `active`), newest first.

    Each entity's links are walked newest first, each fact looked up by its id (OFFSET 0 keeps
    the lookup a lookup), until enough passed: joined instead, the planner read every fact of a
    large tenant to find an entity's two thousand newest."""
    status = (
        "CROSS JOIN LATERAL (SELECT 1 FROM facts_fact f WHERE f.tenant_id = fe.tenant_id "
        "AND f.id = fe.fact_id AND f.status = %s OFFSET 0) f "
        if active
        else ""
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT l.fact_id FROM unnest(%s::bigint[]) AS e(id) CROSS JOIN LATERAL ("  # noqa: S608 - our own clause
            f"SELECT fe.fact_id FROM facts_factentity fe {status}"
            "WHERE fe.tenant_id = %s AND fe.entity_id = e.id ORDER BY fe.fact_id DESC LIMIT %s"
            ") l ORDER BY l.fact_id DESC LIMIT %s",
            [list(entity_ids), *([Status.ACTIVE] if active else []), tenant_id, RECENT_FACTS,
             RECENT_FACTS],
        )  # fmt: skip
        return [row[0] for row in cursor.fetchall()]


def _links_of(tenant_id: int, fact_ids: Sequence[int]) -> dict[int, list[int]]:
    """The entities each of `fact_ids` is linked to."""
    linked: dict[int, list[int]] = defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT fact_id, entity_id FROM facts_factentity "
            "WHERE tenant_id = %s AND fact_id = ANY(%s)",
            [tenant_id, list(fact_ids)],
        )
        for fact_id, entity_id in cursor.fetchall():
            linked[fact_id].append(entity_id)
    return linked


def _named_with(
    linked: dict[int, list[int]], exclude: set[int], limit: int
) -> list[tuple[int, int]]:
    """(entity id, facts naming it) of the `limit` entities most often named in `linked`'s facts,
    `exclude` left out; ties by id."""
    counts: dict[int, int] = defaultdict(int)
    for entities in linked.values():
        for entity_id in set(entities) - exclude:
            counts[entity_id] += 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]


def _newest_links(tenant_id: int, entity_ids: Sequence[int], each: int) -> list[tuple[int, int]]:
    """(fact id, entity id) of the `each` newest facts linked to each of `entity_ids`."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT l.fact_id, e.id FROM unnest(%s::bigint[]) AS e(id) CROSS JOIN LATERAL "
            "(SELECT fe.fact_id FROM facts_factentity fe WHERE fe.tenant_id = %s "
            "AND fe.entity_id = e.id ORDER BY fe.fact_id DESC LIMIT %s) l",
            [list(entity_ids), tenant_id, each],
        )
        return [(row[0], row[1]) for row in cursor.fetchall()]


def entity_related(
    *,
    tenant: Tenant,
    name: str | None = None,
    entity_id: int | None = None,
    hops: int = 2,
    scope: str | None = None,
    category: str | None = None,
    kind: str | None = None,
    limit: int = 10,
) -> list[GraphHit]:
    """What connects to the entity `name` (or `entity_id`): the facts that tie it to other
    entities (one hop), then, with `hops` 2, the facts about those entities (two hops),
    weighted by how often each is mentioned together with it. Each hit names the entities it
    came through."""
    with tenant_scope(tenant):
        entities = (
            [_entity_by_id(tenant, entity_id)]
            if entity_id is not None
            else _entities_named(tenant, entity_normalize(name or ""))
        )
        if not entities:
            return []
        ids = [e.pk for e in entities]
        own_ids = _recent_facts(tenant.pk, ids, active=False)
        return _related(
            tenant, ids, own_ids, _links_of(tenant.pk, own_ids),
            hops=hops, scope=scope, category=category, kind=kind, limit=limit,
        )  # fmt: skip


def _related(
    tenant: Tenant,
    ids: list[int],
    own_ids: list[int],
    linked: dict[int, list[int]],
    *,
    hops: int,
    scope: str | None,
    category: str | None,
    kind: str | None,
    limit: int,
) -> list[GraphHit]:
    """entity_related's walk from the entities `ids`, their facts `own_ids` and those facts'
    links `linked`."""
    neighbours = _named_with(linked, set(ids), RELATED_NEIGHBOURS)
    if not neighbours:
        return []
    strongest = neighbours[0][1]
    weight = {other: together / strongest for other, together in neighbours}
    label = dict(
        Entity.objects.for_tenant(tenant).filter(pk__in=list(weight)).values_list("pk", "name")
    )
    # The facts that tie it to them (one hop), and each one's newest facts (two hops).
    via: dict[int, set[int]] = defaultdict(set)
    for fact_id, others in linked.items():
        via[fact_id].update(e for e in others if e in weight)
    if hops > 1:
        for fact_id, other in _newest_links(tenant.pk, list(weight), TWO_HOP_FACTS):
            via[fact_id].add(other)
    own_set = set(own_ids)
    # Scored on (id, trust) alone; only the best `limit` facts are then read whole.
    scored = []
    for fact_id, trust in (
        _facts(tenant, scope, category, kind)
        .filter(pk__in=[fact_id for fact_id, through in via.items() if through])
        .values_list("pk", "trust_score")
    ):
        distance = 1 if fact_id in own_set else 2
        if distance > hops:
            continue
        strength = max(weight[e] for e in via[fact_id])
        score = (1.0 if distance == 1 else 0.5 * strength) * trust
        scored.append((score, fact_id, distance))
    scored.sort(reverse=True)
    best = scored[:limit]
    facts = {f.pk: f for f in _facts(tenant, scope, category, kind).filter(
        pk__in=[fact_id for _, fact_id, _ in best]
    )}  # fmt: skip
    return [
        GraphHit(fact=facts[fact_id], score=score, hops=distance,
                 entities=sorted({label[e] for e in via[fact_id] if e in label}))
        for score, fact_id, distance in best
        if fact_id in facts
    ]  # fmt: skip


def entities_reason(
    *,
    tenant: Tenant,
    names: Sequence[str],
    scope: str | None = None,
    category: str | None = None,
    kind: str | None = None,
    limit: int = 10,
) -> list[GraphHit]:
    """The facts linked to all of `names` at once; when none links all, those linking the most.
    Score: the share of the names a fact is linked to, times its trust."""
    shown: dict[str, str] = {}  # normalized name -> the name as first given
    for name in names:
        shown.setdefault(entity_normalize(name), name.strip())
    keys, labels = list(shown), list(shown.values())
    with tenant_scope(tenant):
        owner: dict[int, int] = {}  # entity id -> index of the name it answers to
        for index, key in enumerate(keys):
            for entity in _entities_named(tenant, key):
                owner.setdefault(entity.pk, index)
        if not owner:
            return []
        candidates = _facts(tenant, scope, category, kind)
        links = FactEntity.objects.for_tenant(tenant).filter(
            entity_id__in=list(owner), fact_id__in=candidates.values("pk")
        )
        shortlist = list(
            links.values("fact_id")
            .annotate(n=Count("entity_id", distinct=True))
            .order_by("-n", "-fact_id")
            .values_list("fact_id", flat=True)[: limit * 20]
        )
        matched: dict[int, set[int]] = defaultdict(set)
        for fact_id, entity_id in links.filter(fact_id__in=shortlist).values_list(
            "fact_id", "entity_id"
        ):
            matched[fact_id].add(owner[entity_id])
        best = max((len(m) for m in matched.values()), default=0)
        facts = candidates.filter(pk__in=[f for f, m in matched.items() if len(m) == best])
        hits = [
            GraphHit(
                fact=f,
                score=len(matched[f.pk]) / len(keys) * f.trust_score,
                entities=[labels[i] for i in sorted(matched[f.pk])],
            )
            for f in facts
        ]
        hits.sort(key=lambda h: (h.score, h.fact.pk), reverse=True)
        return hits[:limit]


def fact_contradictions(
    *,
    tenant: Tenant,
    scope: str | None = None,
    category: str | None = None,
    limit: int = 10,
) -> list[Contradiction]:
    """The open conflicts among the tenant's active curated facts, the surest first: the
    `Conflict` rows the worker recorded when the facts were stored (facts.conflicts), the same
    ones the review queue shows. Each pair says which entities the two share."""
    with tenant_scope(tenant):
        facts = _facts(tenant, scope, category, Kind.FACT)
        conflicts = list(
            Conflict.objects.for_tenant(tenant)
            .filter(status=ConflictStatus.OPEN, fact_a__in=facts, fact_b__in=facts)
            .select_related("fact_a", "fact_b")
            .order_by("-score", "-id")[:limit]
        )
        ids = {f for c in conflicts for f in (c.fact_a_id, c.fact_b_id)}
        entities_of: dict[int, set[str]] = defaultdict(set)
        for fact_id, name in (
            FactEntity.objects.for_tenant(tenant)
            .filter(fact_id__in=ids)
            .values_list("fact_id", "entity__normalized")
        ):
            entities_of[fact_id].add(name)
    found = []
    for c in conflicts:
        a, b = entities_of[c.fact_a_id], entities_of[c.fact_b_id]
        shared = a & b
        overlap = len(shared) / min(len(a), len(b)) if a and b else 0.0
        found.append(
            Contradiction(
                fact_a=c.fact_a, fact_b=c.fact_b, entity_overlap=round(overlap, 3),
                content_similarity=round(c.score, 3), contradiction_score=round(c.score, 3),
                shared_entities=sorted(shared), recorded=True, conflict_id=c.pk,
                reason=c.reason,
            )
        )  # fmt: skip
    return found


@dataclass(frozen=True)
class Neighbourhood:
    """An entity, the entities most often named with it, and how often each pair is named
    together: what the entity page draws."""

    centre: Entity
    neighbours: list[tuple[Entity, int]]  # (entity, facts naming it with the centre)
    edges: list[tuple[int, int, int]]  # (entity id, entity id, facts naming both)


def entity_neighbourhood(*, tenant: Tenant, entity_id: int, limit: int = 12) -> Neighbourhood:
    """The entity's closest neighbours through its active facts (its newest RECENT_FACTS), and
    how often two of them are named together in those facts."""
    with tenant_scope(tenant):
        centre = _entity_by_id(tenant, entity_id)
        linked = _links_of(tenant.pk, _recent_facts(tenant.pk, [centre.pk], active=True))
        return _neighbourhood(tenant, centre, linked, limit)


def _neighbourhood(
    tenant: Tenant, centre: Entity, linked: dict[int, list[int]], limit: int
) -> Neighbourhood:
    counts = dict(_named_with(linked, {centre.pk}, limit))
    entities = Entity.objects.for_tenant(tenant).in_bulk(list(counts))
    pairs: dict[tuple[int, int], int] = defaultdict(int)
    for others in linked.values():
        shown = sorted(set(others) & counts.keys())
        for i, a in enumerate(shown):
            for b in shown[i + 1 :]:
                pairs[(a, b)] += 1
    neighbours = [(entities[e], n) for e, n in counts.items() if e in entities]
    return Neighbourhood(
        centre=centre,
        neighbours=neighbours,
        edges=[(a, b, n) for (a, b), n in sorted(pairs.items())],
    )


@dataclass(frozen=True)
class EntityGraph:
    """What an entity's page shows of the graph."""

    related: list[GraphHit]
    neighbourhood: Neighbourhood


def entity_graph(
    *, tenant: Tenant, entity_id: int, hops: int = 2, limit: int = 20, neighbours: int = 12
) -> EntityGraph:
    """`entity_related` and `entity_neighbourhood` of one entity at once, both walked from its
    newest active facts, read once (related by itself also walks from facts no longer
    active)."""
    with tenant_scope(tenant):
        centre = _entity_by_id(tenant, entity_id)
        own_ids = _recent_facts(tenant.pk, [centre.pk], active=True)
        linked = _links_of(tenant.pk, own_ids)
        related = _related(
            tenant, [centre.pk], own_ids, linked,
            hops=hops, scope=None, category=None, kind=None, limit=limit,
        )  # fmt: skip
        return EntityGraph(
            related=related, neighbourhood=_neighbourhood(tenant, centre, linked, neighbours)
        )
