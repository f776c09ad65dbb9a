"""recall_search: the one hybrid recall that agents, the API and the admin all use.

query -> channels (full text with BM25, vector, entities) -> min-max normalised weighted sum
-> conversation-aware lift for turns -> x trust -> x 0.5^(age / half-life) -> top k.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from facts.entities import entity_extractor, entity_normalize
from facts.models import Category, Fact, Kind
from retrieval import sql
from retrieval.embedders import EmbedderError, get_embedder
from retrieval.text import analyze
from tenants.errors import InvalidInput
from tenants.models import Tenant
from tenants.scope import tenant_scope

CHANNELS = ("fts", "vec", "entity")
CANDIDATES = 100
MAX_QUERY_CHARS = 2000
MAX_K = 100
# Conversation-aware scoring of turns (measured on LoCoMo dev; see README).
NEIGHBOUR_SHARE = 0.3
SESSION_SHARE = 0.15
SPEAKER_BONUS = 0.05
BM25_K1, BM25_B = 1.2, 0.75
ENTITY_GATED = True
_DF_TTL_S = 300


@dataclass
class RecallHit:
    fact: Fact
    score: float
    channels: dict[str, float] = field(default_factory=dict)
    factors: dict[str, float] = field(default_factory=dict)

    def explain(self) -> dict[str, Any]:
        return {"score": round(self.score, 6), "channels": self.channels, "factors": self.factors}


@dataclass
class RecallResult:
    hits: list[RecallHit]
    timings_ms: dict[str, float]


def _clean_query(query: Any) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query", "must be non-empty text")
    return query.strip()[:MAX_QUERY_CHARS]


def _clean_channels(channels: Iterable[str] | None) -> tuple[str, ...]:
    chosen = tuple(channels) if channels is not None else CHANNELS
    unknown = [c for c in chosen if c not in CHANNELS]
    if unknown or not chosen:
        raise InvalidInput("channels", f"choose from {', '.join(CHANNELS)}")
    return chosen


def _minmax(scores: dict[Any, float]) -> dict[Any, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-12:
        return dict.fromkeys(scores, 1.0)
    return {k: (v - low) / (high - low) for k, v in scores.items()}


# -- channels ---------------------------------------------------------------------------------


def _document_frequencies(tenant_id: int, lexemes: list[str]) -> dict[str, int]:
    keys = {lexeme: f"mnemosyne:{tenant_id}:df:{lexeme}" for lexeme in lexemes}
    cached = cache.get_many(list(keys.values()))
    found = {lexeme: cached[key] for lexeme, key in keys.items() if key in cached}
    missing = [lexeme for lexeme in lexemes if lexeme not in found]
    if missing:
        fresh = sql.document_frequencies(tenant_id=tenant_id, lexemes=missing)
        cache.set_many({keys[lexeme]: count for lexeme, count in fresh.items()}, _DF_TTL_S)
        found.update(fresh)
    return found


def _corpus_stats(tenant_id: int) -> tuple[int, float]:
    """(active facts, mean lexemes): BM25's corpus figures. They drift slowly, so a few minutes
    old is fine, and counting 100,000 rows on every query is not."""
    key = f"mnemosyne:{tenant_id}:corpus"
    stats = cache.get(key)
    if stats is None:
        stats = sql.corpus_stats(tenant_id=tenant_id)
        cache.set(key, stats, _DF_TTL_S)
    return stats


def _fts_scores(tenant_id: int, query: str, filters: sql.Filters) -> dict[int, float]:
    """BM25 over the full-text candidates (PostgreSQL ranks without IDF, so we score here)."""
    analyzed = analyze(query)
    lexemes = sql.query_lexemes(analyzed.latin, analyzed.han)
    if not lexemes:
        return {}
    rows = sql.fts_candidates(
        tenant_id=tenant_id, lexemes=lexemes, filters=filters, limit=CANDIDATES * 3
    )
    if not rows:
        return {}
    total, mean_length = _corpus_stats(tenant_id)
    frequencies = _document_frequencies(tenant_id, lexemes)
    idf = {t: math.log(1 + (total - n + 0.5) / (n + 0.5)) for t, n in frequencies.items() if n > 0}
    scores: dict[int, float] = {}
    for fact_id, vector_text in rows:
        terms = sql.parse_tsvector(vector_text)
        length = sum(terms.values()) or 1
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / max(mean_length, 1.0))
        score = 0.0
        for lexeme, weight in idf.items():
            tf = terms.get(lexeme, 0)
            if tf:
                score += weight * tf * (BM25_K1 + 1) / (tf + norm)
        scores[fact_id] = score
    best = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)[:CANDIDATES]
    return dict(best)


def _vector_scores(
    tenant_id: int, query: str, filters: sql.Filters, timings: dict[str, float]
) -> dict[int, float]:
    started = time.perf_counter()
    try:
        embedder = get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR)
        vector = embedder.embed([query], purpose="query")[0]
    except EmbedderError:
        # Recall goes on with its other channels while the embedder is broken (see /healthz).
        return {}
    finally:
        timings["embed_query"] = (time.perf_counter() - started) * 1000
    rows = sql.vector_candidates(
        tenant_id=tenant_id, vector=vector, model=embedder.name, filters=filters, limit=CANDIDATES
    )
    return dict(rows)


def _entity_scores(tenant_id: int, query: str, filters: sql.Filters) -> dict[int, float]:
    """Already on [0, 1]: the share of the query's entity information a fact is linked to."""
    extractor = entity_extractor()
    if extractor is None:
        return {}
    names = sorted({entity_normalize(found.name) for found in extractor(query)} - {""})
    if not names:
        return {}
    total, _ = _corpus_stats(tenant_id)
    rows, most = sql.entity_candidates(
        tenant_id=tenant_id, names=names, total=total, filters=filters, limit=CANDIDATES
    )
    return {fact_id: score / most for fact_id, score in rows} if most else {}


# -- fusion -----------------------------------------------------------------------------------


def _fuse(fid: int, normalised: dict[str, dict[int, float]], weights: dict[str, float]) -> float:
    """Weighted sum of the channels. With ENTITY_GATED, entities only re-rank what the text
    and vector channels found: alone they pulled in every turn that names a common person."""
    textual = [c for c in normalised if c != "entity"]
    score = sum(weights[c] * normalised[c].get(fid, 0.0) for c in textual)
    if "entity" in normalised and (score > 0 or not ENTITY_GATED or not textual):
        score += weights["entity"] * normalised["entity"].get(fid, 0.0)
    return score


def _conversation_lift(
    facts: dict[int, Fact], fused: dict[int, float], query: str
) -> dict[int, dict[str, float]]:
    """Turns gain from their neighbours, from sessions that match as a whole, and from being
    spoken by someone the query names."""
    by_position = {
        (f.session_id, f.position): fid for fid, f in facts.items() if f.kind == Kind.TURN
    }
    sessions: dict[str, list[float]] = defaultdict(list)
    for fid, fact in facts.items():
        if fact.kind == Kind.TURN:
            sessions[fact.session_id].append(fused[fid])
    session_of = _minmax({s: sum(sorted(v)[-3:]) / 3 for s, v in sessions.items()})
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
            "neighbour": NEIGHBOUR_SHARE * max(neighbours, default=0.0),
            "session": SESSION_SHARE * session_of.get(fact.session_id, 0.0),
            "speaker": SPEAKER_BONUS
            if fact.speaker and fact.speaker.casefold() in query_folded
            else 0.0,
        }
    return lifts


def recall_search(
    *,
    tenant: Tenant,
    query: Any,
    k: int = 10,
    scope: str | None = None,
    kind: str | None = None,
    category: str | None = None,
    min_trust: float | None = None,
    channels: Sequence[str] | None = None,
    half_life_days: float | None = None,
    now: datetime | None = None,
) -> RecallResult:
    """The k best active facts of `tenant` for `query`, each able to explain its score."""
    query = _clean_query(query)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidInput("k", f"must be a whole number from 1 to {MAX_K}")
    if kind is not None and kind not in Kind.values:
        raise InvalidInput("kind", f"must be one of {', '.join(Kind.values)}")
    if category is not None and category not in Category.values:
        raise InvalidInput("category", f"must be one of {', '.join(Category.values)}")
    chosen = _clean_channels(channels)
    if channels is None:
        # By default a channel the tenant weighs at 0 is not even asked.
        chosen = tuple(c for c in chosen if tenant.setting(f"weight_{c}") > 0) or chosen
    floor = tenant.setting("min_trust") if min_trust is None else min_trust
    if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 <= floor <= 1:
        raise InvalidInput("min_trust", "must be a number from 0 to 1")
    half_life = tenant.setting("half_life_days") if half_life_days is None else half_life_days
    filters = sql.Filters(
        scope_prefix=(scope or "").strip().strip("/"),
        kind=kind,
        category=category,
        min_trust=float(floor),
    )
    # A channel asked for by name counts even where the tenant weighs it at 0.
    weights = {
        c: float(tenant.setting(f"weight_{c}")) or (1.0 if channels is not None else 0.0)
        for c in chosen
    }
    timings: dict[str, float] = {}
    started = time.perf_counter()
    with tenant_scope(tenant) as tenant_id:
        raw: dict[str, dict[int, float]] = {}
        if "fts" in chosen:
            raw["fts"] = _fts_scores(tenant_id, query, filters)
        if "vec" in chosen:
            raw["vec"] = _vector_scores(tenant_id, query, filters, timings)
        if "entity" in chosen:
            raw["entity"] = _entity_scores(tenant_id, query, filters)
        # Min-max for the unbounded channels; the entity channel is a share already.
        normalised = {c: scores if c == "entity" else _minmax(scores) for c, scores in raw.items()}
        candidate_ids = set().union(*(s.keys() for s in normalised.values()))
        facts = {
            f.pk: f
            for f in Fact.objects.for_tenant(tenant)
            .filter(pk__in=candidate_ids)
            .defer("embedding", "search_vector")
        }
    fused = {fid: _fuse(fid, normalised, weights) for fid in facts}
    lifts = _conversation_lift(facts, fused, query)
    moment = now or timezone.now()
    hits = []
    for fid, fact in facts.items():
        lift = lifts.get(fid, {})
        age_days = max(0.0, (moment - fact.created_at).total_seconds() / 86400)
        decay = 0.5 ** (age_days / half_life) if half_life else 1.0
        score = (fused[fid] + sum(lift.values())) * fact.trust_score * decay
        hits.append(
            RecallHit(
                fact=fact,
                score=score,
                channels={c: round(normalised[c].get(fid, 0.0), 6) for c in normalised},
                factors={"trust": fact.trust_score, "decay": round(decay, 6), **lift},
            )
        )
    hits.sort(key=lambda h: (h.score, h.fact.pk), reverse=True)
    timings["total"] = (time.perf_counter() - started) * 1000
    return RecallResult(hits=hits[:k], timings_ms=timings)
