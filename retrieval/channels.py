"""The channels of recall and what they bring for one query (`Gathered`), before fusion.

Full text (BM25 with the tenant's own document frequencies), vectors (the question's language
taken out) and entities each bring candidates; the turns next to the best join them; every
channel then scores every candidate, and each session of the candidate turns is matched as a
whole. `retrieval.search` fuses and ranks what this gathers.
"""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from itertools import combinations
from typing import Any, NamedTuple

from facts.entities import entities_found, entity_dictionary, entity_extractor, entity_normalize
from facts.models import Fact, Kind
from indexing import sql
from indexing.embedders import EmbedderError
from indexing.language import LANGUAGES, language_means, query_without_language, text_language
from indexing.text import analyze
from indexing.vectors import embedder_for, serving_space
from retrieval.floor import QuerySignals, hit_features, query_signals
from retrieval.stats import corpus_stats
from tenants.models import Tenant

logger = logging.getLogger(__name__)

CANDIDATES = 100
# A session matches as a whole when its three best turns do and its turns read as one
# document match by BM25 (idf over the sessions read): the SESSION_PRIOR_SESSIONS sessions with
# the best candidates, each read up to its first SESSION_PRIOR_TURNS turns.
SESSION_PRIOR_SESSIONS, SESSION_PRIOR_TURNS = 32, 128
# How much of its language each memory's vector score loses (docs/benchmarks/recall.md,
# "Questions in the other language").
MEMORY_CENTRING = 0.5
# Candidate generation (docs/benchmarks/recall.md: the gap to scoring every turn): the turns
# next to each channel's NEIGHBOURS best are candidates too, and every channel scores every
# candidate.
NEIGHBOURS = CANDIDATES
# Full text: up to FTS_EXACT facts sharing a word with the query, all are read and ranked
# (exact); beyond, each query of the cascade reads at most FTS_TOUCH. FTS_KEEP of those are
# scored with real term frequencies; the PLAN_TERMS rarest terms select candidates, and the
# MAX_TERMS rarest count at all. (Each fact read costs about 2.5 µs of PostgreSQL's time.)
FTS_EXACT, FTS_TOUCH, FTS_KEEP, PLAN_TERMS, MAX_TERMS = 2000, 500, 150, 6, 32


class _Candidate(NamedTuple):
    """What fusion needs of a candidate; whole facts are loaded for the k best only."""

    id: int
    kind: str
    session_id: str
    position: int | None
    speaker: str
    trust_score: float
    created_at: datetime
    han: bool  # Chinese (indexing.language)


def _minmax(scores: dict[Any, float]) -> dict[Any, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-12:
        return dict.fromkeys(scores, 1.0)
    return {k: (v - low) / (high - low) for k, v in scores.items()}


# -- channels ---------------------------------------------------------------------------------


def _match_tiers(terms: list[tuple[str, int]]) -> Iterator[tuple[str, int]]:
    """The full-text queries that select candidates, most demanding first (terms rarest first),
    each with the number of facts it may read.

    When all the facts that share a word with the query are few, one query takes them all and
    BM25 ranks them: exact. Otherwise candidates must contain all of the rarest few terms, then
    all but one of them, and so on: the facts BM25 ranks highest share the most (and rarest)
    terms with the query, and a fact that shares only a common word is among thousands."""
    if sum(documents for _, documents in terms) <= FTS_EXACT:
        yield sql.tsquery_any([[lexeme] for lexeme, _ in terms]), FTS_EXACT
        return
    planning = [lexeme for lexeme, _ in terms[:PLAN_TERMS]]
    for size in range(len(planning), 0, -1):
        yield sql.tsquery_any(list(combinations(planning, size))), FTS_TOUCH


def bm25_idf(total: int, holding: int) -> float:
    """BM25's inverse document frequency of a term `holding` of `total` documents hold."""
    return math.log(1 + (total - holding + 0.5) / (holding + 0.5))


def _fts_scores(
    tenant_id: int,
    query: str,
    filters: sql.Filters,
    known: dict[int, _Candidate],
    scorers: dict[str, Any],
) -> dict[int, float]:
    """BM25 over the full-text candidates, with the tenant's own document frequencies."""
    analyzed = analyze(query)
    corpus = corpus_stats(tenant_id=tenant_id)
    every = sql.query_terms(tenant_id=tenant_id, latin=analyzed.latin, han=analyzed.han)
    scorers.update(terms=dict(every), total=corpus.documents)
    terms = [(lexeme, documents) for lexeme, documents in every if documents > 0]
    if not terms:
        return {}
    terms = sorted(terms, key=lambda term: (term[1], term[0]))[:MAX_TERMS]
    total = max(corpus.documents, terms[-1][1])
    idf = {t: bm25_idf(total, n) for t, n in terms}
    scorers.update(idf=idf, mean_length=corpus.mean_length)
    scores: dict[int, float] = {}
    for match, touch in _match_tiers(terms):
        ranked = sql.fts_ranked(
            tenant_id=tenant_id,
            idf=idf,
            match=match,
            filters=filters,
            mean_length=corpus.mean_length,
            touch=touch,
            keep=FTS_KEEP,
            limit=CANDIDATES,
        )
        for fid, score, columns in ranked:
            scores[fid] = score
            known[fid] = _Candidate(fid, *columns)
        if len(scores) >= CANDIDATES:
            break
    return dict(sorted(scores.items(), key=lambda kv: kv[1], reverse=True)[:CANDIDATES])


def _vector_scores(
    tenant_id: int,
    query: str,
    filters: sql.Filters,
    timings: dict[str, float],
    known: dict[int, _Candidate],
    scorers: dict[str, Any],
) -> dict[int, float]:
    started = time.perf_counter()
    try:
        space = serving_space()
        if space is None:
            return {}  # nothing was ever embedded
        embedder = embedder_for(space)
        vector = embedder.embed([query], purpose="query")[0]
        # The query's vector without its language (indexing.language): questions find
        # memories written in the other language.
        vector = query_without_language(vector, query, embedder)
        # How far the centred question leans towards each language's texts as a whole: no
        # evidence about any one memory, so each memory's vector score loses its language's
        # (the memory's language taken out as well as the question's).
        means = language_means(embedder)
        scorers["offsets"] = {lang: float(vector @ means[lang]) for lang in LANGUAGES}
    except EmbedderError as error:
        # Recall goes on with its other channels while the embedder is broken (see /healthz).
        logger.warning("tenant %s: vector channel off: %s", tenant_id, error)
        return {}
    finally:
        timings["embed_query"] = (time.perf_counter() - started) * 1000
    rows = sql.vector_candidates(
        tenant_id=tenant_id,
        vector=vector,
        model=space.name,
        dimension=space.dimension,
        filters=filters,
        limit=CANDIDATES,
    )
    scorers.update(vector=vector, space=space, embedder=embedder)
    known.update((fid, _Candidate(fid, *columns)) for fid, _, columns in rows)
    return {fid: score for fid, score, _ in rows}


def _entity_scores(
    tenant_id: int, query: str, filters: sql.Filters, among: set[int] | None
) -> dict[int, float]:
    """Already on [0, 1]: the share of the query's entity information a fact is linked to.
    With `among`, only those facts are scored (the others could not gain from it)."""
    if entity_extractor() is None:
        return {}
    dictionary = entity_dictionary(tenant=tenant_id)
    found = entities_found(query, dictionary=dictionary)
    names = sorted({entity_normalize(f.name) for f in found} - {""})
    if not names:
        return {}
    total = corpus_stats(tenant_id=tenant_id).documents
    rows, most = sql.entity_candidates(
        tenant_id=tenant_id,
        names=names,
        total=total,
        filters=filters,
        limit=CANDIDATES,
        among=among,
    )
    # Against a name as rare as can be (an IDF scale), so that a query naming only common
    # entities (a speaker of every other turn) lifts its facts little; a share of the query's
    # entity information instead gave a speaker named in the question the full score on every
    # one of their turns (LoCoMo R@10 -2 points at weight 0.2).
    most = max(most, math.log(1 + max(total, 1)))
    return {fact_id: score / most for fact_id, score in rows} if most else {}


def _add_neighbours(
    tenant_id: int,
    raw: dict[str, dict[int, float]],
    filters: sql.Filters,
    candidates: dict[int, _Candidate],
) -> None:
    """The turns just before and after each channel's NEIGHBOURS best turns become candidates:
    the answer is often the reply to (or the question before) the turn that matches."""
    places: set[tuple[str, int]] = set()
    for scores in raw.values():
        for fid in sorted(scores, key=scores.__getitem__, reverse=True)[:NEIGHBOURS]:
            fact = candidates[fid]
            if fact.kind == Kind.TURN and fact.position is not None:
                places |= {
                    (fact.session_id, fact.position - 1),
                    (fact.session_id, fact.position + 1),
                }
    known = {(c.session_id, c.position) for c in candidates.values() if c.kind == Kind.TURN}
    wanted = sorted(places - known)
    for fid, columns in sql.turn_neighbours(tenant_id=tenant_id, places=wanted, filters=filters):
        candidates[fid] = _Candidate(fid, *columns)


def _complete_scores(
    tenant_id: int,
    raw: dict[str, dict[int, float]],
    scorers: dict[str, Any],
    candidates: dict[int, _Candidate],
) -> None:
    """Each channel scores every candidate, not only those it brought: a turn that full text
    found keeps its vector similarity, and the other way round."""
    if "fts" in raw and scorers.get("idf"):
        missing = [fid for fid in candidates if fid not in raw["fts"]]
        raw["fts"].update(
            sql.fts_scores_for(
                tenant_id=tenant_id,
                idf=scorers["idf"],
                mean_length=scorers["mean_length"],
                ids=missing,
            )
        )
    if "vec" in raw and scorers.get("space") is not None:
        missing = [fid for fid in candidates if fid not in raw["vec"]]
        space = scorers["space"]
        raw["vec"].update(
            sql.vector_scores_for(
                tenant_id=tenant_id,
                vector=scorers["vector"],
                model=space.name,
                dimension=space.dimension,
                ids=missing,
            )
        )
    offsets = scorers.get("offsets")
    if "vec" in raw and offsets:
        raw["vec"] = {
            fid: score - MEMORY_CENTRING * offsets["zh" if candidates[fid].han else "en"]
            for fid, score in raw["vec"].items()
            if fid in candidates
        }


@dataclass
class Gathered:
    """What the channels brought for one query, before fusion: the candidates and each
    channel's normalised scores. Ranking it again under other weights or constants needs no
    database (the benchmark's cross-validation does exactly that)."""

    query: str
    candidates: dict[int, _Candidate]
    normalised: dict[str, dict[int, float]]
    # Each session's match as a whole, on [0, 1] (None: judged by its best turns instead).
    sessions: dict[str, float] | None = None
    # Each channel's scores before normalisation (BM25, cosine, entity share): the floor's.
    raw: dict[str, dict[int, float]] = field(default_factory=dict)
    signals: QuerySignals = field(default_factory=QuerySignals)

    def floor_features(self, fid: int, fused: float) -> dict[str, float]:
        """The relevance floor's features of candidate `fid` (fused: its score over the best)."""
        vec, fts = self.raw.get("vec", {}), self.raw.get("fts", {})
        return hit_features(
            self.signals,
            vec=vec.get(fid),
            fts=fts.get(fid),
            entity=self.raw.get("entity", {}).get(fid),
            fused=fused,
            top_vec=max(vec.values(), default=0.0),
            top_fts=max(fts.values(), default=0.0),
        )


def _session_match(
    tenant_id: int,
    candidates: dict[int, _Candidate],
    normalised: dict[str, dict[int, float]],
    scorers: dict[str, Any],
    filters: sql.Filters,
) -> dict[str, float] | None:
    """How well each session of the candidate turns matches the query as a whole: BM25 with
    each session's turns as one document, the query terms weighted by how few of the sessions
    hold them (a speaker's name, in every session, counts for little). Min-max over the
    sessions read; None without full text's terms or without turns."""
    idf = scorers.get("idf")
    if not idf:
        return None
    best: dict[str, float] = {}
    for fid, fact in candidates.items():
        if fact.kind == Kind.TURN:
            score = sum(normalised[c].get(fid, 0.0) for c in ("fts", "vec") if c in normalised)
            best[fact.session_id] = max(best.get(fact.session_id, 0.0), score)
    if not best:
        return None
    chosen = sorted(best, key=lambda s: (-best[s], s))[:SESSION_PRIOR_SESSIONS]
    lengths, counts = sql.session_documents(
        tenant_id=tenant_id,
        sessions=chosen,
        lexemes=list(idf),
        filters=filters,
        turns_each=SESSION_PRIOR_TURNS,
    )
    if not lengths:
        return None
    total = len(lengths)
    mean = max(sum(lengths.values()) / total, 1.0)
    holding: dict[str, int] = defaultdict(int)
    for found in counts.values():
        for lexeme in found:
            holding[lexeme] += 1
    weight = {t: bm25_idf(total, n) for t, n in holding.items()}
    scores = {}
    for session, length in lengths.items():
        norm = sql.BM25_K1 * (1 - sql.BM25_B + sql.BM25_B * length / mean)
        found = counts.get(session, {})
        scores[session] = sum(
            weight[t] * n * (sql.BM25_K1 + 1) / (n + norm) for t, n in found.items()
        )
    return _minmax(scores)


def _gather(
    tenant: Tenant,
    tenant_id: int,
    query: str,
    chosen: tuple[str, ...],
    filters: sql.Filters,
    timings: dict[str, float],
) -> Gathered:
    raw: dict[str, dict[int, float]] = {}
    candidates: dict[int, _Candidate] = {}
    scorers: dict[str, Any] = {}
    if "fts" in chosen:
        started = time.perf_counter()
        raw["fts"] = _fts_scores(tenant_id, query, filters, candidates, scorers)
        timings["fts"] = (time.perf_counter() - started) * 1000
    if "vec" in chosen:
        started = time.perf_counter()
        raw["vec"] = _vector_scores(tenant_id, query, filters, timings, candidates, scorers)
        timings["vec"] = (time.perf_counter() - started) * 1000
    _add_neighbours(tenant_id, raw, filters, candidates)
    _complete_scores(tenant_id, raw, scorers, candidates)
    if "entity" in chosen:
        # Gated, entities only re-rank what full text and vectors found: score just those.
        textual = [raw[c] for c in raw if c != "entity"]
        among = set().union(*textual) if textual else None
        started = time.perf_counter()
        raw["entity"] = _entity_scores(tenant_id, query, filters, among)
        timings["entity"] = (time.perf_counter() - started) * 1000
    # Min-max for the unbounded channels; the entity channel is a share already.
    normalised = {c: scores if c == "entity" else _minmax(scores) for c, scores in raw.items()}
    # Full text and vectors bring what fusion needs of a fact; entities bring ids only.
    missing = set().union(*(s.keys() for s in normalised.values())) - candidates.keys()
    if missing:
        candidates.update(
            (row[0], _Candidate._make([*row[:-1], text_language(row[-1]) == "zh"]))
            for row in Fact.objects.for_tenant(tenant)
            .filter(pk__in=missing)
            .values_list(*_Candidate._fields[:-1], "content")
        )
    sessions = _session_match(tenant_id, candidates, normalised, scorers, filters)
    signals = query_signals(
        tenant_id=tenant_id,
        query=query,
        terms=scorers.get("terms", {}),
        total=scorers.get("total", 0),
        vector=scorers.get("vector"),
        embedder=scorers.get("embedder"),
    )
    return Gathered(
        query=query,
        candidates=candidates,
        normalised=normalised,
        sessions=sessions,
        raw=raw,
        signals=signals,
    )
