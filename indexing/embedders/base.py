"""The embedder interface and the helpers every backend shares."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

Purpose = Literal["query", "passage"]
PURPOSES: tuple[Purpose, ...] = ("query", "passage")
THREADS_ENV = "MNEMOSYNE_EMBED_THREADS"
SPIN_ENV = "MNEMOSYNE_EMBED_SPIN"
STREAMS_ENV = "MNEMOSYNE_EMBED_STREAMS"
DEFAULT_THREADS = 2
# Texts per call of the model (a batch's texts are sorted by length first, `in_batches`). On a
# 2-core Intel Xeon, LoCoMo's turns embedded faster in runs of 16 than of 32: 275 to 281
# against 231 to 239 texts/s in one stream, 299 to 319 against 231 to 241 in two (chosen on
# the first 2,000 turns; on the other 760, held out, 279 to 290 against 233 to 239 in one
# stream). Short Chinese turns (bench/data/zh_dialogues.json) gained nothing in one stream
# (435 to 505 against 512 to 529) and a little in two (360 to 362 against 331 to 344).
# (A one-off script around bench.ingest's embedder measurement.) bench.ingest's imports, end
# to end, on the same turns cycled: 214 to 235 facts/s against 172 to 187.
DEFAULT_BATCH_SIZE = 16


class EmbedderError(Exception):
    """Any failure to build or run an embedder, with a message a person can act on."""


@runtime_checkable
class Embedder(Protocol):
    name: str  # stable model identifier recorded with every vector
    dimension: int

    def embed(self, texts: Sequence[str], *, purpose: Purpose = "passage") -> np.ndarray:
        """(len(texts), dimension) float32, rows L2-normalised; empty input -> (0, dimension)."""
        ...


def resolve_threads(threads: int | None = None) -> int:
    """The explicit argument, else MNEMOSYNE_EMBED_THREADS, else 2."""
    if threads is not None:
        value: object = threads
    else:
        value = os.environ.get(THREADS_ENV, str(DEFAULT_THREADS))
    try:
        count = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise EmbedderError(f"{THREADS_ENV} must be a positive integer, got {value!r}") from None
    if count < 1:
        raise EmbedderError(f"embedding threads must be a positive integer, got {count}")
    return count


def resolve_streams() -> int:
    """How many embeddings a process runs side by side (MNEMOSYNE_EMBED_STREAMS: 1 by default;
    the worker sets 2, `memoryadmin.signals`), at most one per thread. Each stream has a copy of
    the model of its own (a session and its memory) and an equal share of the threads: two
    one-thread sessions side by side embedded about 8% more texts per second than one session
    of two threads on the same two cores (the threads of one session wait for each other)."""
    value = os.environ.get(STREAMS_ENV, "1")
    try:
        count = int(value)
    except ValueError:
        raise EmbedderError(f"{STREAMS_ENV} must be a positive integer, got {value!r}") from None
    if count < 1:
        raise EmbedderError(f"{STREAMS_ENV} must be a positive integer, got {value!r}")
    return min(count, resolve_threads())


def stream_threads() -> int:
    """The threads of each of the process's embedding streams."""
    return max(1, resolve_threads() // resolve_streams())


def resolve_spinning() -> bool:
    """Whether an embedder's idle threads spin (MNEMOSYNE_EMBED_SPIN: 1, the default, or 0).
    Spinning answers the next call a little sooner and costs a core's time meanwhile: the
    worker turns it off (`memoryadmin.signals`), where PostgreSQL and the storing of the facts
    need the cores between and beside its embeddings."""
    value = os.environ.get(SPIN_ENV, "1")
    if value not in ("0", "1"):
        raise EmbedderError(f"{SPIN_ENV} must be 0 or 1, got {value!r}")
    return value == "1"


def check_texts(texts: Sequence[str], purpose: str) -> list[str]:
    # A bare string is a Sequence[str] too; embedding it letter by letter is never what was meant.
    if isinstance(texts, str):
        raise EmbedderError("embed() takes a sequence of texts, not a single string")
    if purpose not in PURPOSES:
        raise EmbedderError(f"purpose must be 'query' or 'passage', got {purpose!r}")
    items = list(texts)
    for item in items:
        if not isinstance(item, str):
            raise EmbedderError(f"embed() takes strings, got {type(item).__name__}")
    return items


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # An all-zero row (possible from a remote model) stays zero instead of becoming NaN.
    return vectors / np.maximum(norms, 1e-12)


def empty(dimension: int) -> np.ndarray:
    return np.zeros((0, dimension), dtype=np.float32)


def check_output(vectors: np.ndarray, count: int, dimension: int, name: str) -> np.ndarray:
    if vectors.shape != (count, dimension):
        raise EmbedderError(
            f"embedder {name} returned shape {vectors.shape}, expected ({count}, {dimension}): "
            "dimension mismatch"
        )
    return vectors


def text_lengths(embedder: Embedder, texts: list[str]) -> list[int]:
    """The texts' lengths as the embedder pads them: its tokens when it can count them
    (`token_counts`), else characters. Runs cut from texts sorted by characters embedded 6%
    slower than runs sorted by tokens (LoCoMo's turns, e5-small)."""
    counts = getattr(embedder, "token_counts", None)
    if counts is None:
        return [len(text) for text in texts]
    return list(counts(texts))


def in_batches(
    token_ids: list[list[int]], run: Callable[[list[list[int]]], np.ndarray], batch_size: int
) -> np.ndarray:
    """Run `run` over length-sorted batches and return rows in the input order.

    Sorting by length keeps padding (wasted compute) small when short and long texts are mixed.
    """
    order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
    parts = []
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        parts.append(run([token_ids[i] for i in chunk]))
    stacked = np.concatenate(parts, axis=0)
    result = np.empty_like(stacked)
    result[np.asarray(order)] = stacked
    return result
