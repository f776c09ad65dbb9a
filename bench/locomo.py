"""Recall on LoCoMo: every dialogue turn one memory, every question with evidence asked.

    python -m bench.locomo --data PATH [--k 1,5,10,25] [--channels fts,vec,entity]
                           [--weights fts=0.3,vec=0.5,entity=0.2] [--half-life DAYS] [--json OUT]

For each conversation: a fresh tenant; each turn stored as "<speaker>: <text>" (plus
" [image: <caption>]"), dated by its session, scoped to the conversation, embedded; then
recall@k = the share of a question's evidence turns found in the top k, averaged over questions.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.harness import bench_database, progress, write_json

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


def run(
    data: Path,
    ks: list[int],
    channels: list[str] | None,
    half_life: float | None,
    weights: dict[str, float] | None = None,
) -> dict[str, Any]:
    from facts.embedding import facts_embed_batch
    from facts.services import fact_add
    from retrieval.search import recall_search
    from tenants.actors import Actor
    from tenants.services import tenant_create, tenant_update_settings

    actor = Actor.job("bench.locomo")
    conversations = json.loads(data.read_text())
    found: dict[int, list[float]] = defaultdict(list)
    by_category: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    ingest_s = query_s = 0.0
    questions = 0
    for index, sample in enumerate(conversations):
        name = sample.get("sample_id", f"conv-{index}")
        tenant = tenant_create(slug=f"locomo-{index}", name=name, actor=actor)
        if weights:
            tenant = tenant_update_settings(tenant=tenant, changes=weights, actor=actor)
        turns = turns_of(sample["conversation"])
        started = time.perf_counter()
        ids: dict[int, str] = {}
        last_date = max(t["created_at"] for t in turns)
        for turn in turns:
            fact = fact_add(
                tenant=tenant,
                content=turn["text"],
                kind="turn",
                scope=f"conversation:{name}",
                session_id=turn["session"],
                position=turn["position"],
                speaker=turn["speaker"],
                created_at=turn["created_at"],
                actor=actor,
            ).fact
            ids[fact.pk] = turn["dia_id"]
        while facts_embed_batch(tenant=tenant, limit=64):
            pass
        ingest_s += time.perf_counter() - started
        progress(f"{name}: {len(turns)} turns stored and embedded; asking its questions")
        started = time.perf_counter()
        for qa in sample["qa"]:
            evidence = set(qa.get("evidence") or [])
            if not evidence:
                continue
            questions += 1
            hits = recall_search(
                tenant=tenant,
                query=qa["question"],
                k=max(ks),
                channels=channels,
                half_life_days=half_life,
                now=last_date,
            ).hits
            ranked = [ids[h.fact.pk] for h in hits]
            category = CATEGORIES.get(qa.get("category"), str(qa.get("category")))
            for k in ks:
                share = len(evidence & set(ranked[:k])) / len(evidence)
                found[k].append(share)
                by_category[category][k].append(share)
        query_s += time.perf_counter() - started
    mean = lambda values: round(sum(values) / len(values), 4) if values else 0.0  # noqa: E731
    return {
        "recall": {str(k): mean(found[k]) for k in ks},
        "by_category": {
            category: {str(k): mean(values[k]) for k in ks}
            for category, values in sorted(by_category.items())
        },
        "questions": questions,
        "conversations": len(conversations),
        "channels": channels,
        "half_life_days": half_life or 0,
        "weights": weights or "default",
        "ingest_s": round(ingest_s, 1),
        "query_ms_mean": round(1000 * query_s / max(questions, 1), 1),
    }


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
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    try:
        weights = parse_weights(args.weights)
    except ValueError as error:
        parser.error(f"--weights: {error}")
    ks = [int(k) for k in args.k.split(",")]
    channels = [c.strip() for c in args.channels.split(",") if c.strip()] if args.channels else None
    with bench_database():
        figures = run(args.data, ks, channels, half_life=args.half_life, weights=weights)
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
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
