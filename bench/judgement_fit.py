"""Fit the judgement's model (`facts/judgement_model.json`) on labelled pairs of statements.

    python -m bench.judgement_fit [--data PATH]... [--out PATH] [--cache PATH]

Each pair's cues (`facts.judgement.pair_cues`) with the cosine of the two texts' e5 vectors
(as stored facts are embedded), then a multinomial logistic regression (numpy, L2, classes
weighed by their share) over the standardised cues. `--cache` keeps the cosines in a JSON file
between runs. `--data` may be given more than once (default: bench/data/judgement_tune.jsonl and
bench/data/judgement_styles.jsonl, the tuning sets). Only the tuning sets are fitted on;
`python -m bench.conflicts` reports on the rest, and `--cv-by-kind` there refits with a whole
kind of change held out at a time.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import REPO, progress

DEFAULT_DATA = [
    REPO / "bench" / "data" / "judgement_tune.jsonl",
    REPO / "bench" / "data" / "judgement_styles.jsonl",
]
L2 = 0.005  # the penalty on the weights, per pair
STEPS = 3000
RATE = 0.5


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key-0123456789abcdefghij")
    os.environ.setdefault("MNEMOSYNE_MODEL_DIR", str(REPO / ".mnemosyne" / "models"))
    import django

    django.setup()


def cosines(items: list[dict[str, Any]], cache: Path | None = None) -> list[float]:
    """The cosine of each pair's two texts by the configured embedder (e5 by default)."""
    known: dict[str, float] = {}
    if cache is not None and cache.is_file():
        known = json.loads(cache.read_text(encoding="utf-8"))
    keys = [f"{i['a']}\t{i['b']}" for i in items]
    todo = [i for i, k in zip(items, keys, strict=True) if k not in known]
    if todo:
        from bench.conflicts import similarities

        for item, sim in zip(todo, similarities(todo), strict=True):
            known[f"{item['a']}\t{item['b']}"] = sim
        if cache is not None:
            cache.write_text(json.dumps(known, ensure_ascii=False), encoding="utf-8")
    return [known[k] for k in keys]


def cue_matrix(items: list[dict[str, Any]], sims: list[float], threshold: float) -> np.ndarray:
    from facts.judgement import pair_cues

    return np.vstack([
        pair_cues(i["a"], i["b"], s, threshold).vector for i, s in zip(items, sims, strict=True)
    ])  # fmt: skip


def _stage(x: np.ndarray, labels: list[str], names: tuple[str, ...], order: tuple[str, str]) -> Any:
    """A logistic regression on the columns `names` of `x`, for two labels (`order[0]` first)."""
    from facts.judgement import CUES, Stage

    columns = [CUES.index(c) for c in names]
    x = x[:, columns]
    y = np.array([0 if label == order[0] else 1 for label in labels])
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    z = (x - mean) / scale
    n, k = z.shape
    onehot = np.eye(2)[y]
    # Each label weighs as much as the other, whatever its share of the pairs.
    sample = (n / (2 * np.maximum(onehot.sum(axis=0), 1)))[y] / n
    w, b = np.zeros((2, k)), np.zeros(2)
    for _ in range(STEPS):
        logits = z @ w.T + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - onehot) * sample[:, None]
        w -= RATE * (g.T @ z + L2 * w)
        b -= RATE * g.sum(axis=0)
    return Stage(labels=order, cues=names, mean=mean, scale=scale, weights=w, bias=b)


def fit(x: np.ndarray, labels: list[str]) -> Any:
    """A `facts.judgement.Model` fitted on cues `x` (rows of `CUES`) and their labels: the
    first stage on every pair (contradict or not), the second on those that do not
    contradict (duplicate or compatible)."""
    from facts.judgement import CUES, DISAGREE_CUES, DUPLICATE_MIN, Model

    binary = ["contradict" if label == "contradict" else "other" for label in labels]
    disagree = _stage(x, binary, DISAGREE_CUES, ("contradict", "other"))
    rest = [i for i, label in enumerate(labels) if label != "contradict"]
    same = _stage(x[rest], [labels[i] for i in rest], CUES, ("duplicate", "compatible"))
    return Model(disagree=disagree, same=same, duplicate_min=DUPLICATE_MIN)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, action="append", help="JSON Lines of labelled pairs")
    parser.add_argument("--out", type=Path, default=REPO / "facts" / "judgement_model.json")
    parser.add_argument("--cache", type=Path, help="keep the cosines in this JSON file")
    parser.add_argument("--threshold", type=float, default=0.95, help="duplicate threshold")
    args = parser.parse_args()
    setup_django()
    from bench.conflicts import load

    items = [item for path in args.data or DEFAULT_DATA for item in load(path)]
    sims = cosines(items, args.cache)
    progress(f"cues of {len(items)} pairs")
    fitted = fit(cue_matrix(items, sims, args.threshold), [i["label"] for i in items])
    args.out.write_text(json.dumps(fitted.to_json(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(items)} pairs)")
    for stage in (fitted.disagree, fitted.same):
        top = sorted(zip(stage.cues, stage.weights[0], strict=True), key=lambda t: -abs(t[1]))
        print(f"  {stage.labels[0]}: " + ", ".join(f"{c} {v:+.2f}" for c, v in top[:8]))


if __name__ == "__main__":
    main()
