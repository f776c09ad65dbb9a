"""Sentence embedders for the vector channel: one interface, several local backends.

    embedder = get_embedder("default", cache_dir)     # loaded once per process
    vectors = embedder.embed(texts, purpose="passage")  # (n, embedder.dimension) float32, unit rows

Specs: "default" (= "e5"), "e5", "use", "onnx:/path/to/dir", "ollama:<model>[@http://host:port]".
"""

from .base import Embedder, EmbedderError, Purpose, resolve_threads
from .registry import (
    DEFAULT_SPEC,
    clear_embedder_cache,
    embedder_from_spec,
    embedder_health,
    get_embedder,
)

__all__ = [
    "DEFAULT_SPEC",
    "Embedder",
    "EmbedderError",
    "Purpose",
    "clear_embedder_cache",
    "embedder_from_spec",
    "embedder_health",
    "get_embedder",
    "resolve_threads",
]
