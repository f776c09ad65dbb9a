"""What the HNSW index's build options cost and what they give: the time to insert vectors and
the share of the exact nearest neighbours that the product's vector query finds.

    python -m bench.ann --data PATH [--vectors 50000] [--queries 200] [--options 16:64,16:32]
                        [--types vector,halfvec,bit] [--rerank 100]
                        [--small-share 0.1] [--ef-search 100] [--seed 7]
                        [--vector-cache FILE] [--json OUT]

`--data`: a LoCoMo-format file (its turns are the texts, its questions the queries) or a CMRC
2018 / SQuAD one (passages and questions). The texts are embedded with the configured embedder,
as passages; the questions as queries. The collection: `--vectors` vectors, each a mix of two
texts' vectors (a main one and half of a second one, normalised; `bench.latency` mixes its
facts' vectors alike, with a smaller second share),
in two tenants: a large one and a small one (`--small-share` of the vectors, a tenth by
default). For each of `--types` (what the index holds: `vector`, 4 bytes a dimension,
`halfvec`, 2, or `bit`, pgvector's `binary_quantize`: a bit a dimension, its sign, compared by
Hamming distance) and each `m:ef_construction` of `--options`, in a table shaped like the product's
vectors (a tenant column, a unique key that starts with it, the same cast expression index,
statistics), in the bench database:

- the index built over the collection (seconds);
- 2,000 more vectors inserted into the large tenant in statements of 256, as the workers write
  them (seconds: what PostgreSQL spends on the HNSW inserts while the workers embed);
- each question asked in each tenant with the product's query (`indexing.sql.vector_candidates`:
  the tenant inside the scan, `hnsw.ef_search` 100 or `--ef-search`, iterative scan in relaxed
  order, LIMIT 100 as `retrieval.channels.CANDIDATES`, or `--rerank` rows, sorted after it by
  the full vectors' distance): recall@10 / recall@100 = the share of the tenant's exact 10 /
  100 nearest vectors among its first 10 / 100 rows (exact: every vector compared, in NumPy);
  whether the planner scanned the HNSW
  index for that tenant (or read its rows and sorted them, which is exact); and the mean time
  of a question, from this process.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import bench_database, progress, vector_cache, write_json

SECOND_SHARE = 0.5
INSERTS = 2000
INSERT_BATCH = 256  # facts.embedding.EMBED_BATCH: a worker writes a batch's vectors at once
EF_SEARCH = 100  # indexing.sql.vector_candidates' default, unless --ef-search says otherwise
KS = (10, 100)  # the top of a context, and retrieval.channels.CANDIDATES


def load_texts(data: Path) -> tuple[list[str], list[str]]:
    """(texts, questions), each distinct, in file order: LoCoMo turns and QA questions, or CMRC /
    SQuAD passages and questions."""
    raw = json.loads(data.read_text(encoding="utf-8"))
    texts: list[str] = []
    questions: list[str] = []
    items = raw.get("data", []) if isinstance(raw, dict) else raw
    for item in items:
        if "conversation" in item:  # LoCoMo
            for key, turns in item["conversation"].items():
                if key.startswith("session_") and isinstance(turns, list):
                    texts += [f"{t['speaker']}: {t['text']}" for t in turns]
            questions += [str(qa["question"]) for qa in item.get("qa", []) if qa.get("question")]
        elif "context_text" in item:  # CMRC 2018
            texts.append(item["context_text"])
            questions += [qa["query_text"] for qa in item.get("qas", [])]
        else:  # SQuAD
            for paragraph in item.get("paragraphs", []):
                texts.append(paragraph["context"])
                questions += [qa["question"] for qa in paragraph.get("qas", [])]
    return list(dict.fromkeys(texts)), list(dict.fromkeys(questions))


def mixes(rng: np.random.Generator, sources: np.ndarray, count: int) -> np.ndarray:
    """`count` normalised vectors, each one source plus half of another."""
    main = rng.integers(0, len(sources), count)
    second = rng.integers(0, len(sources), count)
    mixed = sources[main] + SECOND_SHARE * sources[second]
    return (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)


def recall(found: list[int], exact: np.ndarray) -> float:
    """The share of the exact neighbours found."""
    return len(set(found) & set(exact.tolist())) / len(exact)


def _load(cursor: Any, dimension: int, tenants: np.ndarray, vectors: np.ndarray) -> None:
    from indexing.sql import vector_literal

    cursor.execute("DROP TABLE IF EXISTS bench_ann")
    cursor.execute(
        "CREATE TABLE bench_ann (id bigint PRIMARY KEY, tenant_id bigint NOT NULL, "
        "embedding vector NOT NULL)"
    )
    with cursor.copy("COPY bench_ann (id, tenant_id, embedding) FROM STDIN") as copy:
        for i, (tenant, vector) in enumerate(zip(tenants, vectors, strict=True)):
            copy.write_row((i, int(tenant), vector_literal(vector)))
    # The product's table has a unique key that starts with the tenant (factvector_once), and
    # statistics: with both, the planner may read a small tenant's rows through the key and
    # sort them instead of scanning the HNSW index.
    cursor.execute("CREATE UNIQUE INDEX bench_ann_tenant ON bench_ann (tenant_id, id)")
    cursor.execute("ANALYZE bench_ann")


def measure(
    cursor: Any,
    *,
    m: int,
    ef_construction: int,
    base: np.ndarray,
    tenants: np.ndarray,
    extra: np.ndarray,
    queries: np.ndarray,
    ef_search: int = EF_SEARCH,
    kind: str = "vector",
    rerank: int = max(KS),
) -> dict[str, Any]:
    """Build, insert and query with one set of options (the table is loaded afresh). `kind`:
    what the index holds, `vector` (4 bytes a dimension), `halfvec` (2 bytes) or `bit` (the
    signs, by Hamming distance). `rerank`: rows a question reads from the scan, sorted after by
    the full vectors' distance (at least max(KS))."""
    from indexing.sql import vector_literal

    dimension = base.shape[1]
    full = f"vector({dimension})"
    if kind == "bit":
        indexed, opclass = f"binary_quantize(embedding)::bit({dimension})", "bit_hamming_ops"
        order = f"{indexed} <~> binary_quantize(%s::{full})::bit({dimension})"
    else:
        indexed, opclass = f"embedding::{kind}({dimension})", f"{kind}_cosine_ops"
        order = f"{indexed} <=> %s::{kind}({dimension})"
    _load(cursor, dimension, tenants, base)
    started = time.perf_counter()
    cursor.execute(
        f"CREATE INDEX bench_ann_hnsw ON bench_ann USING hnsw (({indexed}) {opclass}) "
        f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
    )
    build = time.perf_counter() - started
    large = int(tenants[0])
    started = time.perf_counter()
    for first in range(0, len(extra), INSERT_BATCH):
        chunk = extra[first : first + INSERT_BATCH]
        cursor.execute(
            "INSERT INTO bench_ann (id, tenant_id, embedding) "
            "SELECT n, %s, e FROM unnest(%s::bigint[], %s::vector[]) AS u(n, e)",
            [
                large,
                list(range(len(base) + first, len(base) + first + len(chunk))),
                [vector_literal(v) for v in chunk],
            ],
        )
    inserts = time.perf_counter() - started
    everything = np.concatenate([base, extra])
    everything = everything / np.linalg.norm(everything, axis=1, keepdims=True)  # cosine
    owners = np.concatenate([tenants, np.full(len(extra), large)])
    cursor.execute("SET hnsw.iterative_scan = relaxed_order")
    cursor.execute(f"SET hnsw.ef_search = {int(ef_search)}")
    figures: dict[str, Any] = {
        "type": kind,
        "rerank": rerank,
        "m": m,
        "ef_construction": ef_construction,
        "build_s": round(build, 2),
        "insert_s": round(inserts, 2),
        "insert_ms_per_vector": round(1000 * inserts / len(extra), 3),
    }
    for name, tenant in (("large", large), ("small", int(tenants[-1]))):
        # Which scan PostgreSQL's planner picks for this tenant's query: the HNSW index, or
        # (for a tenant it thinks small enough) every row read and sorted, which is exact.
        cursor.execute(
            f"EXPLAIN (FORMAT JSON) SELECT id FROM bench_ann WHERE tenant_id = %s "  # noqa: S608 - an int
            f"ORDER BY {order} LIMIT %s",
            [tenant, vector_literal(queries[0]), rerank],
        )
        figures[f"hnsw_{name}"] = "bench_ann_hnsw" in json.dumps(cursor.fetchone()[0])
        ids = np.flatnonzero(owners == tenant)
        scores = queries @ everything[ids].T
        shares: dict[int, list[float]] = {k: [] for k in KS}
        asked = time.perf_counter()
        for q, query in enumerate(queries):
            exact = ids[np.argsort(-scores[q], kind="stable")[: max(KS)]]
            literal = vector_literal(query)
            # The shape of indexing.sql.vector_candidates: the tenant inside the scan, LIMIT
            # CANDIDATES, then sorted by the full vectors' distance in this process (a
            # relaxed-order scan yields its rows a little out of order, and PostgreSQL drops an
            # outer ORDER BY over the subquery).
            cursor.execute(
                f"SELECT id, embedding::{full} <=> %s::{full} AS distance "  # noqa: S608 - an int
                f"FROM bench_ann WHERE tenant_id = %s ORDER BY {order} LIMIT %s",
                [literal, tenant, literal, rerank],
            )
            rows = sorted(cursor.fetchall(), key=lambda row: (row[1], row[0]))
            found = [row[0] for row in rows[: max(KS)]]
            for k in KS:
                shares[k].append(recall(found[:k], exact[:k]))
        figures[f"query_ms_{name}"] = round(1000 * (time.perf_counter() - asked) / len(queries), 2)
        for k in KS:
            figures[f"recall_at_{k}_{name}"] = round(float(np.mean(shares[k])), 4)
    cursor.execute("DROP TABLE bench_ann")
    return figures


def run(args: argparse.Namespace) -> dict[str, Any]:
    from django.db import connection

    from indexing.vectors import configured_embedder
    from operations.roles import as_owner

    texts, questions = load_texts(args.data)
    rng = np.random.default_rng(args.seed)
    questions = [questions[i] for i in rng.permutation(len(questions))[: args.queries]]
    if len(texts) < 2 or not questions:
        raise SystemExit(f"--data {args.data}: too few texts or questions")
    embedder = configured_embedder()
    progress(f"embedding {len(texts)} texts and {len(questions)} questions with {embedder.name}")
    sources = np.concatenate(
        [
            np.asarray(embedder.embed(texts[i : i + 256], purpose="passage"), dtype=np.float32)
            for i in range(0, len(texts), 256)
        ]
    )
    queries = np.asarray(embedder.embed(questions, purpose="query"), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    base = mixes(rng, sources, args.vectors)
    extra = mixes(rng, sources, INSERTS)
    small = max(1, int(args.vectors * args.small_share))
    tenants = np.array([1] * (args.vectors - small) + [2] * small)
    rng.shuffle(tenants)  # the small tenant's rows spread through the table
    tenants[0], tenants[-1] = 1, 2  # measure() reads the large and the small tenant from here
    results = []
    with as_owner(), connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        for kind in args.types.split(","):
            for option in args.options.split(","):
                m, ef_construction = (int(part) for part in option.split(":"))
                progress(
                    f"{kind}, m {m}, ef_construction {ef_construction}: loading, building, querying"
                )
                figures = measure(
                    cursor,
                    m=m,
                    ef_construction=ef_construction,
                    base=base,
                    tenants=tenants,
                    extra=extra,
                    queries=queries,
                    ef_search=args.ef_search,
                    kind=kind,
                    rerank=args.rerank,
                )
                progress(f"  {_line(figures)}")
                results.append(figures)
    return {
        "data": args.data.name,
        "model": embedder.name,
        "texts": len(texts),
        "queries": len(questions),
        "vectors": args.vectors,
        "small_tenant": small,
        "inserts": INSERTS,
        "ef_search": args.ef_search,
        "rerank": args.rerank,
        "options": results,
    }


def _line(figures: dict[str, Any]) -> str:
    recalls = ", ".join(
        f"recall@{k} {figures[f'recall_at_{k}_large']:.3f} large / "
        f"{figures[f'recall_at_{k}_small']:.3f} small"
        for k in KS
    )
    scans = ", ".join(
        f"{name} {'HNSW' if figures[f'hnsw_{name}'] else 'exact'}" for name in ("large", "small")
    )
    return (
        f"{figures['type']} (reading {figures['rerank']}), m {figures['m']}, "
        f"ef_construction {figures['ef_construction']}: build "
        f"{figures['build_s']} s, {INSERTS} inserts {figures['insert_s']} s "
        f"({figures['insert_ms_per_vector']} ms each); {recalls} (scan: {scans}; a question "
        f"{figures['query_ms_large']} ms large / {figures['query_ms_small']} ms small)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo, CMRC 2018 or SQuAD")
    parser.add_argument("--vectors", type=int, default=50_000, help="vectors in the collection")
    parser.add_argument("--queries", type=int, default=200, help="questions asked per tenant")
    parser.add_argument("--options", default="16:64,16:32", help="m:ef_construction, ...")
    parser.add_argument(
        "--types", default="vector", help="what the index holds: vector, halfvec, bit; any of them"
    )
    parser.add_argument(
        "--rerank", type=int, default=max(KS),
        help="rows read from the scan per question, then sorted by the full vectors' distance",
    )  # fmt: skip
    parser.add_argument(
        "--small-share", type=float, default=0.1, help="the small tenant's share of the vectors"
    )
    parser.add_argument(
        "--ef-search", type=int, default=EF_SEARCH, help="hnsw.ef_search for the questions"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--vector-cache", type=Path, help="remember the vectors in this file")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    if args.vectors < 20:
        parser.error("--vectors: at least 20")
    if not 1 <= args.ef_search <= 1000:
        parser.error("--ef-search: 1 to 1000 (pgvector's range)")
    if not 0 < args.small_share < 1:
        parser.error("--small-share: between 0 and 1")
    if not set(args.types.split(",")) <= {"vector", "halfvec", "bit"}:
        parser.error(f"--types {args.types!r}: vector, halfvec, bit, with commas")
    if args.rerank < max(KS):
        parser.error(f"--rerank: at least {max(KS)}")
    for option in args.options.split(","):
        parts = option.split(":")
        if len(parts) != 2 or not all(p.isdigit() and int(p) >= 2 for p in parts):
            parser.error(f"--options {option!r}: m:ef_construction, two whole numbers from 2")
    with bench_database(), vector_cache(args.vector_cache):
        figures = run(args)
    print(f"{figures['vectors']:,} vectors from {figures['data']} ({figures['texts']} texts), "
          f"{figures['queries']} questions per tenant, "
          f"ef_search {figures['ef_search']}:")  # fmt: skip
    for option in figures["options"]:
        print("  " + _line(option))
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
