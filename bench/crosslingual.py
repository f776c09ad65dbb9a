"""Cross-lingual recall: memories in one language, questions in the other.

    python -m bench.crosslingual [--data PATH] [--json OUT]

The data is a JSON Lines file of {"en": ..., "zh": ...} pairs that say the same thing (by default
the 203 everyday memories in bench/data/crosslingual_pairs.jsonl). One tenant holds memories in
both languages, as a bilingual team's does: the Chinese text of every even-numbered pair and the
English text of every odd-numbered one. Each memory is then asked for in the other language
(en→zh for the even pairs, zh→en for the odd), so the question competes with memories in its
own language about other things: a model that matches languages rather than meanings loses.
R@1 / R@5 = the share of questions whose own memory comes back first / within the top 5, with
the product's default channels and with the vector channel alone (the two texts of a pair share
no word, so full text can only help where they share a name or a number).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.harness import REPO, bench_database, progress, write_json

KS = (1, 5)
DEFAULT_DATA = REPO / "bench" / "data" / "crosslingual_pairs.jsonl"
DIRECTIONS = (("en", "zh"), ("zh", "en"))


def load_pairs(data: Path) -> list[dict[str, str]]:
    pairs = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    for number, pair in enumerate(pairs, 1):
        if not (isinstance(pair.get("en"), str) and isinstance(pair.get("zh"), str)):
            raise SystemExit(f"{data}:{number}: each line needs an 'en' and a 'zh' text")
    return pairs


def run(pairs: list[dict[str, str]]) -> dict[str, Any]:
    from facts.embedding import facts_embed_batch
    from facts.inputs import fact_draft
    from facts.services import fact_add
    from indexing.vectors import configured_embedder
    from retrieval.inputs import recall_query
    from retrieval.search import recall_search
    from tenants.actors import Actor
    from tenants.inputs import tenant_draft
    from tenants.services import tenant_create

    actor = Actor.job("bench.crosslingual")
    tenant = tenant_create(
        actor=actor, draft=tenant_draft({"slug": "bilingual", "name": "Bilingual team"})
    )
    # (question, the id of the memory it asks for, direction)
    asked: list[tuple[str, int, str]] = []
    for number, pair in enumerate(pairs):
        stored_in, asked_in = ("zh", "en") if number % 2 == 0 else ("en", "zh")
        fact = fact_add(
            tenant=tenant, actor=actor, draft=fact_draft({"content": pair[stored_in]})
        ).fact
        asked.append((pair[asked_in], fact.pk, f"{asked_in}->{stored_in}"))
    while facts_embed_batch(tenant=tenant):
        pass
    progress(f"{len(pairs)} memories stored in both languages and embedded; asking")
    figures: dict[str, Any] = {"pairs": len(pairs), "model": configured_embedder().name}
    for label, channels in (("default", None), ("vec", ["vec"])):
        for asked_in, stored_in in DIRECTIONS:
            direction = f"{asked_in}->{stored_in}"
            questions = [(q, expected) for q, expected, d in asked if d == direction]
            found = dict.fromkeys(KS, 0)
            for question, expected in questions:
                hits = recall_search(
                    tenant=tenant,
                    query=recall_query({"query": question, "k": max(KS), "channels": channels}),
                ).hits
                ranked = [hit.fact.pk for hit in hits]
                for k in KS:
                    found[k] += expected in ranked[:k]
            figures.setdefault(direction, {})[label] = {
                str(k): round(found[k] / len(questions), 4) for k in KS
            }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="JSON Lines of en/zh pairs")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    pairs = load_pairs(args.data)
    with bench_database():
        figures = run(pairs)
    print(f"Cross-lingual recall ({figures['pairs']} pairs, model {figures['model']})")
    for asked_in, stored_in in DIRECTIONS:
        direction = f"{asked_in}->{stored_in}"
        for label, recall in figures[direction].items():
            shown = "  ".join(f"R@{k} {v:.3f}" for k, v in recall.items())
            print(f"  {direction} {label:<8} {shown}")
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
