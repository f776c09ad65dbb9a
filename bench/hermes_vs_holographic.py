"""Mnemosyne's Hermes provider against Hermes' bundled holographic provider, side by side.

    python -m bench.hermes_vs_holographic --data PATH [--conversations N] [--questions N]
                                          [--json OUT]

PATH is LoCoMo (the retrieval benchmark's protocol: every dialogue turn one memory, every
question with evidence asked; recall@k = the share of a question's evidence turns in the top k)
or CMRC 2018 (Chinese: every passage one memory, every question asked; its own passage must come
back). Both providers get the same memories through their own tool interface, `fact_store add`,
and answer with `fact_store search`; `prefetch` (what Hermes calls before every turn) is timed
with each question, and so is every `fact_store add`. The holographic provider runs in its best
configuration (numpy installed: full text + Jaccard + HRR vectors), each conversation in a fresh
SQLite store. Mnemosyne's provider talks over HTTP to Mnemosyne's web processes as `mnemosyne up`
starts them (gunicorn, 2 workers) on a fresh database (bench.harness), each conversation in a
fresh tenant, storing turns as `kind: turn` of their session (an extra argument holographic does
not have) after `on_session_switch`. The vectors of what it stored are made by this process
(the embedding task's own code, as a worker runs it) before the questions are asked.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness import bench_database, progress, web_server, write_json

LOCOMO_KS = (1, 5, 10, 25)
CMRC_KS = (1, 5)
NAMES = ("mnemosyne", "holographic")


def dataset_kind(data: Path) -> str:
    raw = json.loads(data.read_text())
    if isinstance(raw, dict) and "data" in raw:
        return "cmrc"
    first = raw[0] if isinstance(raw, list) and raw else {}
    if "conversation" in first and "qa" in first:
        return "locomo"
    if "context_text" in first:
        return "cmrc"
    raise SystemExit(f"--data {data}: neither LoCoMo nor CMRC 2018 format")


class Pair:
    """One Mnemosyne provider and one holographic provider with empty memories."""

    def __init__(self, label: str, workdir: Path, url: str) -> None:
        from plugins.memory.holographic import HolographicMemoryProvider

        from hermes_provider.provider import MnemosyneProvider
        from tenants.actors import Actor
        from tenants.inputs import tenant_draft
        from tenants.services import apikey_create, tenant_create

        actor = Actor.job("bench.hermes_vs_holographic")
        slug = "".join(c if c.isalnum() else "-" for c in label.lower()).strip("-")[:60]
        self.tenant = tenant_create(actor=actor, draft=tenant_draft({"slug": slug, "name": label}))
        token = apikey_create(tenant=self.tenant, name="bench", actor=actor).token
        home = workdir / slug
        home.mkdir(parents=True)
        self.mnemosyne = MnemosyneProvider(
            config={"url": url, "api_key": token, "flush_seconds": 300, "prefetch_timeout": 30}
        )
        self.mnemosyne.initialize(label, hermes_home=str(home), platform="cli")
        self.holographic = HolographicMemoryProvider(config={"db_path": str(home / "holo.db")})
        self.holographic.initialize(label, hermes_home=str(home), platform="cli")
        self.add_ms: dict[str, list[float]] = {n: [] for n in NAMES}

    def providers(self) -> dict[str, Any]:
        return {"mnemosyne": self.mnemosyne, "holographic": self.holographic}

    def add(self, name: str, content: str, **extra: Any) -> int:
        provider = self.providers()[name]
        args = {"action": "add", "content": content, **(extra if name == "mnemosyne" else {})}
        started = time.perf_counter()
        answer = json.loads(provider.handle_tool_call("fact_store", args))
        self.add_ms[name].append((time.perf_counter() - started) * 1000)
        if "fact_id" not in answer or answer["fact_id"] is None:
            raise RuntimeError(f"{name} did not store a memory: {answer}")
        return int(answer["fact_id"])

    def search(self, name: str, query: str, limit: int) -> list[int]:
        answer = json.loads(
            self.providers()[name].handle_tool_call(
                "fact_store", {"action": "search", "query": query, "limit": limit}
            )
        )
        if "error" in answer:
            raise RuntimeError(f"{name} search failed: {answer['error']}")
        return [row["fact_id"] for row in answer["results"]]

    def prefetch_ms(self, name: str, query: str) -> float:
        started = time.perf_counter()
        self.providers()[name].prefetch(query)
        return (time.perf_counter() - started) * 1000

    def warm_up(self, question: str) -> None:
        """Unmeasured prefetches first: each web process loads the model on its first."""
        for _ in range(6):
            self.mnemosyne.prefetch(question)

    def settle(self) -> None:
        """Make the vectors of what was stored, as the server's worker would."""
        from facts.embedding import facts_embed_batch

        if not self.mnemosyne.wait_idle(1800):
            raise RuntimeError("the provider's writer did not finish")
        while facts_embed_batch(tenant=self.tenant):
            pass

    def close(self) -> None:
        self.mnemosyne.shutdown()
        self.holographic.shutdown()


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 2), "p95": round(p95, 2)}


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def run_locomo(
    data: Path, workdir: Path, url: str, conversations: int | None, limit: int | None
) -> dict[str, Any]:
    from bench.locomo import turns_of

    conversations = json.loads(data.read_text())[:conversations]
    found: dict[str, dict[int, list[float]]] = {n: defaultdict(list) for n in NAMES}
    latency: dict[str, list[float]] = {n: [] for n in NAMES}
    adds: dict[str, list[float]] = {n: [] for n in NAMES}
    ingest_s: dict[str, float] = dict.fromkeys(NAMES, 0.0)
    questions = 0
    for index, sample in enumerate(conversations):
        label = sample.get("sample_id", f"conv-{index}")
        pair = Pair(f"locomo {label}", workdir, url)
        turns = turns_of(sample["conversation"])
        ids: dict[str, dict[int, str]] = {n: {} for n in NAMES}
        for name in NAMES:
            started = time.perf_counter()
            session = None
            for turn in turns:
                if name == "mnemosyne" and turn["session"] != session:
                    session = turn["session"]
                    pair.mnemosyne.on_session_switch(f"{label}/{session}", reset=False)
                fact_id = pair.add(name, turn["text"], kind="turn")
                ids[name][fact_id] = turn["dia_id"]
            if name == "mnemosyne":
                pair.settle()
            ingest_s[name] += time.perf_counter() - started
        # Questions come in a new session: no hot restore of the last one stored.
        pair.mnemosyne.on_session_switch(f"{label}/questions", reset=True)
        progress(f"{label}: {len(turns)} turns stored by both; asking its questions")
        pair.warm_up("warming up")
        asked = [qa for qa in sample["qa"] if qa.get("evidence")][:limit]
        for qa in asked:
            evidence = set(qa["evidence"])
            questions += 1
            for name in NAMES:
                latency[name].append(pair.prefetch_ms(name, qa["question"]))
                ranked = [ids[name].get(i) for i in pair.search(name, qa["question"], 25)]
                for k in LOCOMO_KS:
                    found[name][k].append(len(evidence & set(ranked[:k])) / len(evidence))
        progress(
            f"{label}: R@10 so far mnemosyne {_mean(found['mnemosyne'][10]):.3f}, "
            f"holographic {_mean(found['holographic'][10]):.3f} ({questions} questions)"
        )
        for name in NAMES:
            adds[name] += pair.add_ms[name]
        pair.close()
    return {
        name: {
            "recall": {str(k): _mean(found[name][k]) for k in LOCOMO_KS},
            "prefetch_ms": _percentiles(latency[name]),
            "add_ms": _percentiles(adds[name]),
            "ingest_s": round(ingest_s[name], 1),
        }
        for name in NAMES
    } | {"questions": questions, "conversations": len(conversations), "dataset": "locomo"}


def run_cmrc(
    data: Path, workdir: Path, url: str, conversations: int | None, limit: int | None
) -> dict[str, Any]:
    from bench.cmrc import fit_content, load_passages

    passages = load_passages(data)
    pair = Pair("cmrc2018", workdir, url)
    asked: dict[str, list[tuple[str, int]]] = {n: [] for n in NAMES}
    ingest_s: dict[str, float] = {}
    for name in NAMES:
        started = time.perf_counter()
        fact_of: dict[str, int] = {}
        for text, questions in passages:
            content = fit_content(text)
            if content not in fact_of:
                fact_of[content] = pair.add(name, content)
            asked[name].extend((q, fact_of[content]) for q in questions if q.strip())
        if name == "mnemosyne":
            pair.settle()
        ingest_s[name] = time.perf_counter() - started
        progress(f"{name}: {len(fact_of)} passages stored in {ingest_s[name]:.0f} s")
    pair.warm_up("预热")
    found: dict[str, dict[int, int]] = {n: defaultdict(int) for n in NAMES}
    latency: dict[str, list[float]] = {n: [] for n in NAMES}
    total = min(len(asked["mnemosyne"]), limit or len(asked["mnemosyne"]))
    for number in range(total):
        for name in NAMES:
            question, expected = asked[name][number]
            latency[name].append(pair.prefetch_ms(name, question))
            ranked = pair.search(name, question, max(CMRC_KS))
            for k in CMRC_KS:
                found[name][k] += expected in ranked[:k]
        if (number + 1) % 500 == 0:
            progress(
                f"  {number + 1}/{total} asked; R@1 so far mnemosyne "
                f"{found['mnemosyne'][1] / (number + 1):.3f}, holographic "
                f"{found['holographic'][1] / (number + 1):.3f}"
            )
    pair.close()  # its add times stay readable
    share: Callable[[int], float] = lambda hits: round(hits / total, 4) if total else 0.0  # noqa: E731
    return {
        name: {
            "recall": {str(k): share(found[name][k]) for k in CMRC_KS},
            "prefetch_ms": _percentiles(latency[name]),
            "add_ms": _percentiles(pair.add_ms[name]),
            "ingest_s": round(ingest_s[name], 1),
        }
        for name in NAMES
    } | {
        "questions": total,
        "passages": len({fact_id for _, fact_id in asked["mnemosyne"]}),
        "dataset": "cmrc",
    }


def report(figures: dict[str, Any]) -> None:
    ours, theirs = figures["mnemosyne"], figures["holographic"]
    what = "LoCoMo" if figures["dataset"] == "locomo" else "CMRC 2018"
    print(f"{what}: {figures['questions']} questions, both providers through fact_store")
    heading = "".join(f"{'R@' + k:>9}" for k in ours["recall"])
    print(f"  {'':<13}{heading}   prefetch p50 / p95   fact_store add p50 / p95")
    for name, row in (("mnemosyne", ours), ("holographic", theirs)):
        cells = "".join(f"{v:>9.3f}" for v in row["recall"].values())
        latency, add = row["prefetch_ms"], row["add_ms"]
        print(f"  {name:<13}{cells}   {latency['p50']:.1f} / {latency['p95']:.1f} ms"
              f"{add['p50']:>13.1f} / {add['p95']:.1f} ms")  # fmt: skip
    ratios = []
    for k, value in ours["recall"].items():
        other = theirs["recall"][k]
        ratios.append(f"{value / other:>9.2f}" if other else f"{'∞' if value else '-':>9}")
    p95 = theirs["prefetch_ms"]["p95"]
    latency_ratio = f"{ours['prefetch_ms']['p95'] / p95:.2f}× p95" if p95 else "-"
    print(f"  {'ratio':<13}" + "".join(ratios) + f"   {latency_ratio}")
    print(f"  ingest: mnemosyne {ours['ingest_s']} s (stored over HTTP, then embedded), "
          f"holographic {theirs['ingest_s']} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo or CMRC 2018 JSON")
    parser.add_argument("--conversations", type=int, help="LoCoMo: only the first N")
    parser.add_argument("--questions", type=int, help="at most N questions (per conversation)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    kind = dataset_kind(args.data)
    # The holographic store warns on every add past ~400 facts that its HRR bank is near
    # capacity; the figures show what that costs, the warnings would bury the progress lines.
    logging.getLogger("plugins.memory.holographic").setLevel(logging.ERROR)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    with (
        bench_database(),
        web_server() as url,
        tempfile.TemporaryDirectory(prefix="hermes-bench-") as workdir,
    ):
        run = run_locomo if kind == "locomo" else run_cmrc
        figures = run(args.data, Path(workdir), url, args.conversations, args.questions)
    report(figures)
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
