"""bench.entities and bench.conflicts: the command lines and the JSON the issue asks for, on a
few labelled lines (the real sets live in bench/data)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _run(module: str, data: Path, out: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", module, "--data", str(data), "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_bench_entities_scores_extraction_per_language(tmp_path) -> None:
    data = tmp_path / "entities.jsonl"
    lines = [
        {"text": "老王下周去上海出差。", "lang": "zh",
         "entities": [{"name": "老王", "type": "person"}, {"name": "上海", "type": "place"}]},
        {"text": "Alice moved to Berlin.", "lang": "en",
         "entities": [{"name": "Alice", "type": "person"}, {"name": "Paris", "type": "place"}]},
    ]  # fmt: skip
    data.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines))
    out = tmp_path / "figures.json"
    printed = _run("bench.entities", data, out)
    figures = json.loads(out.read_text())
    assert set(figures) == {"zh", "en"}
    whole = {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert {k: figures["zh"][k] for k in ("precision", "recall", "f1")} == whole
    assert figures["zh"]["typed"] == whole
    assert figures["zh"]["by_type"]["place"] == whole | {"expected": 1}
    # Berlin is found but not labelled, Paris labelled but not said: one of two each way.
    half = {"precision": 0.5, "recall": 0.5, "f1": 0.5}
    assert {k: figures["en"][k] for k in ("precision", "recall", "f1")} == half
    assert figures["en"]["typed"] == half, "Alice is typed a person"
    assert "zh  1 sentences" in printed and "ms per sentence" in printed


def test_bench_conflicts_scores_conflicts_and_duplicates(tmp_path) -> None:
    data = tmp_path / "pairs.jsonl"
    lines = [
        {"a": "Carol is vegetarian.", "b": "Carol is not vegetarian.", "lang": "en",
         "label": "contradict"},
        {"a": "Carol is vegetarian!", "b": "carol is vegetarian", "lang": "en",
         "label": "duplicate"},
        {"a": "李娜吃素。", "b": "李娜不吃素。", "lang": "zh", "label": "contradict"},
        {"a": "李娜吃素。", "b": "李娜住在成都。", "lang": "zh", "label": "compatible"},
    ]  # fmt: skip
    data.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines))
    out = tmp_path / "figures.json"
    _run("bench.conflicts", data, out)
    figures = json.loads(out.read_text())
    assert set(figures) == {"zh", "en"}
    assert figures["en"] == {"conflict": {"precision": 1.0, "recall": 1.0},
                             "duplicate": {"precision": 1.0, "recall": 1.0}}  # fmt: skip
    assert figures["zh"]["conflict"] == {"precision": 1.0, "recall": 1.0}
