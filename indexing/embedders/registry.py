"""Build embedders from spec strings, share one per process, and check their health."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from .base import Embedder, EmbedderError, stream_threads

# Measured with this code (speaker-prefixed turns, one per unit): e5 int8 R@10 .53 on LoCoMo dev
# (USE .33) and R@1 .95 on CMRC dev (USE .67), at about a fifth of USE's speed.
DEFAULT_SPEC = "e5"
SPEC_HELP = (
    "use one of: default, e5, use, onnx:/path/to/model-dir, ollama:<model>[@http://host:port]"
)
PROBE_TEXT = "Mnemosyne 健康检查: the memory store is alive."

_cache: dict[tuple[str, str, int, int], Embedder] = {}
_key_locks: dict[tuple[str, str, int, int], threading.Lock] = {}
_registry_lock = threading.Lock()


def embedder_from_spec(spec: str, *, cache_dir: Path, threads: int | None = None) -> Embedder:
    """A new embedder for `spec`; loading a model takes about a second (e5's first: ~20 s)."""
    spec = spec.strip()
    kind, _, rest = (DEFAULT_SPEC if spec == "default" else spec).partition(":")
    if kind == "e5" and not rest:
        from .e5 import E5Embedder

        return E5Embedder(cache_dir=Path(cache_dir), threads=threads)
    if kind == "use" and not rest:
        from .use import UseEmbedder

        return UseEmbedder(threads=threads)
    if kind == "onnx" and rest:
        from .onnx_dir import OnnxDirEmbedder

        return OnnxDirEmbedder(Path(rest), threads=threads)
    if kind == "ollama":
        from .ollama import OllamaEmbedder, parse_ollama_spec

        model, url = parse_ollama_spec(rest)
        return OllamaEmbedder(model, url=url)
    raise EmbedderError(f"unknown embedder spec {spec!r}: {SPEC_HELP}")


def get_embedder(
    spec: str, cache_dir: Path, *, threads: int | None = None, copy: int = 0
) -> Embedder:
    """The process-wide embedder for `spec`, loaded on first use: with `threads` threads (by
    default each embedding stream's share, `stream_threads`), and `copy` 1, 2, ... for the
    further streams' own copies (`resolve_streams`).

    A lock per spec lets two threads asking for the same model wait for one load instead of
    loading it twice; a failed load is not remembered, so it is retried on the next call.
    """
    threads = stream_threads() if threads is None else threads
    fast = (spec, str(cache_dir), threads, copy)
    found = _cache.get(fast)  # the hot path: no lock, no file system
    if found is not None:
        return found
    # "default" and "e5" are one model: one load, one copy in memory.
    canonical = DEFAULT_SPEC if spec.strip() == "default" else spec.strip()
    key = (canonical, str(Path(cache_dir).resolve()), threads, copy)
    with _registry_lock:
        if key in _cache:
            _cache[fast] = _cache[key]
            return _cache[key]
        lock = _key_locks.setdefault(key, threading.Lock())
    with lock:
        if key not in _cache:
            embedder = embedder_from_spec(spec, cache_dir=Path(cache_dir), threads=threads)
            with _registry_lock:
                _cache[key] = embedder
        _cache[fast] = _cache[key]
        return _cache[key]


def clear_embedder_cache() -> None:
    """Forget the loaded embedders (tests; a settings change)."""
    with _registry_lock:
        _cache.clear()
        _key_locks.clear()


def _probe_problem(vectors: np.ndarray, dimension: int) -> str | None:
    if vectors.shape != (1, dimension):
        return f"probe gave shape {vectors.shape}, expected (1, {dimension})"
    if vectors.dtype != np.float32 or not np.all(np.isfinite(vectors)):
        return "probe vector is not finite float32"
    norm = float(np.linalg.norm(vectors[0]))
    if not math.isclose(norm, 1.0, abs_tol=1e-3):
        return f"probe vector has norm {norm:.4f}, expected 1"
    return None


def embedder_health(embedder: Embedder) -> dict[str, Any]:
    """Embed one probe sentence; never raises, reports what went wrong instead."""
    name = getattr(embedder, "name", "?")
    dimension = getattr(embedder, "dimension", None)
    started = time.perf_counter()
    try:
        vectors = embedder.embed([PROBE_TEXT], purpose="query")
    except Exception as exc:  # a health check reports any failure instead of raising it
        return {"ok": False, "name": name, "dimension": dimension, "detail": str(exc)}
    elapsed_ms = (time.perf_counter() - started) * 1000
    problem = _probe_problem(vectors, dimension)  # type: ignore[arg-type]
    detail = problem or f"embedded a probe sentence in {elapsed_ms:.1f} ms"
    return {"ok": problem is None, "name": name, "dimension": dimension, "detail": detail}
