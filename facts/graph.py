"""Reads of the entity graph: the facts about an entity, what connects to it, the facts that link
several entities, and pairs of facts that may contradict each other.

Facts are linked to the entities they name when they are stored (facts.entities). These reads
walk those links, always inside the tenant's scope; an entity is found by its name or an alias,
compared after normalisation ("Alice", " alice " and an alias "Ali" are one entity).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from django.db.models import Count, Q, QuerySet

from facts.entities import entity_normalize
from facts.models import Category, Conflict, ConflictStatus, Entity, Fact, FactEntity, Kind, Status
from retrieval.text import analyze
from tenants.errors import InvalidInput
from tenants.models import Tenant
from tenants.scope import tenant_scope

MAX_LIMIT = 100
MAX_ENTITIES = 10
# Co-mentioned entities followed by `entity_related` (the strongest connections first).
RELATED_NEIGHBOURS = 20
# Facts compared pairwise by `fact_contradictions` (the most recently changed ones).
CONTRADICTION_WINDOW = 500
# An entity named by more facts than this says little about which pairs disagree.
CONTRADICTION_ENTITY_FACTS = 60
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
_STOP = frozenset(
    """a an the and or but of to in on at for with by from as is are was were be been being am
    i you he she it we they me him her us them my your his its our their this that these those
    do does did has have had will would shall should can could may might must not no yes so
    very just also too than then there here what which who whom whose when where why how all
    any some each every into onto over under about after before again s t""".split()
)


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
    recorded: bool = False  # an open Conflict someone recorded, not a guess


def _limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput("limit", f"must be a whole number from 1 to {MAX_LIMIT}")
    return limit


def _name(field_name: str, value: Any) -> str:
    if not isinstance(value, str) or not entity_normalize(value):
        raise InvalidInput(field_name, "must be a non-empty name")
    if len(value) > 200:
        raise InvalidInput(field_name, "is longer than 200 characters")
    return entity_normalize(value)


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
    if category is not None and category not in Category.values:
        raise InvalidInput("category", f"must be one of {', '.join(Category.values)}")
    if kind is not None and kind not in Kind.values:
        raise InvalidInput("kind", f"must be one of {', '.join(Kind.values)}")
    facts = Fact.objects.for_tenant(tenant).filter(status=Status.ACTIVE)
    prefix = (scope or "").strip().strip("/")
    if prefix:
        facts = facts.filter(Q(scope=prefix) | Q(scope__startswith=f"{prefix}/"))
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
    name: Any,
    scope: str | None = None,
    category: str | None = None,
    kind: str | None = None,
    limit: Any = 10,
) -> list[GraphHit]:
    """Every active fact about the entity `name`, most trusted first. Empty when the tenant
    knows no such entity."""
    key, limit = _name("entity", name), _limit(limit)
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


def entity_related(
    *,
    tenant: Tenant,
    name: Any,
    scope: str | None = None,
    category: str | None = None,
    kind: str | None = None,
    limit: Any = 10,
) -> list[GraphHit]:
    """What connects to the entity `name`: the facts that tie it to other entities (one hop),
    then the facts about those entities (two hops), weighted by how often each is mentioned
    together with it. Each hit names the entities it came through."""
    key, limit = _name("entity", name), _limit(limit)
    with tenant_scope(tenant):
        entities = _entities_named(tenant, key)
        if not entities:
            return []
        links = FactEntity.objects.for_tenant(tenant)
        own = links.filter(entity__in=entities).values("fact_id")
        neighbours = list(
            links.filter(fact_id__in=own)
            .exclude(entity__in=entities)
            .values("entity_id", "entity__name")
            .annotate(together=Count("fact_id", distinct=True))
            .order_by("-together", "entity_id")[:RELATED_NEIGHBOURS]
        )
        if not neighbours:
            return []
        strongest = neighbours[0]["together"]
        weight = {n["entity_id"]: n["together"] / strongest for n in neighbours}
        label = {n["entity_id"]: n["entity__name"] for n in neighbours}
        via: dict[int, list[int]] = defaultdict(list)
        for fact_id, entity_id in links.filter(entity_id__in=list(weight)).values_list(
            "fact_id", "entity_id"
        )[:5000]:
            via[fact_id].append(entity_id)
        own_ids = set(links.filter(entity__in=entities).values_list("fact_id", flat=True)[:5000])
        facts = _facts(tenant, scope, category, kind).filter(pk__in=list(via))
        hits = []
        for fact in facts:
            hops = 1 if fact.pk in own_ids else 2
            strength = max(weight[e] for e in via[fact.pk])
            score = (1.0 if hops == 1 else 0.5 * strength) * fact.trust_score
            names = sorted({label[e] for e in via[fact.pk]})
            hits.append(GraphHit(fact=fact, score=score, entities=names, hops=hops))
        hits.sort(key=lambda h: (h.score, h.fact.pk), reverse=True)
        return hits[:limit]


def entities_reason(
    *,
    tenant: Tenant,
    names: Any,
    scope: str | None = None,
    category: str | None = None,
    kind: str | None = None,
    limit: Any = 10,
) -> list[GraphHit]:
    """The facts linked to all of `names` at once; when none links all, those linking the most.
    Score: the share of the names a fact is linked to, times its trust."""
    if not isinstance(names, list | tuple) or not names:
        raise InvalidInput("entities", "must be a non-empty list of names")
    if len(names) > MAX_ENTITIES:
        raise InvalidInput("entities", f"at most {MAX_ENTITIES} names")
    keys = list(dict.fromkeys(_name("entities", n) for n in names))
    limit = _limit(limit)
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
        names_by_index = {i: str(n).strip() for i, n in enumerate(names)}
        hits = [
            GraphHit(
                fact=f,
                score=len(matched[f.pk]) / len(keys) * f.trust_score,
                entities=[names_by_index[i] for i in sorted(matched[f.pk])],
            )
            for f in facts
        ]
        hits.sort(key=lambda h: (h.score, h.fact.pk), reverse=True)
        return hits[:limit]


def _words(text: str) -> set[str]:
    """Content words, lightly stemmed (a plural "s" dropped): enough to see that two
    statements say the same kind of thing about the same subject."""
    analyzed = analyze(text)
    words = {w for w in analyzed.han.split() if len(w) > 1}
    for word in _WORD.findall(analyzed.latin):
        word = word.strip("'-")
        if len(word) < 2 or word in _STOP:
            continue
        words.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return words


def fact_contradictions(
    *,
    tenant: Tenant,
    scope: str | None = None,
    category: str | None = None,
    limit: Any = 10,
) -> list[Contradiction]:
    """Pairs of curated facts that may contradict each other, most suspicious first.

    Open conflicts someone recorded come first. Then candidates: two facts about the same
    entities that make the same kind of statement with different content ("Alice prefers tea"
    / "Alice prefers coffee"): they share their entities and some words besides, and each says
    something the other does not. A fact that only adds detail to another is not a candidate.
    Score: entity overlap x the share of words they have in common.
    """
    limit = _limit(limit)
    with tenant_scope(tenant):
        facts = _facts(tenant, scope, category, Kind.FACT)
        recorded = [
            Contradiction(c.fact_a, c.fact_b, 1.0, 0.0, 1.0, [], recorded=True)
            for c in Conflict.objects.for_tenant(tenant)
            .filter(status=ConflictStatus.OPEN, fact_a__in=facts, fact_b__in=facts)
            .select_related("fact_a", "fact_b")[:limit]
        ]
        window = {f.pk: f for f in facts.order_by("-updated_at", "-id")[:CONTRADICTION_WINDOW]}
        entities_of: dict[int, set[str]] = defaultdict(set)
        for fact_id, name in (
            FactEntity.objects.for_tenant(tenant)
            .filter(fact_id__in=list(window))
            .values_list("fact_id", "entity__normalized")
        ):
            entities_of[fact_id].add(name)
    facts_of: dict[str, list[int]] = defaultdict(list)
    for fact_id, names in entities_of.items():
        for name in names:
            facts_of[name].append(fact_id)
    pairs = {
        pair
        for ids in facts_of.values()
        if len(ids) <= CONTRADICTION_ENTITY_FACTS
        for pair in combinations(sorted(ids), 2)
    }
    seen = {tuple(sorted((c.fact_a.pk, c.fact_b.pk))) for c in recorded}
    words = {fid: _words(window[fid].content) for fid in {i for p in pairs for i in p}}
    found: list[Contradiction] = []
    for a, b in pairs - seen:
        shared_entities = entities_of[a] & entities_of[b]
        overlap = len(shared_entities) / min(len(entities_of[a]), len(entities_of[b]))
        entity_words = {w for name in shared_entities for w in _words(name)}
        wa, wb = words[a] - entity_words, words[b] - entity_words
        common = wa & wb
        if overlap < 0.5 or not common or not (wa - wb) or not (wb - wa):
            continue
        similarity = len(common) / len(wa | wb)
        found.append(
            Contradiction(
                fact_a=window[a],
                fact_b=window[b],
                entity_overlap=round(overlap, 3),
                content_similarity=round(similarity, 3),
                contradiction_score=round(overlap * similarity, 3),
                shared_entities=sorted(shared_entities),
            )
        )
    found.sort(key=lambda c: (c.contradiction_score, c.fact_b.pk), reverse=True)
    return (recorded + found)[:limit]
