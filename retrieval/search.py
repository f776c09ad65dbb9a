"""recall_search: the one hybrid recall that agents, the API and the admin all use.

query -> channels (full text with BM25, vector with the question's language taken out,
entities) -> the turns next to their candidates join -> every candidate scored by full text and
vector -> min-max normalised weighted sum -> conversation-aware lift for turns -> x trust
-> x 0.5^(age / half-life) -> top k.

The channels and what they gather for a query live in `retrieval.channels`; this module fuses
and ranks.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from facts.models import Fact, Kind
from indexing import sql
from indexing.language import text_language
from observability.metrics import recall_observe
from retrieval.channels import Gathered, _Candidate, _gather, _minmax
from retrieval.floor import is_weak, relevance
from retrieval.inputs import CHANNELS, RecallQuery
from tenants.models import Tenant
from tenants.scope import tenant_scope

# Conversation-aware scoring of turns (measured on LoCoMo dev; see docs/benchmarks/recall.md).
NEIGHBOUR_SHARE = 0.45
SESSION_SHARE = 0.2
SPEAKER_BONUS = 0.15


@dataclass
class RecallHit:
    """`score` ranks the query's hits against each other (fusion, lifts, trust, decay);
    `relevance` is the floor's probability that the hit is what the query asks about
    (retrieval.floor), and a hit below the floor is `weak`: never injected into a context."""

    fact: Fact
    score: float
    channels: dict[str, float] = field(default_factory=dict)
    factors: dict[str, float] = field(default_factory=dict)
    relevance: float = 1.0
    weak: bool = False
    signals: dict[str, float] = field(default_factory=dict)

    def explain(self) -> dict[str, Any]:
        return {
            "score": round(self.score, 6),
            "channels": self.channels,
            "factors": self.factors,
            "relevance": round(self.relevance, 6),
            "signals": {name: round(value, 6) for name, value in self.signals.items()},
        }


@dataclass
class RecallResult:
    hits: list[RecallHit]
    timings_ms: dict[str, float]


# -- fusion -----------------------------------------------------------------------------------


def _fuse(
    fid: int, normalised: dict[str, dict[int, float]], weights: dict[str, float], *, foreign: bool
) -> float:
    """Weighted sum of the channels. Entities only re-rank what the text and vector
    channels found: alone they pulled in every turn that names a common person.
    A `foreign` fact (not in the question's language), which full text can hardly match, has
    its full-text score taken from its vector's when full text found anything at all: squared,
    so that only a close vector match makes up for the silence."""
    textual = [c for c in normalised if c != "entity"]
    score = sum(weights[c] * normalised[c].get(fid, 0.0) for c in textual)
    if foreign and normalised.get("fts") and "vec" in normalised:
        fts, vec = normalised["fts"].get(fid, 0.0), normalised["vec"].get(fid, 0.0)
        score += weights["fts"] * max(0.0, vec * vec - fts)
    if "entity" in normalised and (score > 0 or not textual):
        score += weights["entity"] * normalised["entity"].get(fid, 0.0)
    return score


@dataclass(frozen=True)
class Tuning:
    """The constants of conversation-aware scoring (docs/benchmarks/recall.md: what they were
    tuned on)."""

    neighbour: float = NEIGHBOUR_SHARE
    session: float = SESSION_SHARE
    speaker: float = SPEAKER_BONUS


def _conversation_lift(
    facts: dict[int, _Candidate],
    fused: dict[int, float],
    query: str,
    tuning: Tuning,
    matched: dict[str, float] | None = None,
) -> dict[int, dict[str, float]]:
    """Turns gain from their neighbours, from sessions that match as a whole, and from being
    spoken by someone the query names. A session's match is the mean of its three best turns
    (min-max over the sessions), times its text's match as a whole (`matched`) when known."""
    by_position = {
        (f.session_id, f.position): fid for fid, f in facts.items() if f.kind == Kind.TURN
    }
    sessions: dict[str, list[float]] = defaultdict(list)
    for fid, fact in facts.items():
        if fact.kind == Kind.TURN:
            sessions[fact.session_id].append(fused[fid])
    session_of = _minmax({s: sum(sorted(v)[-3:]) / 3 for s, v in sessions.items()})
    if matched is not None:
        # Both: its best turns match, and so does its text as a whole.
        session_of = {s: best * matched.get(s, 0.0) for s, best in session_of.items()}
    query_folded = query.casefold()
    lifts: dict[int, dict[str, float]] = {}
    for fid, fact in facts.items():
        if fact.kind != Kind.TURN:
            continue
        neighbours = [
            fused[n]
            for n in (
                by_position.get((fact.session_id, (fact.position or 0) - 1)),
                by_position.get((fact.session_id, (fact.position or 0) + 1)),
            )
            if n is not None
        ]
        lifts[fid] = {
            "neighbour": tuning.neighbour * max(neighbours, default=0.0),
            "session": tuning.session * session_of.get(fact.session_id, 0.0),
            "speaker": tuning.speaker
            if fact.speaker and fact.speaker.casefold() in query_folded
            else 0.0,
        }
    return lifts


def recall_rank(
    gathered: Gathered,
    *,
    weights: dict[str, float],
    tuning: Tuning | None = None,
    half_life_days: float | None = None,
    now: datetime | None = None,
) -> list[tuple[float, int, dict[str, float]]]:
    """(score, fact id, factors) of every candidate, best first: fusion, lifts, trust, decay."""
    tuning = tuning or Tuning()
    candidates, normalised = gathered.candidates, gathered.normalised
    chinese = text_language(gathered.query) == "zh"
    fused = {
        fid: _fuse(fid, normalised, weights, foreign=c.han != chinese)
        for fid, c in candidates.items()
    }
    lifts = _conversation_lift(candidates, fused, gathered.query, tuning, gathered.sessions)
    moment = now or timezone.now()
    scored = []
    for fid, candidate in candidates.items():
        lift = lifts.get(fid, {})
        decay = 1.0
        if half_life_days:
            age_days = max(0.0, (moment - candidate.created_at).total_seconds() / 86400)
            decay = 0.5 ** (age_days / half_life_days)
        score = (fused[fid] + sum(lift.values())) * candidate.trust_score * decay
        factors = {"trust": candidate.trust_score, "decay": round(decay, 6), **lift}
        scored.append((score, fid, factors))
    scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return scored


def recall_gather(*, tenant: Tenant, query: RecallQuery) -> Gathered:
    """The channels' results for `query` over `tenant`'s active facts, unfused and unfiltered
    (for benchmarks that rank them under several weights)."""
    chosen = query.channels or CHANNELS
    with tenant_scope(tenant) as tenant_id:
        return _gather(tenant, tenant_id, query.text, chosen, sql.Filters(), {})


def recall_search(
    *, tenant: Tenant, query: RecallQuery, now: datetime | None = None
) -> RecallResult:
    """The k best active facts of `tenant` for `query`, each able to explain its score."""
    channels = query.channels
    chosen = channels or CHANNELS
    if channels is None:
        # By default a channel the tenant weighs at 0 is not even asked.
        chosen = tuple(c for c in chosen if tenant.setting(f"weight_{c}") > 0) or chosen
    floor = tenant.setting("min_trust") if query.min_trust is None else query.min_trust
    half_life = (
        tenant.setting("half_life_days") if query.half_life_days is None else query.half_life_days
    )
    filters = sql.Filters(
        scope_prefix=query.scope, kind=query.kind, category=query.category, min_trust=float(floor),
        scopes=query.scopes, scope_exact=query.scope_exact, metadata=query.metadata_json,
        since=query.since, until=query.until,
    )  # fmt: skip
    # A channel asked for by name counts even where the tenant weighs it at 0.
    weights = {
        c: float(tenant.setting(f"weight_{c}")) or (1.0 if channels is not None else 0.0)
        for c in chosen
    }
    timings: dict[str, float] = {}
    started = time.perf_counter()
    with tenant_scope(tenant) as tenant_id:
        gathered = _gather(tenant, tenant_id, query.text, chosen, filters, timings)
        scored = recall_rank(gathered, weights=weights, half_life_days=half_life, now=now)
        best = scored[: query.k]
        facts = (
            Fact.objects.for_tenant(tenant)
            .filter(pk__in=[fid for _, fid, _ in best])
            .defer("search_vector")
            .in_bulk()
        )
    normalised = gathered.normalised
    top = best[0][0] if best and best[0][0] > 0 else 1.0
    hits = []
    for score, fid, factors in best:
        features = gathered.floor_features(fid, score / top)
        likely = relevance(features)
        hits.append(
            RecallHit(
                fact=facts[fid],
                score=score,
                channels={c: round(scores.get(fid, 0.0), 6) for c, scores in normalised.items()},
                factors=factors,
                relevance=likely,
                weak=is_weak(features, likely),
                signals=features,
            )
        )
    timings["total"] = (time.perf_counter() - started) * 1000
    recall_observe(timings)
    return RecallResult(hits=hits, timings_ms=timings)
