"""Recall latency at scale: one large tenant among several smaller ones.

    python -m bench.latency [--facts 100000] [--tenants 10] [--other-facts 10000]
                            [--queries 200] [--pool 3000] [--seed 7] [--json OUT]

Data: facts generated from templates and word lists (people, places, projects, preferences,
dates; English and Chinese). A pool of distinct sentences is embedded with the real default
embedder; each stored fact is two pool sentences (a main one and a second one), and its vector is
the main sentence's vector plus a smaller share of the second's plus a little noise, re-normalised:
clustered like real data, never random (HNSW degenerates on random vectors). Full text, entities
and the tenant filter are real: search vectors come from `indexing.text.analyze` through the same
SQL expression fact_add uses (each pool sentence analysed once, a fact's two analyses joined),
entity links from the configured extractor.

Load: binary COPY (psycopg 3 + pgvector) into a temporary staging table, then INSERT ... SELECT
into facts_fact inside the tenant's scope (row-level security refuses COPY FROM into facts_fact
itself: "COPY FROM not supported with row-level security"). The HNSW index is dropped before the
load and rebuilt after it with the same definition; the tables are vacuumed and analysed then, as
autovacuum would have done in a tenant that grew to this size fact by fact.

Measured on the large tenant for `--queries` questions (after 20 warm-up queries): what an
agent's prefetch costs on a cache miss, `context_build` (recall_search with k=20 and the whole
context block), without the query embedding (`p50_ms` ...); recall_search(k=10) alone, likewise
(`recall_p50_ms` ...); the query embedding alone; and a prefetch cache hit (`context_cached`).
Then a recall by each channel alone (full text, vector, entity: `channel_alone`): its wall
time, the wall time of the channel's own stage (its candidates and their scores, the vector
channel without the query's embedding), and the database's time for the whole recall: the
planning and execution time PostgreSQL reports (EXPLAIN ANALYZE, in a pass of its own) for the
statements the channel's stage sends and for all the recall sends, summed, and how many
statements that is.
"""

from __future__ import annotations

import argparse
import inspect
import math
import random
import re
import statistics
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from bench.harness import bench_database, progress, write_json

WARMUP = 20
HNSW_MODEL = "multilingual-e5-small-int8"
HNSW_INDEX = "factvector_hnsw_e2e54649b5e4"  # indexing.vectors.index_name(HNSW_MODEL)
HNSW_DIMENSION = 384
SECOND_SHARE = 0.35  # weight of the second sentence's vector in a fact's vector
NOISE = 0.006  # per dimension: about 0.12 of a unit vector's length over 384 dimensions
COPY_CHUNK = 20_000
SCOPES = ("", "", "team:core", "user:alice", "user:bob", "project:apollo")

# -- word lists -------------------------------------------------------------------------------

EN = {
    "person": "Alice Bob Carol David Emma Frank Grace Henry Irene Jack Karen Leo Maria Nina "
    "Oscar Paul Quinn Rachel Sam Tina Victor Wendy Yusuf Zoe".split(),
    "place": "Berlin Paris Tokyo Shanghai London Seattle Toronto Madrid Lisbon Oslo Dublin "
    "Singapore Sydney Boston Denver Munich Vienna Prague Seoul Austin".split(),
    "project": "Apollo Orion Atlas Phoenix Zephyr Nova Falcon Aurora Helix Quasar Nimbus "
    "Polaris Vega Titan Mercury Cobalt".split(),
    "pref": [
        "dark roast coffee",
        "green tea",
        "vim",
        "tabs over spaces",
        "Python",
        "Rust",
        "morning meetings",
        "async standups",
        "jazz",
        "hiking",
        "window seats",
        "dark mode",
        "short emails",
        "spicy food",
        "remote work",
        "paper notebooks",
        "mechanical keyboards",
        "early flights",
    ],
    "tool": "Postgres Redis Kafka Grafana Terraform Docker Kubernetes Celery Django React "
    "Jenkins Sentry".split(),
    "food": "peanuts shellfish gluten lactose strawberries sesame eggs soy".split(),
    "month": "January February March April May June July August September October November "
    "December".split(),
}
ZH = {
    "person": "张伟 王芳 李娜 刘洋 陈静 杨帆 赵磊 黄婷 周杰 吴敏 徐强 孙丽 马超 朱琳 胡军 郭颖 "
    "老王 小李 王总 张经理".split(),
    "place": "北京 上海 深圳 杭州 成都 广州 南京 西安 武汉 苏州 重庆 天津 厦门 青岛 "
    "长沙 昆明".split(),
    "project": "星火计划 天河项目 北斗平台 青云系统 长城项目 凤凰计划 蓝海平台 飞鸿系统 "
    "启明项目 远航计划".split(),
    "pref": "喝绿茶 喝咖啡 早上开会 下午开会 用Python 用Go 爬山 跑步 听爵士乐 吃川菜 吃粤菜 "
    "坐靠窗的位置 远程办公 用纸质笔记本 深色主题 简短的邮件".split(),
    "tool": "Postgres Redis Kafka Grafana Docker Kubernetes 飞书 钉钉 企业微信 Jira".split(),
    "food": "花生 海鲜 芒果 牛奶 鸡蛋 芝麻 大豆 小麦".split(),
}

EN_TEMPLATES = [
    ("{person} lives in {place} and works on {project}.", "general"),
    ("{person} prefers {pref} over {pref2}.", "user_pref"),
    ("The {project} deadline is {month} {day}; {person} owns the release.", "project"),
    ("{person} moved from {place} to {place2} in {month} {year}.", "general"),
    ("{person}'s birthday is on {month} {day}.", "general"),
    ("{person} asked the team to use {tool} for {project}.", "tool"),
    ("Meeting with {person} about {project} in {place} on {month} {day}.", "project"),
    ("{person} is allergic to {food}, remember that when booking dinner.", "user_pref"),
    ("{person} said {project} should switch from {tool} to {tool2} before {month}.", "tool"),
    ("{person} and {person2} will visit {place} for the {project} launch in {month}.", "project"),
    ("{person} likes {pref} and usually works from {place}.", "user_pref"),
]
ZH_TEMPLATES = [
    ("{person}住在{place}，负责{project}。", "general"),
    ("{person}喜欢{pref}，不喜欢{pref2}。", "user_pref"),
    ("{project}的截止日期是{m}月{day}日，由{person}负责发布。", "project"),
    ("{person}在{year}年{m}月从{place}搬到了{place2}。", "general"),
    ("{person}的生日是{m}月{day}日。", "general"),
    ("{person}建议{project}使用{tool}。", "tool"),
    ("{m}月{day}日在{place}和{person}开会讨论{project}。", "project"),
    ("{person}对{food}过敏，订餐时要注意。", "user_pref"),
    ("{person}说{project}要在{m}月之前从{tool}迁移到{tool2}。", "tool"),
    ("{person}和{person2}{m}月去{place}参加{project}的发布会。", "project"),
    ("{person}平时在{place}办公，喜欢{pref}。", "user_pref"),
]
EN_QUESTIONS = [
    "Where does {person} live?",
    "What does {person} prefer?",
    "When is the {project} deadline?",
    "Who owns the {project} release?",
    "When is {person}'s birthday?",
    "Which tool should {project} use?",
    "What is {person} allergic to?",
    "When did {person} move to {place}?",
    "Who is working on {project} in {place}?",
    "Does {person} like {pref}?",
    "Which meetings about {project} happened in {place}?",
]
ZH_QUESTIONS = [
    "{person}住在哪里？",
    "{person}喜欢什么？",
    "{project}的截止日期是什么时候？",
    "谁负责{project}的发布？",
    "{person}的生日是哪天？",
    "{project}用什么工具？",
    "{person}对什么过敏？",
    "{person}什么时候搬到{place}的？",
    "谁在{place}做{project}？",
    "{person}喜欢{pref}吗？",
    "在{place}开过哪些关于{project}的会？",
]


def _fill(rng: random.Random, words: dict[str, list[str]], template: str) -> str:
    values = {
        "day": rng.randint(1, 28),
        "m": rng.randint(1, 12),
        "year": rng.randint(2019, 2026),
    }
    for key in ("person", "place", "project", "pref", "tool", "food", "month"):
        if key in words:
            first, second = rng.sample(words[key], 2)
            values[key], values[f"{key}2"] = first, second
    return template.format(**values)


def sentence_pool(rng: random.Random, size: int) -> list[tuple[str, str, str]]:
    """`size` distinct (sentence, language, category), about half English, half Chinese."""
    seen: set[str] = set()
    pool: list[tuple[str, str, str]] = []
    while len(pool) < size:
        language = "en" if len(pool) % 2 == 0 else "zh"
        words, templates = (EN, EN_TEMPLATES) if language == "en" else (ZH, ZH_TEMPLATES)
        template, category = rng.choice(templates)
        text = _fill(rng, words, template)
        if text not in seen:
            seen.add(text)
            pool.append((text, language, category))
    return pool


def questions(rng: random.Random, count: int) -> list[str]:
    """`count` distinct questions, English and Chinese alternating, from the same word lists."""
    seen: list[str] = []
    while len(seen) < count:
        english = len(seen) % 2 == 0
        words, templates = (EN, EN_QUESTIONS) if english else (ZH, ZH_QUESTIONS)
        text = _fill(rng, words, rng.choice(templates))
        if text not in seen:
            seen.append(text)
    return seen


# -- data -------------------------------------------------------------------------------------


@dataclass
class Pool:
    texts: list[str]
    languages: list[str]
    categories: list[str]
    vectors: np.ndarray
    latin: list[str]
    han: list[str]
    entities: list[list[tuple[str, str, str]]]  # per sentence: (normalized, name, type)
    by_language: dict[str, np.ndarray] = field(default_factory=dict)


def build_pool(rng: random.Random, size: int) -> Pool:
    from django.conf import settings

    from facts.entities import entity_extractor, entity_normalize
    from indexing.embedders import get_embedder
    from indexing.text import analyze

    generated = sentence_pool(rng, size)
    texts = [text for text, _, _ in generated]
    embedder = get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR)
    if embedder.name != HNSW_MODEL:
        progress(f"note: the embedder is {embedder.name}; the HNSW index covers {HNSW_MODEL} only")
    started = time.perf_counter()
    chunks = []
    for offset in range(0, len(texts), 256):
        chunks.append(embedder.embed(texts[offset : offset + 256], purpose="passage"))
        if (offset // 256) % 4 == 3:
            progress(f"  {offset + len(chunks[-1])}/{len(texts)} pool sentences embedded")
    vectors = np.vstack(chunks).astype(np.float32)
    progress(
        f"pool of {len(texts)} sentences embedded in {time.perf_counter() - started:.1f} s "
        f"({embedder.name}, {vectors.shape[1]}-d)"
    )
    analyzed = [analyze(text) for text in texts]
    extractor = entity_extractor()
    entities = []
    for text in texts:
        found = extractor(text) if extractor is not None else []
        entities.append(
            [(entity_normalize(e.name), e.name.strip()[:200], e.type) for e in found if e.name]
        )
    languages = [language for _, language, _ in generated]
    pool = Pool(
        texts=texts,
        languages=languages,
        categories=[category for _, _, category in generated],
        vectors=vectors,
        latin=[a.latin for a in analyzed],
        han=[a.han for a in analyzed],
        entities=entities,
    )
    for language in ("en", "zh"):
        pool.by_language[language] = np.array(
            [i for i, lang in enumerate(languages) if lang == language]
        )
    return pool


@dataclass
class Rows:
    """One tenant's generated facts, column by column."""

    main: np.ndarray  # pool index of the main sentence
    second: np.ndarray  # pool index of the second sentence
    vectors: np.ndarray


def generate_rows(rng: np.random.Generator, pool: Pool, count: int) -> Rows:
    """`count` facts whose (main, second) sentence pairs are distinct."""
    size = len(pool.texts)
    main = rng.integers(0, size, count * 2)
    languages = np.array([pool.languages[i] == "en" for i in range(size)])
    second = np.empty_like(main)
    for language, members in pool.by_language.items():
        picks = languages[main] == (language == "en")
        second[picks] = rng.choice(members, int(picks.sum()))
    pairs = main * size + second
    _, first_seen = np.unique(pairs, return_index=True)
    keep = np.sort(first_seen[main[first_seen] != second[first_seen]])[:count]
    if len(keep) < count:
        raise SystemExit(f"--pool is too small for {count} distinct facts per tenant")
    main, second = main[keep], second[keep]
    vectors = np.empty((count, pool.vectors.shape[1]), dtype=np.float32)
    for offset in range(0, count, COPY_CHUNK):
        part = slice(offset, offset + COPY_CHUNK)
        mixed = pool.vectors[main[part]] + SECOND_SHARE * pool.vectors[second[part]]
        mixed += rng.normal(0.0, NOISE, mixed.shape).astype(np.float32)
        vectors[part] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return Rows(main=main, second=second, vectors=vectors)


# -- loading ----------------------------------------------------------------------------------

STAGE_COLUMNS = [
    ("id", "bigint"),
    ("kind", "text"),
    ("content", "text"),
    ("content_hash", "text"),
    ("scope", "text"),
    ("session_id", "text"),
    ("position", "integer"),
    ("speaker", "text"),
    ("category", "text"),
    ("latin", "text"),
    ("han", "text"),
    ("embedding", "vector"),
    ("trust_score", "double precision"),
    ("retrieval_count", "integer"),
    ("importance", "double precision"),
    ("created_at", "timestamptz"),
]


def _raw_cursor() -> Any:
    """A psycopg 3 cursor on Django's connection, with pgvector's types registered on it only
    (`pgvector.psycopg.register_vector` would register them on the whole connection, where
    Django's VectorField expects vectors as text)."""
    from django.db import connection
    from pgvector.psycopg.vector import register_vector_info
    from psycopg.types import TypeInfo

    connection.ensure_connection()
    raw = connection.connection
    cursor = raw.cursor()
    register_vector_info(cursor, TypeInfo.fetch(raw, "vector"))
    return cursor


def create_staging() -> None:
    from django.db import connection

    columns = ", ".join(f"{name} {kind}" for name, kind in STAGE_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TEMPORARY TABLE bench_fact_stage ({columns})")
        cursor.execute(
            "CREATE TEMPORARY TABLE bench_link_stage (fact_id bigint, normalized text, role text)"
        )


def reserve_ids(count: int) -> int:
    """The first of `count` consecutive fact ids taken from the table's sequence."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence('facts_fact', 'id')")
        sequence = cursor.fetchone()[0]
        cursor.execute("SELECT nextval(%s)", [sequence])
        first = cursor.fetchone()[0]
        cursor.execute("SELECT setval(%s, %s)", [sequence, first + count - 1])
    return int(first)


def load_tenant(
    tenant: Any, pool: Pool, rows: Rows, rng: random.Random, now: datetime, actor: str
) -> None:
    """COPY the tenant's rows into staging, then INSERT ... SELECT them inside its scope."""
    from facts.models import Entity
    from facts.services import content_hash
    from tenants.scope import tenant_scope

    count = len(rows.main)
    first_id = reserve_ids(count)
    with tenant_scope(tenant) as tenant_id:
        # Entities first (a few hundred), so links can be resolved by name in SQL.
        names: dict[str, tuple[str, str]] = {}
        for index in np.unique(np.concatenate([rows.main, rows.second])):
            for normalized, name, kind in pool.entities[index]:
                names.setdefault(normalized, (name, kind))
        Entity.objects.for_tenant(tenant).bulk_create(
            [
                Entity(tenant=tenant, name=name, normalized=normalized, type=kind)
                for normalized, (name, kind) in names.items()
            ],
            ignore_conflicts=True,
        )
        cursor = _raw_cursor()
        # Fresh statistics, or the foreign-key checks of the links plan sequential scans.
        cursor.execute("ANALYZE facts_entity")
        types = [kind for _, kind in STAGE_COLUMNS]
        for offset in range(0, count, COPY_CHUNK):
            end = min(offset + COPY_CHUNK, count)
            with cursor.copy("COPY bench_fact_stage FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(types)
                for n in range(offset, end):
                    main, second = int(rows.main[n]), int(rows.second[n])
                    content = f"{pool.texts[main]} {pool.texts[second]}"
                    turn = n % 10 < 3  # three in ten are conversation turns
                    copy.write_row(
                        (
                            first_id + n,
                            "turn" if turn else "fact",
                            content,
                            content_hash(content),
                            SCOPES[n % len(SCOPES)],
                            f"session-{n // 30}" if turn else "",
                            n % 30 if turn else None,
                            rng.choice(("user", "assistant")) if turn else "",
                            pool.categories[main],
                            f"{pool.latin[main]} {pool.latin[second]}".strip(),
                            f"{pool.han[main]} {pool.han[second]}".strip(),
                            rows.vectors[n],
                            round(rng.uniform(0.35, 0.95), 3),
                            rng.randint(0, 12),
                            round(rng.random(), 3),
                            now - timedelta(seconds=rng.uniform(0, 365 * 86400)),
                        )
                    )
            with cursor.copy("COPY bench_link_stage FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["bigint", "text", "text"])
                for n in range(offset, end):
                    seen: set[str] = set()
                    for index in (int(rows.main[n]), int(rows.second[n])):
                        for normalized, _, _ in pool.entities[index]:
                            if normalized not in seen:
                                role = "subject" if not seen else "context"
                                seen.add(normalized)
                                copy.write_row((first_id + n, normalized, role))
            cursor.execute(
                "INSERT INTO facts_fact (id, tenant_id, kind, content, content_hash, scope, "
                "session_id, position, speaker, category, tags, metadata, search_vector, "
                "embedding_model, trust_score, helpful_count, unhelpful_count, "
                "retrieval_count, last_retrieved_at, importance, pinned, archive_bundle, "
                "mention_count, status, superseded_by_id, created_by, created_at, updated_at) "
                "SELECT id, %s, kind, content, content_hash, scope, session_id, position, "
                "speaker, category, '{}', '{}'::jsonb, "
                "to_tsvector('english', latin) || to_tsvector('simple', han), "
                "%s, trust_score, 0, 0, retrieval_count, "
                "CASE WHEN retrieval_count > 0 THEN created_at END, importance, false, '', 1, "
                "'active', NULL, "
                "%s, created_at, created_at FROM bench_fact_stage",
                [tenant_id, HNSW_MODEL, actor],
            )
            cursor.execute(
                "INSERT INTO facts_factvector (tenant_id, fact_id, model, dimension, embedding, "
                "created_at) SELECT %s, id, %s, %s, embedding, created_at FROM bench_fact_stage",
                [tenant_id, HNSW_MODEL, HNSW_DIMENSION],
            )
            cursor.execute("ANALYZE facts_fact")
            cursor.execute("ANALYZE facts_factvector")
            cursor.execute(
                "INSERT INTO facts_factentity (tenant_id, fact_id, entity_id, role) "
                "SELECT %s, s.fact_id, e.id, s.role FROM bench_link_stage s "
                "JOIN facts_entity e ON e.tenant_id = %s AND e.normalized = s.normalized",
                [tenant_id, tenant_id],
            )
            cursor.execute("TRUNCATE bench_fact_stage, bench_link_stage")
        cursor.close()


def load(args: argparse.Namespace, pool: Pool, now: datetime) -> tuple[Any, dict[str, Any]]:
    """Create the tenants and their facts; returns the large tenant and the load figures."""
    # The large tenant sits in the middle of the others, so its rows are not simply first.
    sizes = [args.other_facts] * args.tenants
    sizes[args.tenants // 2] = args.facts
    tenants, figures = load_tenants(sizes, pool, now, seed=args.seed, large={args.tenants // 2})
    return tenants[args.tenants // 2], figures


def load_tenants(
    sizes: list[int],
    pool: Pool,
    now: datetime,
    *,
    seed: int,
    large: set[int] | None = None,
    slug: str = "latency",
) -> tuple[list[Any], dict[str, Any]]:
    """One tenant per size, in that order, with the HNSW index dropped during the load and
    rebuilt after it; returns the tenants and the load figures."""
    from django.db import connection

    from facts.stats import stats_fold
    from indexing.vectors import configured_embedder, index_name
    from retrieval.indexes import tenant_indexes_sync
    from tenants.actors import Actor
    from tenants.inputs import tenant_draft
    from tenants.services import tenant_create

    actor = Actor.job(f"bench.{slug}")
    rng = random.Random(seed)  # noqa: S311 - reproducible data, not secrets
    vector_rng = np.random.default_rng(seed)
    # The default model serves recall, as in a product that embedded these facts itself.
    if configured_embedder().name != HNSW_MODEL or index_name(HNSW_MODEL) != HNSW_INDEX:
        raise SystemExit(f"bench.{slug} measures the default embedder ({HNSW_MODEL})")
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [HNSW_INDEX])
        (definition,) = cursor.fetchone()
        cursor.execute(f"DROP INDEX {HNSW_INDEX}")
    progress(f"dropped {HNSW_INDEX} for the load (rebuilt after it, the same)")
    create_staging()
    started = time.perf_counter()
    tenants = []
    loaded = 0
    total = sum(sizes)
    for number, count in enumerate(sizes):
        tenant = tenant_create(
            actor=actor,
            draft=tenant_draft(
                {"slug": f"{slug}-{number}", "name": f"{slug.capitalize()} tenant {number}"}
            ),
        )
        rows = generate_rows(vector_rng, pool, count)
        load_tenant(tenant, pool, rows, rng, now, str(actor))
        loaded += count
        tenants.append(tenant)
        elapsed = time.perf_counter() - started
        mark = " (large)" if large and number in large else ""
        progress(
            f"tenant {number + 1}/{len(sizes)}{mark}: {count} facts; {loaded}/{total} rows "
            f"loaded in {elapsed:.0f} s ({loaded / elapsed:.0f} rows/s)"
        )
    load_s = time.perf_counter() - started
    # What the statistics sweep does after writes (facts.stats): the tenants' counts folded.
    started = time.perf_counter()
    for tenant in tenants:
        stats_fold(tenant=tenant)
    progress(
        f"statistics folded for {len(tenants)} tenants in {time.perf_counter() - started:.1f} s"
    )
    progress(f"building {HNSW_INDEX} over {loaded} rows (maintenance_work_mem 1GB)")
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute(definition)
        cursor.execute("RESET maintenance_work_mem")
    index_s = time.perf_counter() - started
    progress(f"{HNSW_INDEX} built in {index_s:.1f} s; vacuuming and analyzing")
    started = time.perf_counter()
    with connection.cursor() as cursor:
        # What autovacuum has long done in a tenant that grew to this size fact by fact: without
        # it, every first read of a freshly loaded row also looks up its transaction's status.
        for table in ("facts_fact", "facts_factvector", "facts_entity", "facts_factentity"):
            cursor.execute(f"VACUUM (ANALYZE) {table}")
    progress(f"vacuumed and analyzed in {time.perf_counter() - started:.1f} s")
    # What beat's tenant-index sweep does once a tenant passes the mark (retrieval.indexes).
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        made = tenant_indexes_sync().created
        for table in ("facts_fact", "facts_factvector"):
            cursor.execute(f"ANALYZE {table}")
        cursor.execute("RESET maintenance_work_mem")
    tenant_index_s = time.perf_counter() - started
    progress(f"{len(made)} tenant indexes (large tenants' own) made in {tenant_index_s:.1f} s")
    return tenants, {
        "rows": loaded,
        "load_s": round(load_s, 1),
        "rows_per_s": round(loaded / load_s),
        "index_build_s": round(index_s, 1),
        "tenant_indexes": len(made),
        "tenant_index_build_s": round(tenant_index_s, 1),
    }


# -- measuring --------------------------------------------------------------------------------


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (share in 0..1)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, min(len(ordered), math.ceil(share * len(ordered))))
    return round(ordered[rank - 1], 1)


def vector_plan(tenant: Any, query: str) -> str:
    """How PostgreSQL runs recall's vector query for `query`: the plan's scan lines."""
    from django.db import connection

    from retrieval.inputs import recall_query
    from retrieval.search import recall_search

    plans: list[str] = []

    def explain(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        result = execute(sql, params, many, context)
        if "<=>" in sql and not plans:
            plans.append("")  # no recursion through our own EXPLAIN
            context["cursor"].execute(f"EXPLAIN (ANALYZE, COSTS OFF) {sql}", params)
            plans[0] = "\n".join(row[0] for row in context["cursor"].fetchall())
        return result

    with connection.execute_wrapper(explain):
        recall_search(
            tenant=tenant, query=recall_query({"query": query, "k": 10, "channels": ["vec"]})
        )
    lines = [line.strip() for line in (plans[0] if plans else "").splitlines()]
    return "; ".join(line for line in lines if "Scan" in line or "Execution Time" in line)


def measure(tenant: Any, warmup: list[str], queries: list[str], breakdown: bool) -> dict[str, Any]:
    from retrieval.context import context_build, context_cached
    from retrieval.inputs import recall_query
    from retrieval.search import recall_search

    cached_how = "retrieval.context.context_cached, a cache hit (the agents' prefetch path)"
    plan = vector_plan(tenant, queries[0])
    progress(f"vector query plan: {plan}")
    progress(f"warming up with {len(warmup)} queries; cached path: {cached_how}")
    for query in warmup:
        recall_search(tenant=tenant, query=recall_query({"query": query, "k": 10}))
        context_build(tenant=tenant, query=query)
    search_ms: list[float] = []  # recall + context assembly, without the query embedding
    recall_ms: list[float] = []  # recall_search alone (k=10), without the query embedding
    embed_ms: list[float] = []
    total_ms: list[float] = []
    cached_ms: list[float] = []
    returned: list[int] = []
    for query in queries:
        result = recall_search(tenant=tenant, query=recall_query({"query": query, "k": 10}))
        recall_ms.append(result.timings_ms["total"] - result.timings_ms.get("embed_query", 0.0))
        returned.append(len(result.hits))
    # A pass of its own, so that no query is measured right after the same query warmed it up.
    for number, query in enumerate(queries, 1):
        # What an agent's prefetch costs on a cache miss: recall and the whole context block.
        block = context_build(tenant=tenant, query=query)
        embed = block.timings_ms.get("embed_query", 0.0)
        total_ms.append(block.timings_ms["total"])
        embed_ms.append(embed)
        search_ms.append(block.timings_ms["total"] - embed)
        context_cached(tenant=tenant, query=query)  # fills the cache
        started = time.perf_counter()
        context_cached(tenant=tenant, query=query)
        cached_ms.append((time.perf_counter() - started) * 1000)
        if number % 50 == 0:
            progress(f"  {number}/{len(queries)} queries; p50 so far {percentile(search_ms, 0.5)}")
    figures: dict[str, Any] = {
        "p50_ms": percentile(search_ms, 0.50),
        "p95_ms": percentile(search_ms, 0.95),
        "p99_ms": percentile(search_ms, 0.99),
        "mean_ms": round(statistics.fmean(search_ms), 1),
        "recall_p50_ms": percentile(recall_ms, 0.50),
        "recall_p95_ms": percentile(recall_ms, 0.95),
        "recall_p99_ms": percentile(recall_ms, 0.99),
        "with_embedding_p50_ms": percentile(total_ms, 0.50),
        "with_embedding_p95_ms": percentile(total_ms, 0.95),
        "embed_query_p50_ms": percentile(embed_ms, 0.50),
        "embed_query_p95_ms": percentile(embed_ms, 0.95),
        "embed_query_p99_ms": percentile(embed_ms, 0.99),
        "cached_p50_ms": percentile(cached_ms, 0.50),
        "cached_p95_ms": percentile(cached_ms, 0.95),
        "cached_p99_ms": percentile(cached_ms, 0.99),
        "cached_path": cached_how,
        "hits_min": min(returned),
        "vector_plan": plan,
        "hnsw_used": HNSW_INDEX in plan,
    }
    if breakdown:
        progress("each channel alone (without the query embedding), then its database time")
        alone: dict[str, dict[str, float]] = {}
        for channel in ("fts", "vec", "entity"):
            times, stage = [], []
            for query in queries:
                timings = recall_search(
                    tenant=tenant,
                    query=recall_query({"query": query, "k": 10, "channels": [channel]}),
                ).timings_ms
                times.append(timings["total"] - timings.get("embed_query", 0.0))
                stage.append(timings.get(channel, 0.0) - timings.get("embed_query", 0.0))
            alone[channel] = {
                "p50_ms": percentile(times, 0.5), "p95_ms": percentile(times, 0.95),
                "stage_p50_ms": percentile(stage, 0.5), "stage_p95_ms": percentile(stage, 0.95),
                **database_time(tenant, channel, queries),
            }  # fmt: skip
        figures["channel_alone"] = alone
    return figures


# Statements that only read: EXPLAIN ANALYZE runs them a second time without harm.
_READ_ONLY = re.compile(r"^\s*(SELECT|WITH)\b(?!.*\b(INSERT|UPDATE|DELETE)\b)", re.I | re.S)


def database_time(tenant: Any, channel: str, queries: list[str]) -> dict[str, float]:
    """What the database spends on one recall by `channel` alone: each statement that only
    reads run again under EXPLAIN (ANALYZE), its planning and execution time summed per recall
    (`db_p50_ms`, `db_p95_ms`), and the statements a recall sends (`statements`). A separate
    pass, after the timed one: the timed figures carry no EXPLAIN; the second run of a statement
    finds the pages the first one read in memory, as the timed pass (after its warm-up) did."""
    import psycopg
    from django.db import connection

    from retrieval.inputs import recall_query
    from retrieval.search import recall_search

    spent: list[float] = []
    own: list[float] = []
    sent: list[int] = []
    current = {"ms": 0.0, "stage_ms": 0.0, "statements": 0}
    stage_function = _STAGES[channel]

    def explain(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        result = execute(sql, params, many, context)
        current["statements"] += 1
        if not many and _READ_ONLY.match(sql):
            # A cursor of its own, on the same connection and transaction: the caller reads the
            # first statement's rows from its cursor after this returns.
            with psycopg.ClientCursor(connection.connection) as cursor:
                cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {sql}", params)
                lines = [row[0] for row in cursor.fetchall()]
            ms = 0.0
            for line in lines:
                found = re.match(r"(Planning|Execution) Time: ([\d.]+) ms", line.strip())
                if found:
                    ms += float(found.group(2))
            current["ms"] += ms
            # The channel's own statements: those sent from inside its stage's function.
            if any(frame.function == stage_function for frame in inspect.stack(context=0)):
                current["stage_ms"] += ms
        return result

    for query in queries:
        current.update(ms=0.0, stage_ms=0.0, statements=0)
        with connection.execute_wrapper(explain):
            recall_search(
                tenant=tenant, query=recall_query({"query": query, "k": 10, "channels": [channel]})
            )
        spent.append(current["ms"])
        own.append(current["stage_ms"])
        sent.append(int(current["statements"]))
    return {
        "db_p50_ms": percentile(spent, 0.5),
        "db_p95_ms": percentile(spent, 0.95),
        "stage_db_p50_ms": percentile(own, 0.5),
        "stage_db_p95_ms": percentile(own, 0.95),
        "statements": round(statistics.fmean(sent), 1),
    }


# The function of retrieval.channels that is each channel's own stage.
_STAGES = {"fts": "_fts_scores", "vec": "_vector_scores", "entity": "_entity_scores"}


def run(args: argparse.Namespace) -> dict[str, Any]:
    now = datetime.now(UTC)
    pool = build_pool(random.Random(args.seed), args.pool)  # noqa: S311
    from operations.roles import as_owner

    with as_owner():  # the load builds an index and analyzes tables: the owner's to do
        big, load_figures = load(args, pool, now)
    asked = questions(random.Random(args.seed + 1), args.queries + WARMUP)  # noqa: S311
    figures = measure(big, asked[:WARMUP], asked[WARMUP:], breakdown=not args.no_breakdown)
    return {
        **figures,
        "queries": args.queries,
        "facts": args.facts,
        "tenants": args.tenants,
        "other_facts": args.other_facts,
        "pool": args.pool,
        **load_figures,
    }


def _percentiles(label: str, figures: dict[str, Any], prefix: str) -> str:
    shown = [
        f"{name} {figures[f'{prefix}{name}_ms']} ms"
        for name in ("p50", "p95", "p99")
        if f"{prefix}{name}_ms" in figures
    ]
    return f"  {label:<34} " + "  ".join(shown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=100_000, help="facts of the large tenant")
    parser.add_argument("--tenants", type=int, default=10, help="tenants, the large one included")
    parser.add_argument("--other-facts", type=int, default=10_000, help="facts of each other one")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pool", type=int, default=3000, help="distinct sentences embedded")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--no-breakdown", action="store_true", help="skip timing each channel alone"
    )
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.facts < 1 or args.tenants < 1 or args.queries < 1 or args.other_facts < 0:
        parser.error("--facts, --tenants and --queries must be at least 1")
    if args.pool < 100:
        parser.error("--pool must be at least 100")
    with bench_database():
        figures = run(args)
    print(f"Recall latency ({figures['queries']} queries, k=10, large tenant of "
          f"{figures['facts']} facts among {figures['tenants']} tenants, "
          f"{figures['rows']} facts in all)")  # fmt: skip
    print(_percentiles("recall + context (no query embedding)", figures, ""))
    print(_percentiles("recall_search alone (k=10)", figures, "recall_"))
    print(_percentiles("query embedding", figures, "embed_query_"))
    print(_percentiles("cached path", figures, "cached_") + f"  ({figures['cached_path']})")
    print(f"  vector query uses the HNSW index: {'yes' if figures['hnsw_used'] else 'no'}")
    for channel, values in figures.get("channel_alone", {}).items():
        print(_percentiles(f"{channel} alone (no embedding)", values, ""))
        print(
            f"    its own stage p50 {values['stage_p50_ms']} ms p95 {values['stage_p95_ms']} ms,"
            f" of which the database p50 {values['stage_db_p50_ms']} ms"
            f" p95 {values['stage_db_p95_ms']} ms; the database for the whole recall"
            f" p50 {values['db_p50_ms']} ms ({values['statements']} statements)"
        )
    print(f"  load {figures['rows']} rows in {figures['load_s']} s "
          f"({figures['rows_per_s']} rows/s), HNSW build {figures['index_build_s']} s")  # fmt: skip
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
