"""Fit the entity types' model (`facts/entity_types_model.json`) on the tuning sentences.

    python -m bench.entity_types_fit [--data PATH ...] [--out PATH] [--folds 5]

Each tuning sentence goes through the product's extractor; every name it finds that the
sentence labels, and whose type the finder did not already settle (a title, a designator, the
dictionary), gives one example: its features (`facts.entity_types.mention_features`) and the
labelled type. Two multinomial logistic regressions (numpy, L2 on the weights, not on the
biases) are fitted: `own` on each name's own features, and `final` on the same with the
probabilities `own` gives the names listed beside it ("Lena, Matteo, Sofia"). The penalty is
chosen by cross-validation within the tuning data (folds of whole sentences); the evaluation
sets (`entities_styles_eval.jsonl`, `entities.jsonl`) are never read here.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import REPO

DATA = REPO / "bench" / "data"
DEFAULT_DATA = [
    DATA / "entities_styles_tune.jsonl",
    DATA / "entities_tune.jsonl",
    DATA / "entities_more_tune.jsonl",
]
PENALTIES = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
STEPS = 1500
RATE = 0.5


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key-0123456789abcdefghij")
    import django

    django.setup()


def examples(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One example per labelled name the model decides: {sentence, features, label,
    neighbours: [(sentence-local example index or None, sure base type or None)]}."""
    from facts import entity_types, extract
    from facts.entities import entity_normalize

    seen: list[tuple[str, list[entity_types.Mention], frozenset[str]]] = []
    original = extract.settle_types

    def recording(text: str, mentions: list[Any], *, surnames: frozenset[str]) -> list[str]:
        seen.append((text, mentions, surnames))
        return original(text, mentions, surnames=surnames)

    extract.settle_types = recording  # type: ignore[assignment]
    try:
        found: list[dict[str, Any]] = []
        recorded = 0
        for number, item in enumerate(items):
            seen.clear()
            extract.extract_entities(item["text"])
            recorded += len(seen)
            gold = {entity_normalize(e["name"]): e["type"] for e in item["entities"]}
            for text, mentions, surnames in seen:
                technical = entity_types.is_technical(text)
                rows: dict[int, dict[str, Any]] = {}
                for index, mention in enumerate(mentions):
                    if mention.sure:
                        continue
                    rows[index] = {
                        "sentence": number,
                        "lang": item["lang"],
                        "name": mention.name,
                        "label": gold.get(entity_normalize(mention.name)),
                        "features": entity_types.mention_features(
                            text, mention, surnames=surnames, technical=technical
                        ),
                        "neighbours": [],
                    }
                for index, row in rows.items():
                    for other in entity_types.list_neighbours(text, mentions, index):
                        sure = mentions[other].base if mentions[other].sure else None
                        row["neighbours"].append((rows.get(other), sure))
                found.extend(row for row in rows.values() if row["label"] is not None)
    finally:
        extract.settle_types = original  # type: ignore[assignment]
    if items and not recorded:
        # facts.extract no longer calls settle_types by that name: fitting on nothing would
        # ship a model of biases only.
        raise SystemExit("the extractor typed no name through facts.extract.settle_types")
    return found


class Design:
    """The feature names and the matrices of a set of examples."""

    def __init__(self, rows: list[dict[str, Any]], names: list[str] | None = None) -> None:
        from facts.entity_types import TYPES

        self.types = TYPES
        if names is None:
            # Every feature seen, and those of the prior that the tuning data never shows
            # (Johnson & Johnson's "&"): they keep the prior's weight, scaled.
            names = sorted({n for r in rows for n in r["features"]} | set(HAND))
        self.names = names
        self.column = {n: i for i, n in enumerate(names)}
        self.x = np.zeros((len(rows), len(names)))
        for i, row in enumerate(rows):
            for name, value in row["features"].items():
                if name in self.column:
                    self.x[i, self.column[name]] = value
        self.y = np.array([TYPES.index(r["label"]) for r in rows])
        self.listed = [c for n, c in self.column.items() if n.startswith("list:")]


# The hand-set weights the model had before it was fitted (docs/entities.md), the prior the fit
# starts from: feature -> {type: weight}. A cue group's feature carries the cue's strength as
# its value, so its weight for its own type is 1. The fit scales them all by one number and
# learns a correction to each, penalised (L2) so that it moves from them only where the tuning
# data insists; with a large penalty the model is the hand-set one, scaled.
HAND: dict[str, dict[str, float]] = {
    "en_base:person": {"person": 1.5}, "en_base:place": {"place": 1.5},
    "en_base:organization": {"organization": 1.5}, "en_base:product": {"product": 1.5},
    "en_the": {"person": -1.0}, "en_left:kin": {"person": 1.0}, "en_right_ed": {"person": 0.5},
    "en_version": {"product": 1.5}, "en_mixed_case": {"product": 2.0},
    "en_digit": {"product": 2.0}, "en_dot": {"product": 2.0}, "en_amp": {"organization": 3.0},
    "en_com": {"organization": 2.0}, "en_acronym": {"organization": 0.8},
    "en_given": {"person": 1.5}, "en_given_full": {"person": 2.5}, "en_place": {"place": 1.0},
    "en_place_given": {"place": 1.0}, "en_company": {"organization": 2.0},
    "en_family": {"person": 1.0}, "en_technical": {"product": 1.1},
    "en_org_word": {"organization": 2.0}, "en_product_word": {"product": 1.0},
    "en_place_comma": {"place": 1.0}, "en_quoted": {"other": 1.0},
    "en_event_word": {"other": 2.0}, "en_kin_title": {"person": 3.0},
    "zh_base:person": {"person": 1.5}, "zh_base:place": {"place": 1.5},
    "zh_base:organization": {"organization": 1.5}, "zh_base:product": {"product": 1.5},
    "zh_base_weak_person": {"person": 0.8}, "zh_title_after": {"person": 3.0},
    "zh_works_in": {"organization": 1.5}, "zh_familiar": {"person": 1.5},
    "zh_org_suffix": {"organization": 3.5}, "zh_place_suffix": {"place": 2.0},
    "zh_product_suffix": {"product": 3.0}, "zh_place": {"place": 1.0},
    "zh_surname": {"person": 1.6}, "zh_quoted": {"other": 1.0}, "zh_technical": {"product": 1.1},
    **{f"{group}:{kind}": {kind: 1.0} for group in ("en_left", "en_left2", "en_right", "zh_left",
       "zh_right", "list") for kind in ("person", "place", "organization", "product", "other")},
    "en_left:place?": {"place": 0.5}, "en_left2:place?": {"place": 0.5},
}  # fmt: skip


def hand_prior(names: list[str], types: tuple[str, ...]) -> np.ndarray:
    prior = np.zeros((len(names), len(types)))
    for i, name in enumerate(names):
        for kind, weight in HAND.get(name, {}).items():
            prior[i, types.index(kind)] = weight
    return prior


def fit(
    x: np.ndarray, y: np.ndarray, penalty: float, prior: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression by gradient descent: weights (features x types) of
    the form scale * prior + correction, the correction penalised; and the biases."""
    n, d = x.shape
    types = prior.shape[1]
    delta = np.zeros((d, types))
    b = np.zeros(types)
    scale = np.ones(1)
    onehot = np.eye(types)[y]
    x_prior = x @ prior
    params = (delta, b, scale)
    moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
    # Adam, which copes with features of unlike scales and frequencies.
    for step in range(1, STEPS + 1):
        scores = x @ delta + scale[0] * x_prior + b
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        error = (p - onehot) / n
        grads = (x.T @ error + penalty * delta, error.sum(axis=0),
                 np.array([(error * x_prior).sum()]))  # fmt: skip
        for g, (m, v), param in zip(grads, moments, params, strict=True):
            m *= 0.9
            m += 0.1 * g
            v *= 0.999
            v += 0.001 * g * g
            param -= 0.05 * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return scale[0] * prior + delta, b


def _probs(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    scores = x @ w + b
    scores -= scores.max(axis=1, keepdims=True)
    p = np.exp(scores)
    return p / p.sum(axis=1, keepdims=True)


def with_lists(rows: list[dict[str, Any]], design: Design, w: np.ndarray, b: np.ndarray) -> None:
    """Fill each row's list features from its neighbours' probabilities under the own model."""
    from facts.entity_types import TYPES, list_features

    for row in rows:
        row["features"] = {k: v for k, v in row["features"].items() if not k.startswith("list:")}
    own = {id(r): p for r, p in zip(rows, _probs(Design(rows, design.names).x, w, b), strict=True)}
    for row in rows:
        neighbour_probs = []
        for other, sure in row["neighbours"]:
            if sure is not None:
                neighbour_probs.append([1.0 if t == sure else 0.0 for t in TYPES])
            elif other is not None:
                if id(other) not in own:  # a neighbour without a label: score it alone
                    x = Design([other | {"label": TYPES[0]}], design.names).x
                    own[id(other)] = _probs(x, w, b)[0]
                neighbour_probs.append(list(own[id(other)]))
        row["features"] |= list_features(neighbour_probs)


def fit_both(rows: list[dict[str, Any]], penalty: float, names: list[str]) -> dict[str, Any]:
    design = Design(rows, names)
    x_own = design.x.copy()
    x_own[:, design.listed] = 0.0
    prior = hand_prior(names, design.types)
    w_own, b_own = fit(x_own, design.y, penalty, prior)
    with_lists(rows, design, w_own, b_own)
    design = Design(rows, names)
    w_final, b_final = fit(design.x, design.y, penalty, prior)
    return {"own": (w_own, b_own), "final": (w_final, b_final), "names": names}


def predict(rows: list[dict[str, Any]], fitted: dict[str, Any]) -> np.ndarray:
    names = fitted["names"]
    with_lists(rows, Design(rows, names), *fitted["own"])
    design = Design(rows, names)
    own = _probs(design.x * _mask(design), *fitted["own"])
    final = _probs(design.x, *fitted["final"])
    listed = np.array([bool(r["neighbours"]) for r in rows])
    return np.where(listed[:, None], final, own).argmax(axis=1)


def _mask(design: Design) -> np.ndarray:
    mask = np.ones(len(design.names))
    mask[design.listed] = 0.0
    return mask


def _sentence(row: dict[str, Any]) -> tuple[str, int, str]:
    return (row["lang"], row["sentence"], row.get("set", ""))


def cross_validate(rows: list[dict[str, Any]], folds: int, names: list[str]) -> dict[float, float]:
    sentences = sorted({_sentence(r) for r in rows})
    order = np.random.default_rng(38).permutation(len(sentences))
    fold_of = {sentences[int(j)]: i % folds for i, j in enumerate(order)}
    accuracy = {}
    for penalty in PENALTIES:
        right = 0
        for fold in range(folds):
            train = [dict(r) for r in rows if fold_of[_sentence(r)] != fold]
            test = [dict(r) for r in rows if fold_of[_sentence(r)] == fold]
            fitted = fit_both(train, penalty, names)
            predicted = predict(test, fitted)
            right += int((predicted == Design(test, names).y).sum())
        accuracy[penalty] = right / len(rows)
        print(f"  penalty {penalty:<7} cross-validated accuracy {accuracy[penalty]:.4f}")
    return accuracy


def _stage(w: np.ndarray, b: np.ndarray, names: list[str]) -> dict[str, Any]:
    return {
        "bias": [round(float(v), 4) for v in b],
        "weights": {n: [round(float(v), 4) for v in w[i]] for i, n in enumerate(names)
                    if np.abs(w[i]).max() >= 1e-4},
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=REPO / "facts" / "entity_types_model.json")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    setup_django()
    from bench.entities import load

    rows: list[dict[str, Any]] = []
    for path in args.data:
        if not path.is_file():
            continue
        if path.name in ("entities.jsonl", "entities_styles_eval.jsonl"):
            raise SystemExit(f"{path.name} is an evaluation set: it is never fitted on")
        found = examples(load(path))
        for row in found:
            row["set"] = path.name
        print(f"{path.name}: {len(found)} names the model decides")
        rows.extend(found)
    names = Design(rows).names
    print(f"{len(rows)} examples, {len(names)} features; {args.folds}-fold cross-validation")
    accuracy = cross_validate(rows, args.folds, names)
    best = max(PENALTIES, key=lambda p: (round(accuracy[p], 3), p))
    fitted = fit_both([dict(r) for r in rows], best, names)
    predicted = predict([dict(r) for r in rows], fitted)
    training = float((predicted == Design(rows, names).y).mean())
    print(f"penalty {best}: training accuracy {training:.4f}")
    from facts.entity_types import TYPES

    model = {
        "types": list(TYPES),
        "own": _stage(*fitted["own"], names),
        "final": _stage(*fitted["final"], names),
        "penalty": best,
        "date": datetime.datetime.now(tz=datetime.UTC).date().isoformat(),
        "data": [p.name for p in args.data if p.is_file()],
        "examples": len(rows),
        "cross_validated_accuracy": {str(p): round(a, 4) for p, a in accuracy.items()},
        "training_accuracy": round(training, 4),
    }
    args.out.write_text(json.dumps(model, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
