"""Questions in one language about memories in the other.

A multilingual embedding model places every text partly by its language: a Chinese question is
closer to Chinese memories about other things than to the English memory it asks for (e5:
zh→en R@1 .15 with the vector channel alone). Removing the question's language from its vector
(subtracting the mean vector of that language's texts, then normalising again) leaves what it
is about; each memory's vector score then loses half the centred question's product with its
own language's mean (retrieval.channels.MEMORY_CENTRING), so memories in the question's language
are not pushed down as a whole. Measured on bench.crosslingual (203 pairs), R@1 .98 or better
both ways with e5's default fusion, stored vectors as they are. The means are computed once per
model from `language_reference.jsonl` (110 Chinese and 112 English everyday sentences written
for the project, the tuning sentences of bench/data, none of them from the benchmarks the
figures come from) and kept beside the prepared models.

A question is Chinese when it holds a Han character; otherwise it counts as English (any
Latin-script text); a fact likewise, for fusion (`retrieval.search`). Stored vectors stay as the
model made them.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path

import numpy as np
from django.conf import settings

from indexing.embedders import Embedder

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# The same test in PostgreSQL's regular expressions, for candidates read by SQL.
SQL_HAN = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
REFERENCE = Path(__file__).with_name("language_reference.jsonl")
LANGUAGES = ("zh", "en")

_means: dict[str, dict[str, np.ndarray]] = {}
_lock = threading.Lock()


def text_language(text: str) -> str:
    return "zh" if HAN.search(text) else "en"


def language_means(embedder: Embedder) -> dict[str, np.ndarray]:
    """The mean passage vector of each language's reference sentences, for this model: made
    once per deployment (about a second) and kept beside the prepared models."""
    with _lock:
        if embedder.name in _means:
            return _means[embedder.name]
    reference = REFERENCE.read_bytes()
    key = hashlib.sha256(embedder.name.encode() + b"\0" + reference).hexdigest()[:16]
    kept = Path(settings.MNEMOSYNE_MODEL_DIR) / f"language-means-{key}.npz"
    try:
        with np.load(kept) as stored:
            means = {language: stored[language] for language in LANGUAGES}
    except (OSError, KeyError, ValueError):
        rows = [json.loads(line) for line in reference.decode().splitlines() if line.strip()]
        means = {
            language: embedder.embed(
                [row["text"] for row in rows if row["lang"] == language], purpose="passage"
            ).mean(axis=0)
            for language in LANGUAGES
        }
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            np.savez(kept, **means)
        except OSError:
            pass  # a read-only model folder: made again by the next process
    with _lock:
        _means[embedder.name] = means
    return means


def query_without_language(vector: np.ndarray, query: str, embedder: Embedder) -> np.ndarray:
    """The query's vector with its language's mean taken out, of unit length again."""
    centred = vector - language_means(embedder)[text_language(query)]
    norm = float(np.linalg.norm(centred))
    return (centred / norm).astype(np.float32) if norm > 1e-9 else vector
