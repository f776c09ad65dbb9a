"""Any sentence-embedding model a user provides as an ONNX file plus a `tokenizers` tokenizer.

The folder holds `model.onnx`, `tokenizer.json` and `mnemosyne.json`, for example:

    {"name": "all-minilm-l6-v2-int8", "pooling": "mean", "normalize": true,
     "query_prefix": "", "passage_prefix": "", "max_length": 256}

`pooling` is "mean" (over the attention mask) or "cls"; `normalize: false` says the model's own
output is already unit length (checked, since Mnemosyne compares vectors by cosine).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .base import (
    DEFAULT_BATCH_SIZE,
    EmbedderError,
    Purpose,
    check_output,
    check_texts,
    empty,
    in_batches,
    l2_normalise,
    resolve_threads,
)
from .onnx_runner import EncoderRunner

CONFIG_FILE = "mnemosyne.json"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
_EXAMPLE = '{"name": "my-model", "pooling": "mean", "normalize": true, "max_length": 512}'
_FIELDS: dict[str, type] = {
    "name": str,
    "pooling": str,
    "normalize": bool,
    "query_prefix": str,
    "passage_prefix": str,
    "max_length": int,
    "dimension": int,
    "output": str,
}


@dataclass(frozen=True)
class OnnxModelConfig:
    name: str
    pooling: str = "mean"
    normalize: bool = True
    query_prefix: str = ""
    passage_prefix: str = ""
    max_length: int = 512
    dimension: int | None = None
    output: str | None = None


def _check_fields(raw: dict[str, Any], path: Path) -> None:
    unknown = sorted(set(raw) - set(_FIELDS))
    if unknown:
        raise EmbedderError(f"{path}: unknown keys {unknown}; allowed: {sorted(_FIELDS)}")
    for key, value in raw.items():
        # bool is an int in Python; a max_length of `true` is still a mistake.
        if not isinstance(value, _FIELDS[key]) or (key != "normalize" and isinstance(value, bool)):
            raise EmbedderError(f"{path}: {key!r} must be a {_FIELDS[key].__name__}")


def load_config(folder: Path) -> OnnxModelConfig:
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise EmbedderError(f"{folder} has no {CONFIG_FILE}; write one like {_EXAMPLE}")
    try:
        raw = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbedderError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise EmbedderError(f"{path} must hold a JSON object like {_EXAMPLE}")
    _check_fields(raw, path)
    config = OnnxModelConfig(**{"name": f"onnx-{folder.name}", **raw})
    if config.pooling not in ("mean", "cls"):
        raise EmbedderError(f"{path}: pooling must be 'mean' or 'cls', got {config.pooling!r}")
    if config.max_length < 2:
        raise EmbedderError(f"{path}: max_length must be at least 2, got {config.max_length}")
    return config


def _require_files(folder: Path) -> None:
    if not folder.is_dir():
        raise EmbedderError(f"onnx model folder {folder} does not exist")
    for file_name in (MODEL_FILE, TOKENIZER_FILE):
        if not (folder / file_name).is_file():
            raise EmbedderError(f"onnx model folder {folder} lacks {file_name}")


def _load_tokenizer(path: Path, max_length: int):  # -> tokenizers.Tokenizer
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception on bad files
        raise EmbedderError(f"cannot read tokenizer {path}: {exc}") from exc
    tokenizer.no_padding()  # batches are padded after length sorting
    tokenizer.enable_truncation(max_length)
    return tokenizer


class OnnxDirEmbedder:
    """A user's ONNX sentence encoder run with onnxruntime and a Hugging Face tokenizer.json."""

    def __init__(
        self, folder: Path, *, threads: int | None = None, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> None:
        folder = Path(folder).expanduser()
        _require_files(folder)
        self.config = load_config(folder)
        self.name = self.config.name
        self.batch_size = batch_size
        self._tokenizer = _load_tokenizer(folder / TOKENIZER_FILE, self.config.max_length)
        self._runner = EncoderRunner(
            folder / MODEL_FILE,
            threads=resolve_threads(threads),
            pooling=self.config.pooling,  # type: ignore[arg-type]  # validated in load_config
            pad_id=0,
            output=self.config.output,
        )
        self.dimension = self._discover_dimension()

    def _discover_dimension(self) -> int:
        probe = self._encode(["dimension probe"], purpose="passage")
        found = int(probe.shape[1])
        if self.config.dimension is not None and self.config.dimension != found:
            raise EmbedderError(
                f"dimension mismatch: {CONFIG_FILE} says {self.config.dimension}, "
                f"the model produces {found}"
            )
        return found

    def _encode(self, items: list[str], *, purpose: Purpose) -> np.ndarray:
        prefix = self.config.query_prefix if purpose == "query" else self.config.passage_prefix
        encodings = self._tokenizer.encode_batch([prefix + text for text in items])
        pooled = in_batches([e.ids for e in encodings], self._runner.run, self.batch_size)
        if self.config.normalize:
            return l2_normalise(pooled)
        pooled = pooled.astype(np.float32)
        if not np.allclose(np.linalg.norm(pooled, axis=1), 1.0, atol=1e-3):
            raise EmbedderError(
                f"{self.name}: normalize is false but the model's vectors are not unit length"
            )
        return pooled

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text, to sort texts by before they are cut into runs."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str], *, purpose: Purpose = "passage") -> np.ndarray:
        items = check_texts(texts, purpose)
        if not items:
            return empty(self.dimension)
        vectors = self._encode(items, purpose=purpose)
        return check_output(vectors, len(items), self.dimension, self.name)
