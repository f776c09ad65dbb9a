"""Build the entity sets of several styles from their marked-up source.

    python -m bench.make_entity_sets

Reads bench/data/entities_styles.txt (tab-separated: lang, style, sentence with each entity
marked `[[name|t]]`, t one of p person, l place, o organization, d product, x other) and writes
bench/data/entities_styles_tune.jsonl and entities_styles_eval.jsonl in `bench.entities`'s
format, each line with its `style` too. The split is fixed by the sentence itself (the first
byte of its SHA-256: even to tuning, odd to evaluation), so it was decided before anything was
fitted and does not move when sentences are added.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from bench.harness import REPO

DATA = REPO / "bench" / "data"
SOURCE = DATA / "entities_styles.txt"
TYPES = {"p": "person", "l": "place", "o": "organization", "d": "product", "x": "other"}
_MARK = re.compile(r"\[\[([^|\]]+)\|([plodx])\]\]")


def parse(line: str) -> dict[str, object]:
    lang, style, marked = line.split("\t", 2)
    entities = [{"name": m.group(1), "type": TYPES[m.group(2)]} for m in _MARK.finditer(marked)]
    text = _MARK.sub(lambda m: m.group(1), marked)
    if "[[" in text or "]]" in text:
        raise SystemExit(f"bad mark-up: {marked}")
    return {"text": text, "lang": lang, "style": style, "entities": entities}


def is_eval(text: str) -> bool:
    return hashlib.sha256(text.encode("utf-8")).digest()[0] % 2 == 1


def build(source: Path = SOURCE) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    tune, evaluation = [], []
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = parse(line)
            (evaluation if is_eval(str(item["text"])) else tune).append(item)
    return tune, evaluation


def main() -> None:
    tune, evaluation = build()
    for name, items in (("entities_styles_tune.jsonl", tune), ("entities_styles_eval.jsonl",
                                                                 evaluation)):  # fmt: skip
        lines = [json.dumps(item, ensure_ascii=False) for item in items]
        (DATA / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{name}: {len(items)} sentences")


if __name__ == "__main__":
    main()
