"""bench.abstain: the command line and its JSON, on tiny conversation and small-talk files (the
real sets are taken by --data)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.test_locomo_bench import REPO, _conversation


def test_the_abstention_figures_are_written(tmp_path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(
        json.dumps(
            [
                _conversation("c1", "Ana", "Lisbon", "Pico"),
                _conversation("c2", "Ben", "Oslo", "Rex"),
                _conversation("c3", "Cai", "Kyoto", "Momo"),
                _conversation("c4", "Dev", "Quito", "Nala"),
            ]
        )
    )
    talk = tmp_path / "talk.jsonl"
    talk.write_text('{"text": "thanks!", "lang": "en"}\n{"text": "好的", "lang": "zh"}\n')
    out = tmp_path / "figures.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.abstain", "--data", str(data), "--smalltalk-tune",
         str(talk), "--smalltalk-eval", str(talk), "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(out.read_text())
    for field in (
        "own_recall_at_10", "floorless_recall_at_10", "foreign_injection_rate",
        "chitchat_injection_rate",
    ):  # fmt: skip
        assert 0.0 <= figures[field] <= 1.0, field
    # Two conversations in each part, three questions each; each small-talk turn said to both.
    assert figures["questions"] == 6 and figures["foreign_questions"] == 6
    assert figures["chitchat_asks"] == 4 and figures["tuning"]["questions"] == 6
    assert figures["fitted_now"] is False
