"""The relevance floor: how likely a recall hit is to be a memory the query asks about.

Fusion ranks a query's candidates against each other (min-max per query), so its scores say
which memory is best, never whether any is good: the best of a small tenant's memories scores
high for "thanks!" too. The floor judges each hit on absolute evidence instead:

- `vec`: the cosine of the query's and the memory's vectors (each language taken out, as the
  vector channel scores them; 0 without a vector);
- `fts_cover`: the share of the query's word information (BM25 idf) the memory matches, words no
  memory holds counted too;
- `fts_mass`: how many rare words' worth of the query the memory matches (BM25 over
  (k1 + 1) * log(1 + facts)): common words ("thanks", "ok") weigh little;
- `entity`: the entity channel's share (0 when the query names no entity);
- `fused`: the hit's score over the query's best score (where it stands among the query's hits);
- `query_mass`: the information of the query's words that some memory holds, in rare words'
  worth (small talk's words are common, or held by no memory);
- `unknown_name`: 1 when the query names someone or something (an entity) that no memory of the
  tenant mentions ("What editor does Carol like?" where nobody is called Carol);
- `smalltalk`: the cosine of the query's vector to the closest of the small-talk turns in
  `smalltalk.txt` beside this module (the tuning part of bench/data's small talk, copied by the
  fit), each embedded as a query once per process, the query's own text left out (so that the
  fit sees on its tuning turns what a new turn gets): "thanks!" and "哈哈没问题" sit close to them;
- `top_vec`, `top_mass`: the best `vec` and `fts_mass` among all the query's candidates: whether
  anything in the tenant matches the query well at all.

`relevance` = logistic(MODEL . features): a probability on [0, 1], fitted by
`python -m bench.abstain --fit` on the tuning part of its data (see docs/relevance-floor.md for the
sets, the figures and the kinds of case it misses). A hit is weak (`is_weak`) below FLOOR, and
whenever the query names an entity no memory mentions: the model alone let a third of the
questions about another conversation's people through, on memories of the same kind of life
(jobs, family, pets). The context block (prefetch, MCP's context, REST's context) leaves weak
hits out; recall returns them, marked.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from facts.entities import entities_found, entity_dictionary, entity_normalize
from indexing import sql
from indexing.language import query_without_language
from indexing.text import analyze

logger = logging.getLogger(__name__)

FEATURES = (
    "vec", "fts_cover", "fts_mass", "entity", "fused", "query_mass", "unknown_name", "smalltalk",
    "top_vec", "top_mass",
)  # fmt: skip
SMALLTALK = Path(__file__).with_name("smalltalk.txt")
# The fitted model: logistic weights of FEATURES ("bias" too) and FLOOR, written by
# `python -m bench.abstain --fit` with the figures of its tuning part (docs/relevance-floor.md).
FITTED = Path(__file__).with_name("floor_model.json")
_fitted = json.loads(FITTED.read_text("utf-8"))
MODEL: dict[str, float] = _fitted["model"]
# A hit whose relevance is below FLOOR is weak: never injected, marked in recall's results.
# Chosen on the tuning part: the highest floor that keeps own-memory R@10 within one point of
# recall without a floor.
FLOOR: float = _fitted["floor"]


@dataclass(frozen=True)
class QuerySignals:
    """What the floor knows of a query as a whole, from full text's terms and the entities."""

    query_mass: float = 0.0
    unknown_name: float = 0.0
    smalltalk: float = 0.0
    # Raw BM25 over these: matched rare words' worth, and the share of the query's idf matched.
    mass_scale: float = 0.0
    cover_scale: float = 0.0


def query_signals(
    *,
    tenant_id: int,
    query: str,
    terms: Mapping[str, int],
    total: int,
    vector: np.ndarray | None = None,
    embedder: Any = None,
) -> QuerySignals:
    """`terms`: every lexeme of the query with the number of the tenant's facts holding it (0
    included); `total`: the tenant's facts; `vector`: the query's (language taken out) by
    `embedder`, when the vector channel ran. One database query more for each entity the query
    names."""
    smalltalk = 0.0
    if vector is not None and embedder is not None:
        texts, vectors = smalltalk_vectors(embedder)
        # The query itself, if it is one of the list, is left out (its own vector would be
        # the nearest); the list's folded texts are made once per process.
        folded = _folded_list(texts)
        scores = vectors @ vector
        own = _folded(query)
        for i in (i for i, text in enumerate(folded) if text == own):
            scores[i] = -np.inf
        smalltalk = float(scores.max()) if np.isfinite(scores).any() else 0.0
    if not terms:
        return QuerySignals(
            unknown_name=_unknown_name(tenant_id, query, terms), smalltalk=smalltalk
        )
    scale = math.log(1 + max(total, 1))
    idf = {lexeme: _idf(total, documents) for lexeme, documents in terms.items()}
    mass = sum(idf.values())
    held = sum(idf[lexeme] for lexeme, documents in terms.items() if documents)
    return QuerySignals(
        query_mass=held / scale,
        unknown_name=_unknown_name(tenant_id, query, terms),
        mass_scale=(sql.BM25_K1 + 1) * scale,
        cover_scale=(sql.BM25_K1 + 1) * mass,
        smalltalk=smalltalk,
    )


_smalltalk: dict[str, tuple[list[str], np.ndarray]] = {}
_smalltalk_lock = threading.Lock()


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


_last_folded: tuple[list[str], list[str]] | None = None


def _folded_list(texts: list[str]) -> list[str]:
    """`texts` folded; the last list's are kept (the small-talk list lives as long as its
    process, and a list is known by its identity)."""
    global _last_folded
    known = _last_folded
    if known is None or known[0] is not texts:
        known = (texts, [_folded(text) for text in texts])
        _last_folded = known
    return known[1]


def _smalltalk_file(embedder: Any, raw: bytes) -> Path:
    """Where the vectors of this small-talk list by this model are kept between processes: in
    the prepared models' folder, named by the model and the list's content."""
    from django.conf import settings

    digest = hashlib.sha256(raw + str(embedder.name).encode()).hexdigest()[:16]
    return Path(settings.MNEMOSYNE_MODEL_DIR) / f"smalltalk-{digest}.npy"


def smalltalk_vectors(embedder: Any) -> tuple[list[str], np.ndarray]:
    """The small-talk turns of SMALLTALK and their vectors as `embedder` embeds queries
    (language taken out), one row each; made once per model (embedding the list costs a few
    seconds of CPU: every other process reads the file the first one wrote) and kept in each
    process."""
    with _smalltalk_lock:
        known = _smalltalk.get(embedder.name)
        if known is not None:
            return known
        raw = SMALLTALK.read_bytes()
        texts = [line for line in raw.decode("utf-8").splitlines() if line.strip()]
        kept = _smalltalk_file(embedder, raw)
        try:
            matrix = np.load(kept, allow_pickle=False)
        except (OSError, ValueError):
            matrix = None
        if matrix is None or matrix.shape[0] != len(texts):
            vectors = embedder.embed(texts, purpose="query")
            matrix = np.stack(
                [
                    query_without_language(v, t, embedder)
                    for v, t in zip(vectors, texts, strict=True)
                ]
            )
            try:
                kept.parent.mkdir(parents=True, exist_ok=True)
                partial = kept.with_suffix(f".{os.getpid()}.partial.npy")
                np.save(partial, matrix, allow_pickle=False)
                partial.replace(kept)  # whole or not at all, for a process reading it now
            except OSError:
                logger.warning("small-talk vectors not kept in %s", kept.parent, exc_info=True)
        known = (texts, matrix)
        _smalltalk[embedder.name] = known
        return known


def _idf(total: int, holding: int) -> float:
    return math.log(1 + (max(total, holding) - holding + 0.5) / (holding + 0.5))


def _unknown_name(tenant_id: int, query: str, terms: Mapping[str, int]) -> float:
    """1.0 when an entity the query names (not one of the tenant's dictionary terms) has a word
    that none of the tenant's facts holds."""
    dictionary = entity_dictionary(tenant=tenant_id)
    known = {entity_normalize(m.name) for m in dictionary.matches(query)}
    for found in entities_found(query, dictionary=dictionary):
        if entity_normalize(found.name) in known:
            continue
        analyzed = analyze(found.name)
        lexemes = sql.query_terms(tenant_id=tenant_id, latin=analyzed.latin, han=analyzed.han)
        if any(documents == 0 for _, documents in lexemes):
            return 1.0
    return 0.0


def hit_features(
    signals: QuerySignals,
    *,
    vec: float | None,
    fts: float | None,
    entity: float | None,
    fused: float,
    top_vec: float = 0.0,
    top_fts: float = 0.0,
) -> dict[str, float]:
    """The floor's features of one hit from its raw channel scores (None: not scored), and the
    best raw vector and full-text scores among the query's candidates."""
    raw_fts = fts or 0.0
    return {
        "vec": vec or 0.0,
        "fts_cover": raw_fts / signals.cover_scale if signals.cover_scale else 0.0,
        "fts_mass": raw_fts / signals.mass_scale if signals.mass_scale else 0.0,
        "entity": entity or 0.0,
        "fused": fused,
        "query_mass": signals.query_mass,
        "unknown_name": signals.unknown_name,
        "smalltalk": signals.smalltalk,
        "top_vec": top_vec,
        "top_mass": top_fts / signals.mass_scale if signals.mass_scale else 0.0,
    }


def is_weak(features: Mapping[str, float], likely: float, floor: float | None = None) -> bool:
    """Below the floor, or the query names someone or something no memory mentions."""
    return likely < (FLOOR if floor is None else floor) or features.get("unknown_name", 0.0) > 0


def relevance(features: Mapping[str, float], model: Mapping[str, float] | None = None) -> float:
    """The probability that the hit is a memory the query asks about (see the module's doc)."""
    weights = MODEL if model is None else model
    z = weights["bias"] + sum(weights[name] * features.get(name, 0.0) for name in FEATURES)
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))
