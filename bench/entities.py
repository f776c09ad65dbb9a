"""Entity extraction against labelled sentences: precision, recall and F1 per language.

    python -m bench.entities [--data PATH] [--json OUT] [--show-errors]

`--data` is JSON Lines of {"text": ..., "lang": "zh"|"en", "entities": [{"name": ..., "type":
...}]} (default: bench/data/entities.jsonl, the held-out set; bench/data/entities_tune.jsonl is
the set the rules were tuned on). An extracted entity counts as found when its normalised name
(case, width and spacing folded) is one of the sentence's expected names; the typed figures
also need its type to match (a name found with the wrong type counts both as a false positive
and as a miss), and the figures by type count, for each type, the names found with it against
the names labelled with it. The JSON holds `{lang: {precision, recall, f1, "typed": {precision,
recall, f1}, "by_type": {type: {precision, recall, f1, expected}}}}`. No database and no
model: the product's default extractor alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.harness import REPO, write_json

DEFAULT_DATA = REPO / "bench" / "data" / "entities.jsonl"
TYPES = ("person", "place", "organization", "product", "other")


def load(path: Path) -> list[dict[str, Any]]:
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        item = json.loads(line)
        if item.get("lang") not in ("zh", "en") or not isinstance(item.get("entities"), list):
            raise SystemExit(f"{path}:{number}: needs text, lang (zh or en) and entities")
        items.append(item)
    return items


def _figures(tp: int, fp: int, fn: int) -> dict[str, float]:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


def run(items: list[dict[str, Any]], show_errors: bool = False) -> dict[str, Any]:
    from facts import gazetteers
    from facts.entities import entity_normalize
    from facts.extract import extract_entities

    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    loading, loading_cpu = time.perf_counter(), time.process_time()
    lists = {"places": len(gazetteers.places()), "given names": len(gazetteers.given_names()),
             "family names": len(gazetteers.family_names()),
             "companies": len(gazetteers.companies())}  # fmt: skip
    loaded = (time.perf_counter() - loading, time.process_time() - loading_cpu)
    # jieba's dictionary loads once per process (~1 s).
    extract_entities("预热 warm-up: Alice met Bob in Berlin")
    started = time.perf_counter()
    cpu_started = time.process_time()
    for item in items:
        lang = item["lang"]
        expected = {entity_normalize(e["name"]): e.get("type", "other") for e in item["entities"]}
        found = {entity_normalize(e.name): e.type for e in extract_entities(item["text"])}
        hits = expected.keys() & found.keys()
        typed = {k for k in hits if expected[k] == found[k]}
        c = counts[lang]
        for key, kind in expected.items():
            c[f"{kind}:expected"] += 1
            c[f"{kind}:tp"] += key in typed
        for kind in found.values():
            c[f"{kind}:found"] += 1
        if show_errors:
            for key in sorted(hits - typed):
                print(f"[{lang}] type {key}: {found[key]} for {expected[key]}  | {item['text']}",
                      file=sys.stderr)  # fmt: skip
        c["sentences"] += 1
        c["tp"] += len(hits)
        c["fp"] += len(found.keys() - expected.keys())
        c["fn"] += len(expected.keys() - found.keys())
        c["typed_tp"] += len(typed)
        if show_errors and (hits != expected.keys() or hits != found.keys()):
            missed = sorted(expected.keys() - found.keys())
            extra = sorted(found.keys() - expected.keys())
            print(f"[{lang}] {item['text']}\n    missed {missed} extra {extra}", file=sys.stderr)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    result: dict[str, Any] = {}
    for lang in sorted(counts):
        c = counts[lang]
        result[lang] = _figures(c["tp"], c["fp"], c["fn"]) | {
            "typed": _figures(c["typed_tp"], c["fp"] + c["tp"] - c["typed_tp"],
                              c["fn"] + c["tp"] - c["typed_tp"]),
            "sentences": c["sentences"],
            "expected": c["tp"] + c["fn"],
            "by_type": {
                kind: _figures(c[f"{kind}:tp"], c[f"{kind}:found"] - c[f"{kind}:tp"],
                               c[f"{kind}:expected"] - c[f"{kind}:tp"])
                | {"expected": c[f"{kind}:expected"]}
                for kind in TYPES if c[f"{kind}:expected"] or c[f"{kind}:found"]
            },
        }  # fmt: skip
    result["ms_per_sentence"] = round(1000 * elapsed / max(len(items), 1), 3)
    result["cpu_ms_per_sentence"] = round(1000 * cpu / max(len(items), 1), 3)
    result["name_lists"] = lists | {"loaded_ms": round(1000 * loaded[0]),
                                    "loaded_cpu_ms": round(1000 * loaded[1])}  # fmt: skip
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="JSON Lines, see above")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--show-errors", action="store_true", help="print every miss and extra")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key-0123456789abcdefghij")
    import django

    django.setup()
    figures = run(load(args.data), show_errors=args.show_errors)
    print(f"Entity extraction on {args.data.name}")
    for lang in ("zh", "en"):
        if lang not in figures:
            continue
        f = figures[lang]
        typed = f["typed"]
        print(
            f"  {lang}  {f['sentences']} sentences, {f['expected']} entities: precision "
            f"{f['precision']:.3f}  recall {f['recall']:.3f}  F1 {f['f1']:.3f}   (with the type: "
            f"P {typed['precision']:.3f} R {typed['recall']:.3f} F1 {typed['f1']:.3f})"
        )
        print("      by type (P / R / F1, n): " + "; ".join(
            f"{kind} {t['precision']:.2f} / {t['recall']:.2f} / {t['f1']:.2f}, {t['expected']}"
            for kind, t in f["by_type"].items()
        ))  # fmt: skip
    print(
        f"  {figures['ms_per_sentence']} ms per sentence, {figures['cpu_ms_per_sentence']} ms "
        "of CPU (with the scoring)"
    )
    lists = figures["name_lists"]
    print(
        f"  name lists ({lists['places']} places, {lists['given names']} given and "
        f"{lists['family names']} family names, {lists['companies']} companies) loaded in "
        f"{lists['loaded_ms']} ms, {lists['loaded_cpu_ms']} ms of CPU"
    )
    # {"zh": {"precision", "recall", "f1", "typed": {...}, "by_type": {type: {...}}}, "en": ...}
    write_json(args.json, {
        lang: {k: figures[lang][k] for k in ("precision", "recall", "f1", "typed", "by_type")}
        for lang in ("zh", "en") if lang in figures
    })  # fmt: skip


if __name__ == "__main__":
    main()
