"""Why recall left a fact out: for the recall playground of the web admin.

recall_search returns the k best facts that pass its filters and says nothing of the others.
To show what a query would have found without them, this asks recall again with the filters
lifted (trust floor 0, no scope, kind or category), and looks among facts that are not active
for ones that share words with the query. Each fact found that way and not shown gets its
reasons: below the trust floor, outside the scope, another kind or category, not active, or
simply ranked below the k shown. recall_search itself is not changed.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from facts.models import Fact, Status
from indexing import sql
from indexing.text import analyze
from retrieval.inputs import MAX_K, RecallQuery
from retrieval.search import recall_search
from tenants.models import Tenant
from tenants.scope import scope_within, tenant_scope

# Reason codes, in the order they are checked; each comes with the values it compared.
TRUST, SCOPE, KIND, CATEGORY, STATUS, RANK = "trust", "scope", "kind", "category", "status", "rank"
MAX_RANKED_BELOW = 5  # facts that passed every filter and were merely outranked: a few suffice


@dataclass(frozen=True)
class Reason:
    code: str
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LeftOut:
    fact: Fact
    reasons: list[Reason]
    score: float | None = None  # its score with the filters lifted (active facts only)
    channels: dict[str, float] = field(default_factory=dict)


def _in_scope(fact_scope: str, prefix: str) -> bool:
    return scope_within(fact_scope, prefix)


def recall_left_out(
    *,
    tenant: Tenant,
    query: RecallQuery,
    shown: Collection[int],
    limit: int = 20,
) -> list[LeftOut]:
    """Facts the query matches that recall (with its filters) did not return, and why."""
    floor = float(tenant.setting("min_trust") if query.min_trust is None else query.min_trust)
    prefix, kind, category = query.scope, query.kind, query.category
    relaxed = recall_search(
        tenant=tenant,
        query=RecallQuery(text=query.text, k=MAX_K, min_trust=0.0, channels=query.channels),
    )
    filtered: list[LeftOut] = []
    outranked: list[LeftOut] = []
    for hit in relaxed.hits:
        fact = hit.fact
        if fact.pk in shown:
            continue
        reasons = []
        if fact.trust_score < floor:
            reasons.append(Reason(TRUST, {"trust": fact.trust_score, "floor": floor}))
        if prefix and not _in_scope(fact.scope, prefix):
            reasons.append(Reason(SCOPE, {"scope": fact.scope, "wanted": prefix}))
        if kind and fact.kind != kind:
            reasons.append(Reason(KIND, {"kind": fact.kind, "wanted": kind}))
        if category and fact.category != category:
            reasons.append(Reason(CATEGORY, {"category": fact.category, "wanted": category}))
        entry = LeftOut(fact, reasons or [Reason(RANK)], hit.score, hit.channels)
        (filtered if reasons else outranked).append(entry)
    found = filtered[:limit] + outranked[: min(MAX_RANKED_BELOW, max(0, limit - len(filtered)))]
    room = limit - len(found)
    if room > 0:
        analyzed = analyze(query.text)
        with tenant_scope(tenant) as tenant_id:
            ids = sql.inactive_matches(
                tenant_id=tenant_id, latin=analyzed.latin, han=analyzed.han, limit=room
            )
            facts = Fact.objects.for_tenant(tenant).defer("search_vector").in_bulk(ids)
        for ident in ids:
            if ident in facts and ident not in shown:
                status = {"status": facts[ident].status, "wanted": Status.ACTIVE}
                found.append(LeftOut(facts[ident], [Reason(STATUS, status)]))
    return found
