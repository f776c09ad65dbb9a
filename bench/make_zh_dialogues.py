"""Build bench/data/zh_dialogues.json (LoCoMo's format) from its source, zh_dialogues.txt.

    python -m bench.make_zh_dialogues [--source PATH] [--out PATH]

The source is written by hand, one conversation after another:

    === <sample id> | <speaker a> | <speaker b>
    --- 2023-03-04 19:20               (a session and its date)
    <speaker>: <text> {tag}            (a turn; the tag, optional, names it for the questions)
    ? <category> | <question> | <answer> | tag,tag

Categories are LoCoMo's: 1 multi-hop, 2 temporal, 4 single-hop. A question's evidence is the
turns its tags name, written out as LoCoMo's "D<session>:<turn>" ids.
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.harness import REPO

SOURCE = REPO / "bench" / "data" / "zh_dialogues.txt"
OUT = REPO / "bench" / "data" / "zh_dialogues.json"
_TAG = re.compile(r"\s*\{(\w+)\}\s*$")


def _locomo_date(text: str) -> str:
    """ "2023-03-04 19:20" -> "7:20 pm on 4 March, 2023", as LoCoMo writes session dates."""
    when = datetime.strptime(text.strip(), "%Y-%m-%d %H:%M")  # noqa: DTZ007 - a label, no zone
    noon = "pm" if when.hour >= 12 else "am"
    return f"{when.hour % 12 or 12}:{when:%M} {noon} on {when.day} {when:%B}, {when.year}"


def build(source: str) -> list[dict[str, Any]]:
    conversations: list[dict[str, Any]] = []
    tags: dict[str, str] = {}
    session = 0
    for number, line in enumerate(source.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("==="):
            sample_id, speaker_a, speaker_b = (p.strip() for p in line[3:].split("|"))
            conversations.append(
                {
                    "sample_id": sample_id,
                    "conversation": {"speaker_a": speaker_a, "speaker_b": speaker_b},
                    "qa": [],
                }
            )
            tags, session = {}, 0
        elif line.startswith("---"):
            session += 1
            talk = conversations[-1]["conversation"]
            talk[f"session_{session}_date_time"] = _locomo_date(line[3:])
            talk[f"session_{session}"] = []
        elif line.startswith("?"):
            category, question, answer, evidence = (p.strip() for p in line[1:].split("|"))
            unknown = [t for t in evidence.split(",") if t.strip() not in tags]
            if unknown:
                raise SystemExit(f"line {number}: unknown tags {unknown}")
            conversations[-1]["qa"].append(
                {
                    "question": question,
                    "answer": answer,
                    "evidence": [tags[t.strip()] for t in evidence.split(",")],
                    "category": int(category),
                }
            )
        else:
            speaker, _, text = line.partition(":")
            turns = conversations[-1]["conversation"][f"session_{session}"]
            dia_id = f"D{session}:{len(turns) + 1}"
            if match := _TAG.search(text):
                tags[match.group(1)] = dia_id
                text = text[: match.start()]
            turns.append({"speaker": speaker.strip(), "dia_id": dia_id, "text": text.strip()})
    return conversations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    conversations = build(args.source.read_text())
    args.out.write_text(json.dumps(conversations, ensure_ascii=False, indent=1) + "\n")
    questions = sum(len(c["qa"]) for c in conversations)
    print(f"{args.out}: {len(conversations)} conversations, {questions} questions")


if __name__ == "__main__":
    main()
