"""Abstention: what the relevance floor lets into an agent's context (retrieval.floor).

    python -m bench.abstain --data PATH [--data PATH ...] [--smalltalk-tune FILE]
                            [--smalltalk-eval FILE] [--fit] [--vector-cache FILE] [--json OUT]

Each `--data` file (LoCoMo format) is split: its first half of conversations (rounded down) is
the tuning part, the rest the evaluation part. Each conversation's turns fill a tenant of their
own (bench.locomo.store_turns). In each part:

- own: every question with evidence is asked against its own conversation's tenant; recall@10
  of the memory items its context block takes (recall's hits above the floor, in recall's
  order, as retrieval.context takes them: the first 10), and of recall's first 10 without the
  floor (`floorless`);
- foreign: the same questions against the next conversation's tenant of the same part and file
  (the last against the first): the share of questions whose context holds any memory item;
- small talk: each turn of the part's small-talk file (bench/data/smalltalk_*.jsonl, English and
  Chinese) against every tenant of the part: the share of (turn, tenant) pairs whose context
  holds any memory item.

With --fit, first the tuning small talk is copied to retrieval/smalltalk.txt (the floor's
`smalltalk` signal compares queries with it); then the floor's logistic model is fitted on the
tuning part's hits (positives: the evidence turns among own questions' hits; negatives: every
hit of foreign questions and small talk; own hits that are not evidence are left out; the two
classes weigh the same in all, so a relevance of 0.5 is even odds between them), and FLOOR is
chosen on the same part: the highest (in steps of 0.01) that keeps own R@10 within one point of
floorless (the goal), hits of queries that name an entity no memory mentions left out as the
product leaves them out (retrieval.floor.is_weak). Both are written to
retrieval/floor_model.json, and the evaluation part is reported with them. Without --fit, the
shipped model and floor are reported. The JSON's top-level figures are the evaluation part's.

--dump FILE keeps every hit's features; --from-dump FILE fits and reports from such a file
without a database (the features are those of the run that wrote it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import REPO, bench_database, progress, vector_cache, write_json
from bench.locomo import store_turns, turns_of

CONTEXT_HITS = 20  # retrieval.context.RECALL_RESULTS
AT = 10
SMALLTALK = {
    "tune": REPO / "bench" / "data" / "smalltalk_tune.jsonl",
    "eval": REPO / "bench" / "data" / "smalltalk_eval.jsonl",
}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _ask(tenant: Any, text: str) -> tuple[list[dict[str, Any]], float]:
    """Recall's hits as the context block asks for them: (fact id, features) each, and ms."""
    from retrieval.inputs import recall_query
    from retrieval.search import recall_search

    started = time.perf_counter()
    result = recall_search(tenant=tenant, query=recall_query({"query": text, "k": CONTEXT_HITS}))
    ms = (time.perf_counter() - started) * 1000
    return [{"id": h.fact.pk, "features": h.signals} for h in result.hits], ms


def _admitted(hits: list[dict[str, Any]], model: dict[str, float], floor: float) -> list[int]:
    from retrieval.floor import is_weak, relevance

    return [
        h["id"] for h in hits if not is_weak(h["features"], relevance(h["features"], model), floor)
    ]


def _figures(part: dict[str, Any], model: dict[str, float], floor: float) -> dict[str, Any]:
    own, floorless = [], []
    for asked in part["own"]:
        evidence = asked["evidence"]
        ranked = [asked["ids"].get(i) for i in _admitted(asked["hits"], model, floor)][:AT]
        plain = [asked["ids"].get(h["id"]) for h in asked["hits"]][:AT]
        own.append(len(evidence & set(ranked)) / len(evidence))
        floorless.append(len(evidence & set(plain)) / len(evidence))
    foreign = [bool(_admitted(a["hits"], model, floor)) for a in part["foreign"]]
    small = [bool(_admitted(a["hits"], model, floor)) for a in part["smalltalk"]]
    by_lang = {
        lang: _share([bool(_admitted(a["hits"], model, floor)) for a in part["smalltalk"]
                      if a["lang"] == lang])
        for lang in sorted({a["lang"] for a in part["smalltalk"]})
    }  # fmt: skip
    return {
        "own_recall_at_10": _mean(own),
        "floorless_recall_at_10": _mean(floorless),
        "foreign_injection_rate": _share(foreign),
        "chitchat_injection_rate": _share(small),
        "chitchat_injection_rate_by_language": by_lang,
        "questions": len(own),
        "foreign_questions": len(foreign),
        "chitchat_asks": len(small),
        "conversations": part["conversations"],
    }


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _share(flags: list[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def _fit(part: dict[str, Any]) -> tuple[dict[str, float], float]:
    """Logistic regression (Newton's method, a little L2) on the tuning part's labelled hits,
    then the floor (see the module's doc)."""
    from retrieval.floor import FEATURES

    rows, labels = [], []
    for asked in part["own"]:
        for hit in asked["hits"]:
            if asked["ids"].get(hit["id"]) in asked["evidence"]:
                rows.append([hit["features"][f] for f in FEATURES])
                labels.append(1.0)
    for asked in part["foreign"] + part["smalltalk"]:
        for hit in asked["hits"]:
            rows.append([hit["features"][f] for f in FEATURES])
            labels.append(0.0)
    x = np.hstack([np.ones((len(rows), 1)), np.array(rows)])
    y = np.array(labels)
    # Each class weighs half of the whole.
    weight = np.where(y == 1, len(y) / (2 * y.sum()), len(y) / (2 * (len(y) - y.sum())))
    w = np.zeros(x.shape[1])
    ridge = 1e-2 * np.eye(x.shape[1])
    ridge[0, 0] = 0.0
    for _ in range(100):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -60, 60)))
        gradient = x.T @ (weight * (p - y)) + ridge @ w
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + ridge
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    model = {"bias": round(float(w[0]), 4)} | {
        f: round(float(v), 4) for f, v in zip(FEATURES, w[1:], strict=True)
    }
    progress(f"fitted on {int(y.sum())} positive and {int(len(y) - y.sum())} negative hits")
    floor = 0.01
    floorless = _figures(part, model, 0.0)["floorless_recall_at_10"]
    for step in range(1, 100):
        candidate = step / 100
        if _figures(part, model, candidate)["own_recall_at_10"] >= floorless - 0.01:
            floor = candidate
    return model, floor


def _collect(
    files: list[Path], smalltalk: dict[str, Path], timings: list[float]
) -> dict[str, dict[str, Any]]:
    from tenants.actors import Actor
    from tenants.inputs import tenant_draft
    from tenants.services import tenant_create

    actor = Actor.job("bench.abstain")
    parts: dict[str, dict[str, Any]] = {
        name: {"own": [], "foreign": [], "smalltalk": [], "conversations": []}
        for name in ("tune", "eval")
    }
    tenants: dict[str, list[Any]] = {"tune": [], "eval": []}
    number = 0
    for path in files:
        conversations = json.loads(path.read_text())
        half = len(conversations) // 2
        loaded: dict[str, list[tuple[Any, dict[int, str], dict[str, Any]]]] = {
            "tune": [],
            "eval": [],
        }
        for index, sample in enumerate(conversations):
            which = "tune" if index < half else "eval"
            name = sample.get("sample_id", f"conv-{index}")
            number += 1
            tenant = tenant_create(
                actor=actor, draft=tenant_draft({"slug": f"abstain-{number}", "name": name})
            )
            turns = turns_of(sample["conversation"])
            ids = store_turns(tenant=tenant, actor=actor, name=name, turns=turns)
            progress(f"{path.name} {name} ({which}): {len(turns)} turns stored and embedded")
            loaded[which].append((tenant, ids, sample))
            tenants[which].append(tenant)
            parts[which]["conversations"].append(f"{path.name}:{name}")
        for which, held in loaded.items():
            for position, (tenant, ids, sample) in enumerate(held):
                other = held[(position + 1) % len(held)][0] if len(held) > 1 else None
                for qa in sample["qa"]:
                    evidence = set(qa.get("evidence") or [])
                    if not evidence:
                        continue
                    hits, ms = _ask(tenant, qa["question"])
                    timings.append(ms)
                    parts[which]["own"].append({"evidence": evidence, "ids": ids, "hits": hits})
                    if other is not None:
                        hits, ms = _ask(other, qa["question"])
                        timings.append(ms)
                        parts[which]["foreign"].append({"hits": hits})
    for which, path in smalltalk.items():
        turns = _read_jsonl(path)
        progress(f"small talk ({which}): {len(turns)} turns x {len(tenants[which])} tenants")
        for tenant in tenants[which]:
            for turn in turns:
                hits, ms = _ask(tenant, turn["text"])
                timings.append(ms)
                parts[which]["smalltalk"].append({"lang": turn["lang"], "hits": hits})
    return parts


def _embedder_rate() -> float:
    """Texts per second of the configured embedder on short turns, in this process."""
    from indexing.vectors import configured_embedder

    embedder = configured_embedder()
    # Texts never embedded before (a vector cache would answer them at once).
    stamp = time.time_ns()
    texts = [f"Melanie: I went running by the lake on day {i} ({stamp})." for i in range(64)]
    embedder.embed(texts[:4])
    started = time.perf_counter()
    embedder.embed(texts)
    return round(len(texts) / (time.perf_counter() - started), 1)


def collect(files: list[Path], smalltalk: dict[str, Path], dump: Path | None) -> dict[str, Any]:
    """Every ask's hits with their features, the recall timings and the embedder's rate."""
    timings: list[float] = []
    parts = _collect(files, smalltalk, timings)
    ordered = sorted(timings)
    collected = {
        "parts": parts,
        "data": [path.name for path in files],
        "recall_ms_mean": round(statistics.fmean(timings), 1) if timings else 0.0,
        "recall_ms_p95": round(ordered[math.ceil(0.95 * len(ordered)) - 1], 1) if timings else 0.0,
        "embedder_texts_per_s": _embedder_rate(),
        "date": time.strftime("%Y-%m-%d"),
    }
    if dump is not None:
        dump.write_bytes(pickle.dumps(collected))
    return collected


def report(collected: dict[str, Any], fit: bool) -> dict[str, Any]:
    from retrieval.floor import FITTED, FLOOR, MODEL

    parts = collected["parts"]
    model, floor = _fit(parts["tune"]) if fit else (dict(MODEL), FLOOR)
    tuning = _figures(parts["tune"], model, floor)
    if fit:
        shipped = {"model": model, "floor": floor, "date": collected["date"],
                   "data": collected["data"], "tuning": tuning}  # fmt: skip
        FITTED.write_text(json.dumps(shipped, indent=1, ensure_ascii=False) + "\n", "utf-8")
        progress(f"model and floor written to {FITTED}")
    return {
        **_figures(parts["eval"], model, floor),
        "tuning": tuning,
        "model": model,
        "floor": floor,
        "fitted_now": fit,
        **{k: v for k, v in collected.items() if k != "parts"},
    }


def _copy_smalltalk(path: Path) -> None:
    # retrieval.floor.SMALLTALK (imported only once Django is set up)
    texts = [row["text"] for row in _read_jsonl(path)]
    target = REPO / "retrieval" / "smalltalk.txt"
    target.write_text("".join(f"{text}\n" for text in texts), "utf-8")
    progress(f"{len(texts)} small-talk turns copied to {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, action="append", help="a LoCoMo-format JSON file (repeatable)"
    )
    parser.add_argument("--smalltalk-tune", type=Path, default=SMALLTALK["tune"])
    parser.add_argument("--smalltalk-eval", type=Path, default=SMALLTALK["eval"])
    parser.add_argument("--fit", action="store_true", help="fit the floor on the tuning part")
    parser.add_argument(
        "--vector-cache",
        type=Path,
        help="keep the embedder's vectors in this file and reuse them on the next run",
    )
    parser.add_argument("--dump", type=Path, help="keep every hit's features in this file")
    parser.add_argument("--from-dump", type=Path, help="report (or fit) from a --dump file")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.from_dump is not None:
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
        os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key-0123456789abcdefghij")
        django.setup()
        collected = pickle.loads(args.from_dump.read_bytes())  # noqa: S301 - our own dump
    else:
        for path in [*(args.data or ()), args.smalltalk_tune, args.smalltalk_eval]:
            if not path.is_file():
                parser.error(f"{path}: no such file")
        if not args.data:
            parser.error("--data is required (or --from-dump)")
        if args.fit:
            _copy_smalltalk(args.smalltalk_tune)
        smalltalk = {"tune": args.smalltalk_tune, "eval": args.smalltalk_eval}
        with bench_database(), vector_cache(args.vector_cache):
            collected = collect(args.data, smalltalk, args.dump)
    figures = report(collected, args.fit)
    for name, part in (("evaluation", figures), ("tuning", figures["tuning"])):
        print(
            f"{name} part ({part['questions']} questions, {part['chitchat_asks']} small-talk "
            f"asks): own R@10 {part['own_recall_at_10']:.3f} (floorless "
            f"{part['floorless_recall_at_10']:.3f}), foreign {part['foreign_injection_rate']:.3f}, "
            f"small talk {part['chitchat_injection_rate']:.3f} "
            f"{part['chitchat_injection_rate_by_language']}"
        )
    print(f"model {figures['model']}, floor {figures['floor']}")
    print(
        f"recall {figures['recall_ms_mean']} ms mean, {figures['recall_ms_p95']} ms p95; "
        f"embedder {figures['embedder_texts_per_s']} texts/s"
    )
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
