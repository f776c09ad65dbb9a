"""A million facts over a hundred tenants: recall and context latency by tenant size, the web
admin's pages in the largest tenant, the load rate, disk per fact and memory.

    python -m bench.scale [--facts 1000000] [--tenants 100] [--queries 100] [--runs 10]
                          [--pool 3000] [--seed 7] [--json OUT]

Tenants: ten large ones holding 200, 130, 100, 80, 70, 60, 55, 50, 50 and 50 thousandths of
`--facts` (200,000 down to 50,000 of a million), placed among the others; the rest of the facts
spread evenly over the small ones (about 1,700 each at a million). `--facts 100000` makes the
same shape a tenth the size, for a quick run.

Data and load: bench.latency's (sentences from templates and word lists in English and Chinese,
real embeddings of a pool of distinct sentences, each fact's vector a mix of two of them; full
text through the product's analysis; entity links; binary COPY into a staging table, then INSERT
... SELECT inside each tenant's scope; the HNSW index rebuilt after the load, then VACUUM
ANALYZE). That is the bulk path: it ends in the state the write path leaves (search vectors,
vectors, entity links, statistics) without embedding each fact, so the load rate printed is the
database's, not the embedder's (`bench.ingest` measures the write path with embedding).

Measured, after the load:
- the context an agent's prefetch gets on a cache miss (`context_build`: recall with k=20 and the
  whole context block, without the query embedding) in the largest tenant and in a small one,
  `--queries` questions each after 20 warm-up ones;
- every web admin page in the largest tenant, `--runs` requests each through Django's test
  client (bench.admin_pages' pages and extra data: an audit event per fact of that tenant,
  feedback, people, keys, latencies, a policy);
- disk per fact: the fact table, its indexes, the vectors and their indexes (HNSW included), the
  entity links, divided by the facts stored;
- memory: this process's peak resident size (it does what a web process does: recall, context,
  pages) and the peak of the PostgreSQL backend that served it, with the server's shared_buffers.
"""

from __future__ import annotations

import argparse
import random
import resource
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.harness import bench_database, progress, write_json

# Thousandths of --facts held by each large tenant (200,000 ... 50,000 of a million).
LARGE_SHARES = (200, 130, 100, 80, 70, 60, 55, 50, 50, 50)
GOAL_CONTEXT_P95_MS = 50.0
GOAL_PAGE_P95_MS = 300.0


def tenant_sizes(facts: int, tenants: int) -> tuple[list[int], int, int]:
    """The facts of each tenant, in load order; the index of the largest and of a small one."""
    large = [facts * share // 1000 for share in LARGE_SHARES]
    small_count = tenants - len(large)
    rest = facts - sum(large)
    small = [rest // small_count + (1 if n < rest % small_count else 0) for n in range(small_count)]
    # The large ones spread among the small ones, so that no tenant's rows are simply first.
    sizes: list[int] = []
    every = max(1, small_count // len(large))
    placed = 0
    for n, size in enumerate(small):
        if n % every == every // 2 and placed < len(large):
            sizes.append(large[placed])
            placed += 1
        sizes.append(size)
    sizes.extend(large[placed:])
    largest = sizes.index(max(large))
    # A small tenant next to the largest one (its rows are loaded right after the largest's).
    small_one = largest + 1 if largest + 1 < len(sizes) else largest - 1
    return sizes, largest, small_one


def disk_figures(facts: int) -> dict[str, Any]:
    """Bytes per fact of each part of the store."""
    from django.db import connection

    parts = {
        "facts table": "pg_table_size('facts_fact')",
        "facts indexes": "pg_indexes_size('facts_fact')",
        "vectors table": "pg_table_size('facts_factvector')",
        "vectors indexes (HNSW included)": "pg_indexes_size('facts_factvector')",
        "entity links (table and indexes)": "pg_total_relation_size('facts_factentity')",
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts.values()))
        sizes = dict(zip(parts, cursor.fetchone(), strict=True))
    total = sum(sizes.values())
    return {
        "bytes_per_fact": {name: round(size / facts) for name, size in sizes.items()},
        "total_bytes_per_fact": round(total / facts),
        "total_mb": round(total / 2**20),
    }


def _proc_kib(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def memory_figures() -> dict[str, Any]:
    """Peak resident memory of this process and of the database backend that served it."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid(), current_setting('shared_buffers')")
        backend, shared_buffers = cursor.fetchone()
    peak = _proc_kib(int(backend), "VmHWM")  # readable when the server runs on this machine
    return {
        "bench_process_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "database_backend_peak_mb": round(peak / 1024) if peak is not None else None,
        "database_shared_buffers": shared_buffers,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    from bench import admin_pages
    from bench.latency import build_pool, load_tenants, measure, questions
    from operations.roles import as_owner

    now = datetime.now(UTC)
    sizes, largest, small_one = tenant_sizes(args.facts, args.tenants)
    progress(
        f"{sum(sizes)} facts over {len(sizes)} tenants: the largest {sizes[largest]}, "
        f"the small one measured {sizes[small_one]}"
    )
    pool = build_pool(random.Random(args.seed), args.pool)  # noqa: S311
    large = set(sorted(range(len(sizes)), key=lambda n: -sizes[n])[: len(LARGE_SHARES)])
    with as_owner():  # the load builds an index and analyzes tables: the owner's to do
        tenants, load_figures = load_tenants(
            sizes, pool, now, seed=args.seed, large=large, slug="scale"
        )
        progress("adding audit events, feedback, people, keys, latencies and a policy")
        extra = admin_pages._enrich(tenants[largest], now)
    asked = questions(random.Random(args.seed + 1), args.queries + 20)  # noqa: S311
    context: dict[str, Any] = {}
    for label, index in (("large", largest), ("small", small_one)):
        progress(f"context latency in the {label} tenant ({sizes[index]} facts)")
        figures = measure(tenants[index], asked[:20], asked[20:], breakdown=False)
        context[label] = {
            "facts": sizes[index],
            "p50": figures["p50_ms"],
            "p95": figures["p95_ms"],
            "p99": figures["p99_ms"],
            "recall_p95": figures["recall_p95_ms"],
            "embed_query_p50": figures["embed_query_p50_ms"],
            "hnsw_used": figures["hnsw_used"],
        }
    progress(f"web admin pages in the largest tenant, {args.runs} requests each")
    pages = admin_pages.measure(
        tenants[largest], extra["admin"], extra["fact"], args.runs, args.seed
    )
    return {
        "facts": sum(sizes),
        "tenants": len(sizes),
        "largest_tenant_facts": sizes[largest],
        "context_ms": context,
        "admin_p95_ms": {name: page["p95_ms"] for name, page in pages.items()},
        "admin_p50_ms": {name: page["p50_ms"] for name, page in pages.items()},
        "load": load_figures,
        "disk": disk_figures(sum(sizes)),
        "memory": memory_figures(),
        "queries": args.queries,
        "runs": args.runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=1_000_000, help="facts in all")
    parser.add_argument("--tenants", type=int, default=100, help="tenants, ten of them large")
    parser.add_argument("--queries", type=int, default=100, help="questions per tenant measured")
    parser.add_argument("--runs", type=int, default=10, help="requests per page measured")
    parser.add_argument("--pool", type=int, default=3000, help="distinct sentences embedded")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.tenants < len(LARGE_SHARES) + 2:
        parser.error(f"--tenants must be at least {len(LARGE_SHARES) + 2}")
    if args.facts < 50_000:
        parser.error("--facts must be at least 50000 (the largest tenant needs 40 pages of facts)")
    if args.queries < 1 or args.runs < 1 or args.pool < 100:
        parser.error("--queries and --runs must be at least 1, --pool at least 100")
    started = time.perf_counter()
    with bench_database():
        figures = run(args)
    print(
        f"Scale: {figures['facts']} facts over {figures['tenants']} tenants "
        f"(largest {figures['largest_tenant_facts']}), measured in "
        f"{time.perf_counter() - started:.0f} s"
    )
    load = figures["load"]
    print(
        f"  bulk load {load['rows']} facts in {load['load_s']} s ({load['rows_per_s']} facts/s), "
        f"HNSW build {load['index_build_s']} s"
    )
    for label, context in figures["context_ms"].items():
        mark = "" if context["p95"] <= GOAL_CONTEXT_P95_MS else "   over the 50 ms goal"
        print(
            f"  context, {label} tenant ({context['facts']} facts): p50 {context['p50']} ms, "
            f"p95 {context['p95']} ms, p99 {context['p99']} ms (no query embedding){mark}"
        )
    print("  web admin pages in the largest tenant (p50 / p95):")
    for name, p95 in figures["admin_p95_ms"].items():
        mark = "" if p95 <= GOAL_PAGE_P95_MS else "   over the 300 ms goal"
        print(f"    {name:<24} {figures['admin_p50_ms'][name]:>7} / {p95:>7} ms{mark}")
    disk = figures["disk"]
    print(f"  disk: {disk['total_bytes_per_fact']} bytes per fact, {disk['total_mb']} MB in all")
    for name, size in disk["bytes_per_fact"].items():
        print(f"    {name:<34} {size:>6} bytes per fact")
    memory = figures["memory"]
    print(
        f"  memory: this process peaked at {memory['bench_process_peak_mb']} MB, the database "
        f"backend at {memory['database_backend_peak_mb']} MB "
        f"(shared_buffers {memory['database_shared_buffers']})"
    )
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
