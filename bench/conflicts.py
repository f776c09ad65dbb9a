"""Conflict and duplicate detection against labelled pairs: precision and recall per language,
and per kind of change where the pairs name one.

    python -m bench.conflicts [--data PATH]... [--json OUT] [--threshold 0.95] [--show-errors]
                              [--cv-by-kind] [--fit PATH]... [--cache PATH] [--rules]

`--data` (may be given more than once) is JSON Lines of {"a": ..., "b": ..., "lang": "zh"|"en",
"label": "contradict"|"compatible"|"duplicate"}, with an optional "kind" (default:
bench/data/judgement_eval.jsonl, the evaluation part of the judgement sets;
bench/data/judgement_tune.jsonl is the part the model was fitted on; bench/data/conflicts*.jsonl
are older sets in another hand). Each pair goes through the product's own judgement
(`facts.contradiction.pair_judge`) with the cosine of the two texts' vectors by the configured
embedder (e5-small by default, as stored facts are embedded) and the duplicate threshold a
tenant has by default; a pair is a conflict or a duplicate exactly when a worker storing the
second statement would record a conflict or join it to the first. No database.

`--cv-by-kind`: instead of the shipped model, for each kind of change a model fitted
(`bench.judgement_fit`) on the pairs of every other kind in the data, judging the pairs of the
held-out kind: how the judgement does on a kind of change it never saw.

`--fit PATH` (may be given more than once): instead of the shipped model, one fitted on those
pairs alone, judging the `--data` pairs: how a model fitted on one hand's pairs does on
another's (fitted on the first judgement sets, judging the set in fourteen styles, and the
other way round).
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

DEFAULT_DATA = REPO / "bench" / "data" / "judgement_eval.jsonl"
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


EMBEDDER_RATE: dict[str, float] = {}  # statements per second (wall, CPU) of the last call


def similarities(items: list[dict[str, Any]]) -> list[float]:
    import numpy as np
    from django.conf import settings

    from indexing.embedders import get_embedder

    embedder = get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR)
    embedder.embed(["warm up"], purpose="passage")
    progress(f"embedding {2 * len(items)} statements with {embedder.name}")
    wall, cpu = time.perf_counter(), time.process_time()
    va = np.asarray(embedder.embed([i["a"] for i in items], purpose="passage"))
    vb = np.asarray(embedder.embed([i["b"] for i in items], purpose="passage"))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    EMBEDDER_RATE.update(wall=2 * len(items) / max(wall, 1e-9), cpu=2 * len(items) / max(cpu, 1e-9))
    return [float(x) for x in (va * vb).sum(axis=1)]


def _figures(counts: dict[str, int]) -> dict[str, Any]:
    return {
        "conflict": _pr(counts["contradict_tp"], counts["contradict_fp"], counts["contradict_fn"]),
        "duplicate": _pr(counts["duplicate_tp"], counts["duplicate_fp"], counts["duplicate_fn"]),
        "pairs": counts["pairs"],
    }


def _models_by_kind(items: list[dict[str, Any]], sims: list[float], threshold: float) -> Any:
    """For each kind, a model fitted on the pairs of every other kind."""
    from bench.judgement_fit import cue_matrix, fit

    x = cue_matrix(items, sims, threshold)
    kinds = sorted({i.get("kind", "") for i in items})
    if len(kinds) < 2:
        raise SystemExit("--cv-by-kind needs pairs of at least two kinds (a 'kind' field)")
    models = {}
    for kind in kinds:
        rows = [n for n, i in enumerate(items) if i.get("kind", "") != kind]
        models[kind] = fit(x[rows], [items[n]["label"] for n in rows])
        progress(f"fitted without {kind!r} on {len(rows)} pairs")
    return models


def run(
    items: list[dict[str, Any]], threshold: float, show_errors: bool = False,
    cv_by_kind: bool = False, cache: Path | None = None, rules: bool = False,
    fit_on: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:  # fmt: skip
    from bench.judgement_fit import cosines
    from facts.contradiction import pair_judge
    from facts.contradiction_rules import rules_judge

    sims = cosines(items, cache) if cache is not None else similarities(items)
    models = _models_by_kind(items, sims, threshold) if cv_by_kind else {}
    fitted = None
    if fit_on:
        from bench.judgement_fit import cue_matrix, fit

        x = cue_matrix(fit_on, cosines(fit_on, cache) if cache else similarities(fit_on), threshold)
        fitted = fit(x, [i["label"] for i in fit_on])
        progress(f"fitted on {len(fit_on)} pairs")
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    by_kind: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    pair_judge("The model and jieba load once.", "加载一次。", similarity=0.5)
    started, cpu = time.perf_counter(), time.process_time()
    for item, sim in zip(items, sims, strict=True):
        if rules:
            verdict = rules_judge(item["a"], item["b"], similarity=sim,
                                  duplicate_threshold=threshold)  # fmt: skip
        else:
            verdict = pair_judge(item["a"], item["b"], similarity=sim,
                                 duplicate_threshold=threshold,
                                 judge=models.get(item.get("kind", ""), fitted))  # fmt: skip
        for c in (counts[item["lang"]], by_kind[item["lang"], item.get("kind", "")]):
            c["pairs"] += 1
            for label in ("contradict", "duplicate"):
                said, truth = verdict.label == label, item["label"] == label
                c[f"{label}_tp"] += said and truth
                c[f"{label}_fp"] += said and not truth
                c[f"{label}_fn"] += truth and not said
            c["right"] += verdict.label == item["label"]
        if show_errors and verdict.label != item["label"]:
            print(
                f"[{item['lang']}] {item['label']} judged {verdict.label} ({verdict.reason}, "
                f"cos {sim:.3f}): {item['a']} | {item['b']}",
                file=sys.stderr,
            )
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    result: dict[str, Any] = {}
    for lang in sorted(counts):
        result[lang] = _figures(counts[lang])
        kinds = {k: c for (lg, k), c in by_kind.items() if lg == lang and k}
        if kinds:
            result[lang]["kinds"] = {
                k: {**_figures(c), "accuracy": round(c["right"] / c["pairs"], 4)}
                for k, c in sorted(kinds.items())
            }
    result["judge_ms_per_pair"] = round(1000 * elapsed / max(len(items), 1), 3)
    result["judge_cpu_ms_per_pair"] = round(1000 * cpu / max(len(items), 1), 3)
    result["embedder_statements_per_s"] = {k: round(v, 1) for k, v in EMBEDDER_RATE.items()}
    result["duplicate_threshold"] = threshold
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, action="append", help="JSON Lines, see above")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--threshold", type=float, default=0.95, help="duplicate threshold (a tenant's default)"
    )
    parser.add_argument("--show-errors", action="store_true", help="print every wrong judgement")
    parser.add_argument(
        "--cv-by-kind", action="store_true",
        help="judge each kind of change by a model fitted on the other kinds only",
    )  # fmt: skip
    parser.add_argument(
        "--fit", type=Path, action="append",
        help="judge by a model fitted on these pairs alone, not the shipped one",
    )  # fmt: skip
    parser.add_argument(
        "--cache", type=Path,
        help="keep the cosines in this JSON file between runs (no embedder rate then)",
    )  # fmt: skip
    parser.add_argument(
        "--rules", action="store_true",
        help="judge by the earlier rules alone (facts.contradiction_rules), for comparison",
    )  # fmt: skip
    args = parser.parse_args()
    paths = args.data or [DEFAULT_DATA]
    if args.fit and args.cv_by_kind:
        parser.error("--fit and --cv-by-kind are two ways of fitting: give one")
    for path in paths + (args.fit or []):
        if not path.is_file():
            parser.error(f"--data {path}: no such file")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key-0123456789abcdefghij")
    os.environ.setdefault("MNEMOSYNE_MODEL_DIR", str(REPO / ".mnemosyne" / "models"))
    import django

    django.setup()
    items = [item for path in paths for item in load(path)]
    figures = run(items, args.threshold, show_errors=args.show_errors,
                  cv_by_kind=args.cv_by_kind, cache=args.cache, rules=args.rules,
                  fit_on=[item for path in args.fit or [] for item in load(path)])  # fmt: skip
    names = " + ".join(path.name for path in paths)
    how = ", each kind judged by a model fitted without it" if args.cv_by_kind else ""
    how += ", by the earlier rules alone" if args.rules else ""
    if args.fit:
        how += ", by a model fitted on " + " + ".join(path.name for path in args.fit)
    print(f"Conflict and duplicate detection on {names} (threshold {args.threshold}{how})")
    for lang in ("zh", "en"):
        if lang not in figures:
            continue
        f = figures[lang]
        print(
            f"  {lang}  {f['pairs']} pairs: conflicts precision {f['conflict']['precision']:.3f} "
            f"recall {f['conflict']['recall']:.3f};  duplicates precision "
            f"{f['duplicate']['precision']:.3f} recall {f['duplicate']['recall']:.3f}"
        )
        for kind, k in f.get("kinds", {}).items():
            print(
                f"      {kind:<14} {k['pairs']:>4} pairs  right {k['accuracy']:.2f}  conflicts "
                f"P {k['conflict']['precision']:.2f} R {k['conflict']['recall']:.2f}  "
                f"duplicates P {k['duplicate']['precision']:.2f} R {k['duplicate']['recall']:.2f}"
            )
    rate = figures["embedder_statements_per_s"]
    embedder = (
        f"the embedder {rate['wall']} statements/s ({rate['cpu']} per CPU second)"
        if rate
        else "cosines from --cache, the embedder not timed"
    )
    print(
        f"  judgement {figures['judge_ms_per_pair']} ms per pair "
        f"({figures['judge_cpu_ms_per_pair']} ms CPU), without the embedding; {embedder}"
    )
    # The file holds {"zh": {"conflict": {"precision", "recall"}, "duplicate": {...}, "kinds":
    # {kind: {...}}}, "en": {...}}.
    keys = ("conflict", "duplicate", "kinds")
    write_json(args.json, {
        lang: {k: figures[lang][k] for k in keys if k in figures[lang]}
        for lang in ("zh", "en") if lang in figures
    })  # fmt: skip


if __name__ == "__main__":
    main()
