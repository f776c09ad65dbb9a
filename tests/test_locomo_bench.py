"""bench.locomo: the command line, the cross-validated protocol (--folds) and the JSON, on a
tiny conversation file in LoCoMo's format (the real sets are taken by --data)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _conversation(sample_id: str, who: str, place: str, pet: str) -> dict:
    turns = [
        (who, f"I moved to {place} last month."),
        ("Sam", "How do you like it there?"),
        (who, f"I love it, and my dog {pet} loves the parks."),
        ("Sam", "I started learning the violin."),
    ]
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": who,
            "speaker_b": "Sam",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": s, "dia_id": f"D1:{n}", "text": t} for n, (s, t) in enumerate(turns, 1)
            ],
        },
        "qa": [
            {"question": f"Where did {who} move?", "evidence": ["D1:1"], "category": 4},
            {"question": f"What is the name of {who}'s dog?", "evidence": ["D1:3"], "category": 4},
            {"question": "What instrument is Sam learning?", "evidence": ["D1:4"], "category": 1},
            {"question": "No evidence, not asked", "evidence": [], "category": 5},
        ],
    }


def test_folds_report_each_conversation_with_constants_chosen_without_it(tmp_path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(
        json.dumps(
            [
                _conversation("c1", "Ana", "Lisbon", "Pico"),
                _conversation("c2", "Ben", "Oslo", "Rex"),
                _conversation("c3", "Cai", "Kyoto", "Momo"),
            ]
        )
    )
    out = tmp_path / "figures.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.locomo", "--data", str(data), "--k", "1,3",
         "--folds", "3", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(out.read_text())
    assert figures["questions"] == 9 and figures["conversations"] == 3
    cv = figures["cross_validated"]
    assert [fold["conversations"] for fold in cv["folds"]] == [["c1"], ["c2"], ["c3"]]
    assert all(fold["questions"] == 3 for fold in cv["folds"])
    assert set(cv["folds"][0]["chosen"]) == {"fts", "neighbour", "session", "speaker"}
    # Four turns each: most evidence is in the top 3 of this tiny set, held out or not.
    assert cv["recall"]["3"] >= 2 / 3 and figures["recall"]["3"] >= 2 / 3
    assert all(0 <= fold["held_out"]["1"] <= fold["held_out"]["3"] <= 1 for fold in cv["folds"])
    assert "Cross-validated over 3 folds" in result.stdout
    # The grid replays the product's own ranking (session match included) at the defaults.
    assert "ranking differs" not in result.stderr


def test_folds_need_at_least_two_conversations(tmp_path) -> None:
    data = tmp_path / "one.json"
    data.write_text(json.dumps([_conversation("c1", "Ana", "Lisbon", "Pico")]))
    result = subprocess.run(
        [sys.executable, "-m", "bench.locomo", "--data", str(data), "--folds", "2"],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=900,
    )  # fmt: skip
    assert result.returncode != 0
    assert "--folds 2: needs 2 to 1" in result.stderr
