"""Near-duplicates: a statement that says what a fact of its scope already says joins it.

When a fact is stored, `fact_add` asks `fact_near_check`: a fact of the same scope whose vector
is at least the tenant's `duplicate_threshold` close (or whose text is the same up to case,
width, spacing and punctuation), and that the judgement finds saying the same, is joined
instead (`fact_join`); the caller is told which. Turns are never joined. A near fact the
judgement finds disagreeing is never joined: the new fact is stored and the conflict recorded
at once (`facts.conflicts.conflicts_record_new`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from facts.contradiction import CONTRADICT, DUPLICATE, Verdict, pair_judge
from facts.entities import entities_found, entity_dictionary, entity_resolve
from facts.events import fact_event_record
from facts.inputs import MAX_TAGS
from facts.models import EventAction, Fact, FactEntity, Kind, Status
from indexing import sql
from indexing.embedders import EmbedderError
from indexing.vectors import embedder_for, serving_space
from tenants.actors import Actor
from tenants.models import Tenant

logger = logging.getLogger(__name__)

# Neighbours closer than this are compared with a new fact (and, in the check, with each other).
NEIGHBOUR_MIN_COSINE = 0.8


def _set_status_event(tenant: Tenant, fact: Fact, action: str, actor: Actor, **values: Any) -> None:
    before, after = values.get("before"), values.get("after")
    fact_event_record(tenant, fact.pk, action, actor, before=before, after=after)


@dataclass(frozen=True)
class NearDuplicate:
    fact: Fact
    similarity: float
    reason: str  # "same text" or "similar"


@dataclass(frozen=True)
class PassageVector:
    """A text's vector as a passage, by the model that serves recall."""

    vector: np.ndarray
    model: str
    dimension: int


def passage_vector(*, tenant: Tenant, text: str) -> PassageVector | None:
    """`text`'s vector as a passage by the serving model: None before any model serves, or
    when the embedder fails (logged; the worker embeds the fact later)."""
    space = serving_space()
    if space is None:
        return None
    try:
        vector = embedder_for(space).embed([text], purpose="passage")[0]
    except EmbedderError as error:
        logger.warning("tenant %s: near-duplicate check without vectors: %s", tenant.pk, error)
        return None
    return PassageVector(vector, space.name, space.dimension)


@dataclass(frozen=True)
class NearCheck:
    """What the facts of a scope nearest to a new statement say of it: the one it repeats, if
    any, and those it disagrees with (with the judgement's verdict)."""

    duplicate: NearDuplicate | None
    disagreeing: list[tuple[Fact, Verdict]]


def fact_near_check(*, tenant: Tenant, content: str, scope: str, query: PassageVector) -> NearCheck:
    """Judge `content` against the active facts of this scope nearest to it. Caller holds the
    tenant scope. `query`: `content`'s vector (`passage_vector`; `fact_add` keeps it as the new
    fact's). Without a working embedder there is no vector, and only the same text is found
    (by fact_add).

    A fact at least the tenant's `duplicate_threshold` close that the judgement finds saying
    the same is the duplicate; a fact the judgement finds disagreeing is never one, however
    close (Alice prefers green tea over coffee / coffee over green tea are 0.995 apart in e5):
    the caller records the conflict once the new fact is stored."""
    threshold = float(tenant.setting("duplicate_threshold"))
    vector, model, dimension = query.vector, query.model, query.dimension
    rows = sql.vector_candidates(
        tenant_id=tenant.pk,
        vector=vector,
        model=model,
        dimension=dimension,
        filters=sql.Filters(scope_prefix=scope, kind=Kind.FACT),
        limit=5,
    )
    similar = {fid: score for fid, score, _ in rows if score >= NEIGHBOUR_MIN_COSINE}
    if not similar:
        return NearCheck(None, [])
    facts = (
        Fact.objects.for_tenant(tenant)
        .filter(pk__in=similar, scope=scope, status=Status.ACTIVE)
        .defer("search_vector")
    )
    duplicate: NearDuplicate | None = None
    disagreeing: list[tuple[Fact, Verdict]] = []
    for fact in sorted(facts, key=lambda f: -similar[f.pk]):
        verdict = pair_judge(
            fact.content, content, similarity=similar[fact.pk], duplicate_threshold=threshold
        )
        if verdict.label == CONTRADICT:
            disagreeing.append((fact, verdict))
        elif verdict.label == DUPLICATE and duplicate is None:
            duplicate = NearDuplicate(fact=fact, similarity=round(similar[fact.pk], 4),
                                      reason=verdict.reason)  # fmt: skip
    return NearCheck(duplicate, disagreeing)


def fact_join(
    *, tenant: Tenant, fact: Fact, content: str, tags: list[str], actor: Actor, similarity: float
) -> Fact:
    """`content` says what `fact` says: count it, add its tags and entities to `fact`, and
    record the join in the fact's history. Caller holds the tenant scope."""
    fact = Fact.objects.for_tenant(tenant).select_for_update().get(pk=fact.pk)
    added_tags = [t for t in tags if t not in fact.tags][: max(0, MAX_TAGS - len(fact.tags))]
    fact.tags = [*fact.tags, *added_tags]
    fact.mention_count += 1
    fact.save(update_fields=["tags", "mention_count", "updated_at"])
    linked = set(
        FactEntity.objects.for_tenant(tenant).filter(fact=fact).values_list("entity_id", flat=True)
    )
    dictionary = entity_dictionary(tenant=tenant)
    for found in entities_found(content, dictionary=dictionary):
        entity = entity_resolve(tenant=tenant, name=found.name, type=found.type)
        if entity.pk not in linked:
            FactEntity.objects.create(tenant=tenant, fact=fact, entity=entity)
            linked.add(entity.pk)
    _set_status_event(
        tenant, fact, EventAction.JOIN, actor,
        after={"content": content, "similarity": similarity, "tags_added": added_tags,
               "mention_count": fact.mention_count},
    )  # fmt: skip
    return fact
