"""Chinese recall on CMRC 2018: every passage one memory, every question asked.

    python -m bench.cmrc --data PATH [--channels fts,vec,entity] [--compare]
                         [--vector-cache FILE] [--json OUT]

One tenant; each distinct passage stored once as a fact (kind "fact") and embedded; each
question asked with recall_search(k=5). R@1 / R@5 = the share of questions whose own passage
comes back first / within the top 5. With --compare, every question is also asked with each
channel alone, to see which one carries (or drags) the fused result.

Reads the published format (a list of {context_id, context_text, qas: [{query_id, query_text}]})
and SQuAD's ({data: [{paragraphs: [{context, qas: [{id, question}]}]}]}) alike.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.harness import bench_database, progress, vector_cache, write_json

KS = (1, 5)
MAX_CONTENT_BYTES = 16 * 1024


def load_passages(data: Path) -> list[tuple[str, list[str]]]:
    """(passage text, its questions) pairs, in file order."""
    raw = json.loads(data.read_text())
    passages: list[tuple[str, list[str]]] = []
    if isinstance(raw, dict):  # SQuAD
        for article in raw.get("data", []):
            for paragraph in article.get("paragraphs", []):
                questions = [qa["question"] for qa in paragraph.get("qas", [])]
                passages.append((paragraph["context"], questions))
    else:
        for item in raw:
            questions = [qa["query_text"] for qa in item.get("qas", [])]
            passages.append((item["context_text"], questions))
    return passages


def fit_content(text: str) -> str:
    """The passage cut to what one fact may hold (16 KiB of UTF-8), on a character boundary."""
    data = text.strip().encode()
    if len(data) <= MAX_CONTENT_BYTES:
        return text.strip()
    return data[:MAX_CONTENT_BYTES].decode(errors="ignore").strip()


def over_token_limit(embedder: Any, texts: list[str]) -> int | None:
    """How many texts the embedder cuts at its token limit (None if it cannot tell)."""
    tokenizer = getattr(embedder, "tokenizer", None)
    if tokenizer is None or not hasattr(tokenizer, "count"):
        return None
    keep = tokenizer.max_tokens - 2  # the two special tokens
    return sum(tokenizer.count("passage: " + text) > keep for text in texts)


def run(data: Path, channels: list[str] | None, compare: bool) -> dict[str, Any]:
    from django.conf import settings

    from facts.embedding import facts_embed_batch
    from facts.inputs import fact_draft
    from facts.services import fact_add
    from indexing.embedders import get_embedder
    from retrieval.inputs import recall_query
    from retrieval.search import recall_search
    from tenants.actors import Actor
    from tenants.inputs import tenant_draft
    from tenants.services import tenant_create

    actor = Actor.job("bench.cmrc")
    passages = load_passages(data)
    tenant = tenant_create(
        actor=actor, draft=tenant_draft({"slug": "cmrc2018", "name": "CMRC 2018 dev"})
    )

    started = time.perf_counter()
    # Several questions may share a passage: store each distinct text once, map questions to it.
    fact_of: dict[str, int] = {}
    asked: list[tuple[str, int]] = []
    truncated = 0
    for text, questions in passages:
        content = fit_content(text)
        truncated += content != text.strip()
        if content not in fact_of:
            fact_of[content] = fact_add(
                tenant=tenant, actor=actor, draft=fact_draft({"content": content, "kind": "fact"})
            ).fact.pk
        asked.extend((q, fact_of[content]) for q in questions if q.strip())
    distinct_facts = len(set(fact_of.values()))
    progress(f"{distinct_facts} passages stored; embedding them")
    embedded = 0
    while done := facts_embed_batch(tenant=tenant):
        embedded += done
        if embedded % 256 < 32:
            progress(f"  {embedded}/{distinct_facts} embedded")
    ingest_s = time.perf_counter() - started
    embedder = get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR)
    long_passages = over_token_limit(embedder, list(fact_of))
    progress(f"{embedded} passages embedded in {ingest_s:.1f} s; asking {len(asked)} questions")

    label = ",".join(channels) if channels else "default"
    runs: dict[str, list[str] | None] = {label: channels}
    if compare:
        runs.update({c: [c] for c in (channels or ["fts", "vec", "entity"]) if [c] != channels})
    found: dict[str, dict[int, int]] = {name: defaultdict(int) for name in runs}
    query_s = 0.0
    for number, (question, expected) in enumerate(asked, 1):
        for name, chosen in runs.items():
            before = time.perf_counter()
            hits = recall_search(
                tenant=tenant,
                query=recall_query({"query": question, "k": max(KS), "channels": chosen}),
            ).hits
            if name == label:
                query_s += time.perf_counter() - before
            ranked = [hit.fact.pk for hit in hits]
            for k in KS:
                found[name][k] += expected in ranked[:k]
        if number % 500 == 0:
            main = found[label]
            progress(f"  {number}/{len(asked)} asked; R@1 so far {main[1] / number:.3f}")
    questions = len(asked)
    share = lambda hits: round(hits / questions, 4) if questions else 0.0  # noqa: E731
    figures: dict[str, Any] = {
        "recall": {str(k): share(found[label][k]) for k in KS},
        "questions": questions,
        "passages": distinct_facts,
        "passages_truncated_to_16k": truncated,
        "passages_over_512_tokens": long_passages,
        "channels": label,
        "ingest_s": round(ingest_s, 1),
        "query_ms_mean": round(1000 * query_s / max(questions, 1), 1),
    }
    if compare:
        # Each channel alone (the fused run is "recall" above).
        figures["by_channels"] = {
            name: {str(k): share(found[name][k]) for k in KS} for name in runs if name != label
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="cmrc2018_dev.json (or SQuAD)")
    parser.add_argument(
        "--channels", help="comma-separated subset of fts,vec,entity (default: the product's)"
    )
    parser.add_argument(
        "--compare", action="store_true", help="also ask every question with each channel alone"
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
    channels = [c.strip() for c in args.channels.split(",") if c.strip()] if args.channels else None
    with bench_database(), vector_cache(args.vector_cache):
        figures = run(args.data, channels, compare=args.compare)
    print(f"CMRC 2018 recall ({figures['questions']} questions, {figures['passages']} passages, "
          f"channels {figures['channels']})")  # fmt: skip
    print("  overall      " + "  ".join(f"R@{k} {v:.3f}" for k, v in figures["recall"].items()))
    for name, recall in figures.get("by_channels", {}).items():
        print(f"  {name + ' alone':<12} " + "  ".join(f"R@{k} {v:.3f}" for k, v in recall.items()))
    if figures["passages_over_512_tokens"] is not None:
        print(f"  {figures['passages_over_512_tokens']} passages over 512 tokens (embedded "
              "truncated; full text sees all)")  # fmt: skip
    print(f"  ingest {figures['ingest_s']} s, {figures['query_ms_mean']} ms per question")
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
