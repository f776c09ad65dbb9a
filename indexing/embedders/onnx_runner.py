"""Run a transformer encoder ONNX graph on token ids and pool its output into sentence vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np

from .base import EmbedderError, resolve_spinning

Pooling = Literal["mean", "cls"]


def open_session(model_path: Path, threads: int):  # -> onnxruntime.InferenceSession
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    # One request at a time per session call; parallelism comes from intra-op threads.
    options.inter_op_num_threads = 1
    if not resolve_spinning():
        # Idle intra-op threads sleep instead of spinning while they wait for work.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # onnxruntime's warnings are about graph fusions, not errors
    try:
        return ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own, unexported exception types
        raise EmbedderError(f"onnxruntime cannot load {model_path}: {exc}") from exc


def pad_batch(token_ids: list[list[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(ids) for ids in token_ids)
    ids = np.full((len(token_ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.int64)
    for row, tokens in enumerate(token_ids):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask


def pool(hidden: np.ndarray, mask: np.ndarray, pooling: Pooling) -> np.ndarray:
    if hidden.ndim == 2:  # the graph already pools (a sentence-embedding output)
        return hidden
    if pooling == "cls":
        return hidden[:, 0, :]
    weights = mask[:, :, None].astype(np.float32)
    return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)


class EncoderRunner:
    """An onnxruntime session that maps padded token ids to pooled vectors."""

    def __init__(
        self,
        model_path: Path,
        *,
        threads: int,
        pooling: Pooling,
        pad_id: int,
        output: str | None = None,
    ) -> None:
        self.session = open_session(model_path, threads)
        self.input_names = {i.name for i in self.session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self.input_names
        if missing:
            raise EmbedderError(
                f"{model_path} lacks the inputs {sorted(missing)}; "
                f"it has {sorted(self.input_names)}"
            )
        outputs = [o.name for o in self.session.get_outputs()]
        if output is not None and output not in outputs:
            raise EmbedderError(f"{model_path} has no output {output!r}; it has {outputs}")
        self.output = output or outputs[0]
        self.pooling = pooling
        self.pad_id = pad_id

    def run(self, token_ids: list[list[int]]) -> np.ndarray:
        ids, mask = pad_batch(token_ids, self.pad_id)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        try:
            (hidden,) = self.session.run([self.output], feeds)
        except Exception as exc:  # onnxruntime raises its own, unexported exception types
            raise EmbedderError(f"onnxruntime failed to run the model: {exc}") from exc
        return pool(hidden, mask, self.pooling)
