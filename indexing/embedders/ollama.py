"""Embeddings from a local Ollama server's /api/embed endpoint (standard library HTTP only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from urllib.parse import urlsplit

import numpy as np

from .base import (
    EmbedderError,
    Purpose,
    check_output,
    check_texts,
    empty,
    l2_normalise,
)

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
PROBE_TIMEOUT = 10.0
EMBED_TIMEOUT = 120.0
# Texts per request to the Ollama server (the run size of the local models, DEFAULT_BATCH_SIZE,
# was chosen for onnxruntime on these cores; a request pays its round trip instead).
OLLAMA_BATCH_SIZE = 32


def parse_ollama_spec(rest: str) -> tuple[str, str]:
    """`model[@http://host:port]` -> (model, base URL)."""
    model, _, url = rest.partition("@")
    url = (url or DEFAULT_OLLAMA_URL).rstrip("/")
    if not model:
        raise EmbedderError("ollama spec needs a model name: ollama:<model>[@http://host:port]")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EmbedderError(f"ollama URL must look like http://host:port, got {url!r}")
    return model, url


def _error_body(exc: urllib.error.HTTPError) -> str:
    try:
        return json.loads(exc.read().decode("utf-8", "replace")).get("error", "")
    except (ValueError, AttributeError, OSError):
        return ""


class OllamaEmbedder:
    """The dimension is whatever the served model returns for a probe sentence."""

    def __init__(
        self, model: str, *, url: str = DEFAULT_OLLAMA_URL, batch_size: int = OLLAMA_BATCH_SIZE
    ) -> None:
        self.model = model
        self.url = url
        self.name = f"ollama:{model}"
        self.batch_size = batch_size
        probe = self._post(["dimension probe"], timeout=PROBE_TIMEOUT)
        self.dimension = int(probe.shape[1])

    def _post(self, texts: list[str], *, timeout: float) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": texts, "truncate": True}).encode()
        request = urllib.request.Request(  # noqa: S310  # scheme checked in parse_ollama_spec
            f"{self.url}/api/embed", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                payload = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = _error_body(exc) or exc.reason
            raise EmbedderError(f"Ollama at {self.url} refused {self.model!r}: {detail}") from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise EmbedderError(f"cannot reach Ollama at {self.url}: {reason}") from exc
        except ValueError as exc:
            raise EmbedderError(f"Ollama at {self.url} sent a response that is not JSON") from exc
        return self._vectors(payload, len(texts))

    def _vectors(self, payload: object, count: int) -> np.ndarray:
        embeddings = payload.get("embeddings") if isinstance(payload, dict) else None
        try:
            vectors = np.asarray(embeddings, dtype=np.float32)
        except (TypeError, ValueError):
            vectors = np.zeros((0,), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != count:
            raise EmbedderError(f"Ollama at {self.url} returned no usable embeddings")
        return vectors

    def embed(self, texts: Sequence[str], *, purpose: Purpose = "passage") -> np.ndarray:
        items = check_texts(texts, purpose)
        if not items:
            return empty(self.dimension)
        batches = [items[i : i + self.batch_size] for i in range(0, len(items), self.batch_size)]
        # Checked per batch: a model re-pulled under the same name may change its dimension.
        parts = [
            check_output(
                self._post(batch, timeout=EMBED_TIMEOUT), len(batch), self.dimension, self.name
            )
            for batch in batches
        ]
        return l2_normalise(np.concatenate(parts, axis=0))
