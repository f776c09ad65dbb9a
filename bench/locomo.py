"""Recall on LoCoMo: every dialogue turn one memory, every question with evidence asked.

    python -m bench.locomo --data PATH [--k 1,5,10,25] [--channels fts,vec,entity]
                           [--weights fts=0.3,vec=0.5,entity=0.2] [--half-life DAYS]
                           [--folds K] [--vector-cache FILE] [--json OUT]

For each conversation: a fresh tenant; each turn stored as "<speaker>: <text>" (plus
" [image: <caption>]"), dated by its session, scoped to the conversation, embedded; then
recall@k = the share of a question's evidence turns found in the top k, averaged over questions.

With --folds K the conversations are split into K folds (K = the number of conversations is
leave-one-conversation-out). For each fold, the tunable constants of fusion (the full-text
weight against the vector weight, the neighbour, session and speaker lifts) are chosen on the
other folds' questions from the grid below, by the mean of R@5 and R@10, and the fold is reported
with the constants chosen without it. The cross-validated figure pools every fold's held-out
questions; the product's defaults are reported beside it on the same questions.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import bench_database, progress, vector_cache, write_json

# The grid --folds chooses from (the product's defaults are on it).
GRID = {
    "fts": (0.2, 0.3, 0.4, 0.5, 0.6),
    "neighbour": (0.15, 0.3, 0.45, 0.6, 0.75),
    "session": (0.0, 0.1, 0.2, 0.3),
    "speaker": (0.0, 0.05, 0.1, 0.15, 0.2),
}
VEC_WEIGHT = 0.5
# The product's defaults as a grid point (tenant weights fts 0.3 / vec 0.5; retrieval.search).
DEFAULT_POINT = (0.3, 0.45, 0.2, 0.15)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def parse_session_date(text: str) -> datetime:
    # "1:56 pm on 8 May, 2023"
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns_of(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    turns = []
    numbers = sorted(
        int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key))
    )
    for number in numbers:
        when = parse_session_date(conversation[f"session_{number}_date_time"])
        for position, turn in enumerate(conversation[f"session_{number}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            turns.append(
                {
                    "dia_id": turn["dia_id"],
                    "text": text,
                    "speaker": turn["speaker"],
                    "session": f"session_{number}",
                    "position": position,
                    "created_at": when,
                }
            )
    return turns


def parse_weights(text: str | None) -> dict[str, float]:
    """ "fts=0.3,vec=0.5" -> {"weight_fts": 0.3, "weight_vec": 0.5} (tenant settings)."""
    weights: dict[str, float] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        channel, _, value = part.partition("=")
        if channel.strip() not in ("fts", "vec", "entity"):
            raise ValueError(f"unknown channel {channel.strip()!r} (fts, vec, entity)")
        weights[f"weight_{channel.strip()}"] = float(value)
    return weights


def _recall(evidence: set[str], ranked: list[str], ks: list[int]) -> dict[int, float]:
    return {k: len(evidence & set(ranked[:k])) / len(evidence) for k in ks}


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _summary(rows: list[dict[str, Any]], ks: list[int], key: str) -> dict[str, Any]:
    """Overall and per-category recall of `rows` (one per question), reading row[key]."""
    by_category: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        for k in ks:
            by_category[row["category"]][k].append(row[key][k])
    return {
        "recall": {str(k): _mean([row[key][k] for row in rows]) for k in ks},
        "by_category": {
            category: {str(k): _mean(values[k]) for k in ks}
            for category, values in sorted(by_category.items())
        },
    }


class _Ranker:
    """recall_rank over one question's candidates, for many grid points at once: the same
    fusion and lifts (turns, no decay) in numpy. The product's own ranking of the default grid
    point is checked against it (see _cross_validate)."""

    def __init__(self, gathered: Any, ids: dict[int, str]) -> None:
        candidates = gathered.candidates
        self.fids = np.array(sorted(candidates), dtype=np.int64)
        index = {fid: i for i, fid in enumerate(self.fids.tolist())}
        normalised = gathered.normalised
        self.fts = np.array([normalised.get("fts", {}).get(f, 0.0) for f in self.fids.tolist()])
        self.vec = np.array([normalised.get("vec", {}).get(f, 0.0) for f in self.fids.tolist()])
        facts = [candidates[f] for f in self.fids.tolist()]
        self.trust = np.array([f.trust_score for f in facts])
        place = {(f.session_id, f.position): index[f.id] for f in facts}
        self.before = np.array(
            [place.get((f.session_id, (f.position or 0) - 1), -1) for f in facts]
        )
        self.after = np.array([place.get((f.session_id, (f.position or 0) + 1), -1) for f in facts])
        sessions = sorted({f.session_id for f in facts})
        self.session = np.array([sessions.index(f.session_id) for f in facts])
        self.sessions = len(sessions)
        # Sessions whose text matches as a whole (retrieval.channels._session_match), when full
        # text ran.
        matched = gathered.sessions
        self.matched = (
            None if matched is None else np.array([matched.get(f.session_id, 0.0) for f in facts])
        )
        query = gathered.query.casefold()
        self.speaker = np.array(
            [1.0 if f.speaker and f.speaker.casefold() in query else 0.0 for f in facts]
        )
        self.labels = [ids[f] for f in self.fids.tolist()]

    def parts(self, fts_weight: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        fused = fts_weight * self.fts + VEC_WEIGHT * self.vec
        padded = np.append(fused, 0.0)  # index -1: no neighbour
        neighbour = np.maximum(padded[self.before], padded[self.after])
        tops = np.zeros(self.sessions)
        for s in range(self.sessions):
            values = np.sort(fused[self.session == s])[-3:]
            tops[s] = values.sum() / 3
        low, high = tops.min(), tops.max()
        scaled = (tops - low) / (high - low) if high - low >= 1e-12 else np.ones_like(tops)
        if self.matched is not None:
            return fused, neighbour, scaled[self.session] * self.matched
        return fused, neighbour, scaled[self.session]

    def ranked(
        self,
        parts: tuple[np.ndarray, ...],
        neighbour: float,
        session: float,
        speaker: float,
        k: int,
    ) -> list[str]:
        fused, near, sessions = parts
        score = (
            fused + neighbour * near + session * sessions + speaker * self.speaker
        ) * self.trust
        order = np.lexsort((-self.fids, -score))[:k]  # score, then id, both descending
        return [self.labels[i] for i in order]


def _cross_validate(
    rows: list[dict[str, Any]], ks: list[int], folds: int, conversations: int, check: bool
) -> dict[str, Any]:
    """Each fold ranked with the grid point chosen on the other folds (see the docstring)."""
    points = list(itertools.product(*GRID.values()))
    cut = sorted({5, 10} & set(ks)) or ks
    progress(f"cross-validation: {len(points)} grid points x {len(rows)} questions")
    # per point, per question: recall at each k (computed once, summed per training set)
    table: list[list[dict[int, float]]] = [[] for _ in points]
    for row in rows:
        ranker = _Ranker(row["gathered"], row["ids"])
        parts = {w: ranker.parts(w) for w in GRID["fts"]}
        for p, (fts, neighbour, session, speaker) in enumerate(points):
            ranked = ranker.ranked(parts[fts], neighbour, session, speaker, max(ks))
            table[p].append(_recall(row["evidence"], ranked, ks))
    default = points.index(DEFAULT_POINT) if DEFAULT_POINT in points else None
    if check and default is not None:
        drift = max(
            abs(table[default][i][k] - rows[i]["default"][k]) for i in range(len(rows)) for k in ks
        )
        if drift > 1e-9:
            progress(f"warning: the grid's ranking differs from recall_rank's (by {drift:.3f})")
    fold_of = [row["conversation"] * folds // conversations for row in rows]
    reports = []
    for fold in range(folds):
        train = [i for i, f in enumerate(fold_of) if f != fold]
        test = [i for i, f in enumerate(fold_of) if f == fold]
        best = max(
            range(len(points)),
            key=lambda p: (sum(table[p][i][k] for i in train for k in cut), -p),
        )
        for i in test:
            rows[i]["cv"] = table[best][i]
        reports.append(
            {
                "fold": fold,
                "conversations": sorted({rows[i]["name"] for i in test}),
                "questions": len(test),
                "chosen": dict(zip(GRID, points[best], strict=True)),
                "held_out": {str(k): _mean([table[best][i][k] for i in test]) for k in ks},
                "defaults": {str(k): _mean([rows[i]["default"][k] for i in test]) for k in ks},
            }
        )
    everywhere = max(
        range(len(points)),
        key=lambda p: (sum(table[p][i][k] for i in range(len(rows)) for k in cut), -p),
    )
    return {
        "folds": reports,
        **_summary(rows, ks, "cv"),
        "tuned_on_all": {
            "chosen": dict(zip(GRID, points[everywhere], strict=True)),
            "recall": {
                str(k): _mean([table[everywhere][i][k] for i in range(len(rows))]) for k in ks
            },
        },
    }


def store_turns(
    *, tenant: Any, actor: Any, name: str, turns: list[dict[str, Any]]
) -> dict[int, str]:
    """Store a conversation's turns (turns_of) in `tenant`, embed them and analyse the table;
    returns each fact's id -> the turn's dia_id."""
    from django.db import connection

    from facts.embedding import facts_embed_batch
    from facts.inputs import fact_draft
    from facts.services import fact_add
    from operations.roles import as_owner

    ids: dict[int, str] = {}
    for turn in turns:
        fact = fact_add(
            tenant=tenant,
            actor=actor,
            draft=fact_draft(
                {
                    "content": turn["text"],
                    "kind": "turn",
                    "scope": f"conversation:{name}",
                    "session_id": turn["session"],
                    "position": turn["position"],
                    "speaker": turn["speaker"],
                    "created_at": turn["created_at"],
                }
            ),
        ).fact
        ids[fact.pk] = turn["dia_id"]
    while facts_embed_batch(tenant=tenant):
        pass
    # What autovacuum does soon after a load: the planner sees the new turns (without it,
    # a fresh table's plans read a whole conversation where an index reads a session).
    with as_owner(), connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")
    return ids


def run(
    data: Path,
    ks: list[int],
    channels: list[str] | None,
    half_life: float | None,
    weights: dict[str, float] | None = None,
    folds: int = 0,
) -> dict[str, Any]:
    from retrieval.inputs import recall_query
    from retrieval.search import recall_gather, recall_rank
    from tenants.actors import Actor
    from tenants.inputs import settings_changes, tenant_draft
    from tenants.services import tenant_create, tenant_update_settings

    actor = Actor.job("bench.locomo")
    conversations = json.loads(data.read_text())
    rows: list[dict[str, Any]] = []
    ingest_s = query_s = 0.0
    for index, sample in enumerate(conversations):
        name = sample.get("sample_id", f"conv-{index}")
        tenant = tenant_create(
            actor=actor, draft=tenant_draft({"slug": f"locomo-{index}", "name": name})
        )
        if weights:
            tenant = tenant_update_settings(
                tenant=tenant, changes=settings_changes(weights), actor=actor
            )
        # The channels recall_search asks by default: those the tenant weighs above 0.
        asked = channels or [c for c in ("fts", "vec", "entity") if tenant.setting(f"weight_{c}")]
        fusion = {
            c: float(tenant.setting(f"weight_{c}")) or (1.0 if channels else 0.0) for c in asked
        }
        turns = turns_of(sample["conversation"])
        started = time.perf_counter()
        last_date = max(t["created_at"] for t in turns)
        ids = store_turns(tenant=tenant, actor=actor, name=name, turns=turns)
        ingest_s += time.perf_counter() - started
        progress(f"{name}: {len(turns)} turns stored and embedded; asking its questions")
        started = time.perf_counter()
        for qa in sample["qa"]:
            evidence = set(qa.get("evidence") or [])
            if not evidence:
                continue
            gathered = recall_gather(
                tenant=tenant, query=recall_query({"query": qa["question"], "channels": asked})
            )
            scored = recall_rank(gathered, weights=fusion, half_life_days=half_life, now=last_date)
            ranked = [ids[fid] for _, fid, _ in scored[: max(ks)]]
            rows.append(
                {
                    "conversation": index,
                    "name": name,
                    "category": CATEGORIES.get(qa.get("category"), str(qa.get("category"))),
                    "evidence": evidence,
                    "default": _recall(evidence, ranked, ks),
                    "gathered": gathered if folds else None,
                    "ids": ids,
                    "now": last_date,
                }
            )
        query_s += time.perf_counter() - started
    figures = {
        **_summary(rows, ks, "default"),
        "questions": len(rows),
        "conversations": len(conversations),
        "channels": channels,
        "half_life_days": half_life or 0,
        "weights": weights or "default",
        "ingest_s": round(ingest_s, 1),
        "query_ms_mean": round(1000 * query_s / max(len(rows), 1), 1),
    }
    if folds:
        check = not weights and channels is None and half_life is None
        figures["cross_validated"] = _cross_validate(rows, ks, folds, len(conversations), check)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo-format JSON file")
    parser.add_argument("--k", default="1,5,10,25", help="comma-separated cut-offs")
    parser.add_argument(
        "--channels", help="comma-separated subset of fts,vec,entity (default: the product's)"
    )
    parser.add_argument(
        "--half-life",
        type=float,
        help="temporal decay half-life in days (default: the product's, which is off)",
    )
    parser.add_argument(
        "--weights", help="fusion weights for the tenants, e.g. fts=0.3,vec=0.5,entity=0.2"
    )
    parser.add_argument(
        "--folds",
        type=int,
        default=0,
        help="cross-validate the fusion constants over K folds of conversations (see above)",
    )
    parser.add_argument(
        "--vector-cache",
        type=Path,
        help="keep the embedder's vectors in this file and reuse them on the next run",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    try:
        weights = parse_weights(args.weights)
    except ValueError as error:
        parser.error(f"--weights: {error}")
    ks = [int(k) for k in args.k.split(",")]
    conversations = len(json.loads(args.data.read_text()))
    if args.folds and not 2 <= args.folds <= conversations:
        parser.error(f"--folds {args.folds}: needs 2 to {conversations} (the conversations)")
    channels = [c.strip() for c in args.channels.split(",") if c.strip()] if args.channels else None
    with bench_database(), vector_cache(args.vector_cache):
        figures = run(
            args.data, ks, channels, half_life=args.half_life, weights=weights, folds=args.folds
        )
    shown = ",".join(channels) if channels else "default"
    half_life = figures["half_life_days"] or "off"
    print(
        f"LoCoMo recall ({figures['questions']} questions, channels {shown}, half-life "
        f"{half_life}, weights {args.weights or 'default'})"
    )
    print("  overall      " + "  ".join(f"R@{k} {v:.3f}" for k, v in figures["recall"].items()))
    for category, recall in figures["by_category"].items():
        print(f"  {category:<12} " + "  ".join(f"R@{k} {v:.3f}" for k, v in recall.items()))
    print(f"  ingest {figures['ingest_s']} s, {figures['query_ms_mean']} ms per question")
    if "cross_validated" in figures:
        cv = figures["cross_validated"]
        print(f"Cross-validated over {len(cv['folds'])} folds (each fold tuned on the others)")
        print("  overall      " + "  ".join(f"R@{k} {v:.3f}" for k, v in cv["recall"].items()))
        for category, recall in cv["by_category"].items():
            print(f"  {category:<12} " + "  ".join(f"R@{k} {v:.3f}" for k, v in recall.items()))
        for fold in cv["folds"]:
            held = "  ".join(f"R@{k} {v:.3f}" for k, v in fold["held_out"].items())
            default = "  ".join(f"R@{k} {v:.3f}" for k, v in fold["defaults"].items())
            print(f"  fold {fold['fold']} {','.join(fold['conversations'])}: {held}")
            print(f"    (defaults {default}; chosen {fold['chosen']})")
        chosen = cv["tuned_on_all"]
        shown = "  ".join(f"R@{k} {v:.3f}" for k, v in chosen["recall"].items())
        print(f"  tuned on all (not held out): {shown} with {chosen['chosen']}")
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
