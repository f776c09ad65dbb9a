"""Conflict and duplicate detection against labelled pairs: precision and recall per language.

    python -m bench.conflicts [--data PATH] [--json OUT] [--threshold 0.95] [--show-errors]

`--data` is JSON Lines of {"a": ..., "b": ..., "lang": "zh"|"en", "label":
"contradict"|"compatible"|"duplicate"} (default: bench/data/conflicts.jsonl, the held-out set;
bench/data/conflicts_tune.jsonl is the set the rules were tuned on). Each pair goes through the
product's own judgement (`facts.contradiction.pair_judge`) with the cosine of the two texts'
vectors by the configured embedder (e5-small by default, as stored facts are embedded) and the
duplicate threshold a tenant has by default; a pair is a conflict or a duplicate exactly when a
worker storing the second statement would record a conflict or join it to the first. No
database.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.harness import REPO, progress, write_json

DEFAULT_DATA = REPO / "bench" / "data" / "conflicts.jsonl"
LABELS = ("contradict", "compatible", "duplicate")


def load(path: Path) -> list[dict[str, Any]]:
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        item = json.loads(line)
        if item.get("lang") not in ("zh", "en") or item.get("label") not in LABELS:
            raise SystemExit(f"{path}:{number}: needs a, b, lang (zh, en) and a label {LABELS}")
        items.append(item)
    return items


def _pr(tp: int, fp: int, fn: int) -> dict[str, float]:
    return {
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
    }


def similarities(items: list[dict[str, Any]]) -> list[float]:
    import numpy as np
    from django.conf import settings

    from indexing.embedders import get_embedder

    embedder = get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR)
    progress(f"embedding {2 * len(items)} statements with {embedder.name}")
    va = np.asarray(embedder.embed([i["a"] for i in items], purpose="passage"))
    vb = np.asarray(embedder.embed([i["b"] for i in items], purpose="passage"))
    return [float(x) for x in (va * vb).sum(axis=1)]


def run(items: list[dict[str, Any]], threshold: float, show_errors: bool = False) -> dict[str, Any]:
    from facts.contradiction import pair_judge

    sims = similarities(items)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    started = time.perf_counter()
    for item, sim in zip(items, sims, strict=True):
        verdict = pair_judge(item["a"], item["b"], similarity=sim, duplicate_threshold=threshold)
        c = counts[item["lang"]]
        c["pairs"] += 1
        for label in ("contradict", "duplicate"):
            said, truth = verdict.label == label, item["label"] == label
            c[f"{label}_tp"] += said and truth
            c[f"{label}_fp"] += said and not truth
            c[f"{label}_fn"] += truth and not said
        if show_errors and verdict.label != item["label"]:
            print(
                f"[{item['lang']}] {item['label']} judged {verdict.label} ({verdict.reason}, "
                f"cos {sim:.3f}): {item['a']} | {item['b']}",
                file=sys.stderr,
            )
    elapsed = time.perf_counter() - started
    result: dict[str, Any] = {}
    for lang in sorted(counts):
        c = counts[lang]
        result[lang] = {
            "conflict": _pr(c["contradict_tp"], c["contradict_fp"], c["contradict_fn"]),
            "duplicate": _pr(c["duplicate_tp"], c["duplicate_fp"], c["duplicate_fn"]),
            "pairs": c["pairs"],
        }
    result["judge_ms_per_pair"] = round(1000 * elapsed / max(len(items), 1), 3)
    result["duplicate_threshold"] = threshold
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="JSON Lines, see above")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--threshold", type=float, default=0.95, help="duplicate threshold (a tenant's default)"
    )
    parser.add_argument("--show-errors", action="store_true", help="print every wrong judgement")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key-0123456789abcdefghij")
    os.environ.setdefault("MNEMOSYNE_MODEL_DIR", str(REPO / ".mnemosyne" / "models"))
    import django

    django.setup()
    figures = run(load(args.data), args.threshold, show_errors=args.show_errors)
    print(f"Conflict and duplicate detection on {args.data.name} (threshold {args.threshold})")
    for lang in ("zh", "en"):
        if lang not in figures:
            continue
        f = figures[lang]
        print(
            f"  {lang}  {f['pairs']} pairs: conflicts precision {f['conflict']['precision']:.3f} "
            f"recall {f['conflict']['recall']:.3f};  duplicates precision "
            f"{f['duplicate']['precision']:.3f} recall {f['duplicate']['recall']:.3f}"
        )
    print(f"  {figures['judge_ms_per_pair']} ms per pair (rules, without the embedding)")
    # The file holds exactly {"zh": {"conflict": {"precision", "recall"}, "duplicate": {...}},
    # "en": {...}}.
    write_json(args.json, {
        lang: {k: figures[lang][k] for k in ("conflict", "duplicate")}
        for lang in ("zh", "en") if lang in figures
    })  # fmt: skip


if __name__ == "__main__":
    main()
