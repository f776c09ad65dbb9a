"""Server render time of each web admin page, with 100,000 facts in the tenant.

    python -m bench.admin_pages [--facts 100000] [--tenants 3] [--other-facts 10000]
                                [--runs 20] [--pool 3000] [--seed 7] [--json OUT]

Data: bench.latency's loader (facts from templates and word lists in English and Chinese, real
embeddings, full text, entity links; one large tenant among smaller ones), plus what the pages
show besides facts: an audit event per fact (its creation), feedback, members, API keys, 48
hours of agents' recall latencies, a retention policy.

Measured: each page requested through Django's test client in this process, signed in as an
admin of the large tenant (a member, not a superuser: the usual path), `--runs` times after 2
warm-up requests; the time from request to rendered response (middleware, view, database,
template), without a network or a WSGI server. Pages that search vary the query from run to
run. The goal is 300 ms at p95 for every page.
"""

from __future__ import annotations

import argparse
import random
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.harness import bench_database, progress, write_json
from bench.latency import build_pool, load, percentile, questions

GOAL_MS = 300.0
WARMUP = 2


def _enrich(tenant: Any, now: datetime) -> dict[str, Any]:
    """Audit events, feedback, people, keys, latencies and a policy for the large tenant."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from facts.inputs import fact_draft
    from facts.services import fact_add, fact_feedback
    from retrieval.latency import BUCKET_COUNT, bucket_of, recall_latency_add
    from tenants.actors import Actor
    from tenants.inputs import retention_changes
    from tenants.scope import tenant_scope
    from tenants.services import apikey_create, membership_set, retention_policy_update

    actor = Actor.job("bench.admin_pages")
    with tenant_scope(tenant) as tenant_id, connection.cursor() as cursor:
        # Every loaded fact's creation, as fact_add would have recorded it.
        cursor.execute(
            "INSERT INTO facts_factevent (tenant_id, fact_id, action, actor, before, after, at) "
            "SELECT tenant_id, id, 'create', created_by, NULL, "
            "jsonb_build_object('trust_score', trust_score, 'scope', scope), created_at "
            "FROM facts_fact WHERE tenant_id = %s",
            [tenant_id],
        )
        cursor.execute("ANALYZE facts_factevent")
    rng = random.Random(11)  # noqa: S311 - reproducible data, not secrets
    added = [
        fact_add(
            tenant=tenant,
            actor=actor,
            draft=fact_draft(
                {
                    "content": f"Bench note {i}: Alice moved the Apollo review to room {i % 40}",
                    "scope": "team:core",
                }
            ),
        ).fact
        for i in range(300)
    ]
    for fact in added:
        for _ in range(rng.randint(1, 3)):
            fact_feedback(tenant=tenant, fact_id=fact.pk, helpful=rng.random() < 0.7, actor=actor)
    users = get_user_model().objects
    admin = users.create_user("bench-admin", password=secrets.token_urlsafe(16))
    membership_set(tenant=tenant, user=admin, role="admin", actor=actor)
    for n in range(20):
        person = users.create_user(f"bench-person-{n}", password=secrets.token_urlsafe(16))
        membership_set(tenant=tenant, user=person, role="auditor", actor=actor)
    for n in range(15):
        apikey_create(tenant=tenant, name=f"hermes-profile-{n}", actor=actor)
    for hours_ago in range(48):
        counts = [0] * BUCKET_COUNT
        for _ in range(200):
            counts[bucket_of(rng.lognormvariate(3.0, 0.6))] += 1  # about 20 ms
        recall_latency_add(tenant=tenant, hour=now - timedelta(hours=hours_ago), counts=counts)
    retention_policy_update(
        tenant=tenant,
        actor=actor,
        changes=retention_changes(
            {"archive_after_days_unretrieved": 180, "purge_archived_after_days": 30}
        ),
    )
    return {"admin": admin, "fact": added[0]}


def _pages(tenant: Any, fact: Any, deep_cursor: str, entity_id: int, key_id: int) -> list:
    base = f"/t/{tenant.slug}/"
    return [
        ("dashboard", lambda q: base),
        ("dashboard: top entities", lambda q: f"{base}dashboard/top-entities"),
        ("facts", lambda q: f"{base}facts/"),
        ("facts, filtered", lambda q: f"{base}facts/?kind=fact&category=project&trust_min=0.8"),
        ("facts, 40 pages deep", lambda q: f"{base}facts/?cursor={deep_cursor}"),
        ("facts, search", lambda q: f"{base}facts/?q={q}"),
        ("fact", lambda q: f"{base}facts/{fact.pk}/"),
        ("recall playground", lambda q: f"{base}recall/?q={q}"),
        ("recall: left out", lambda q: f"{base}recall/left-out?q={q}"),
        ("recall: context block", lambda q: f"{base}recall/context?q={q}"),
        ("entities", lambda q: f"{base}entities/"),
        ("entity", lambda q: f"{base}entities/{entity_id}/"),
        ("retention", lambda q: f"{base}retention/"),
        ("retention preview", lambda q: f"{base}retention/preview?archive_below_trust=0.5"),
        ("members", lambda q: f"{base}members/"),
        ("API keys", lambda q: f"{base}keys/"),
        ("Connect an agent", lambda q: f"{base}connect/?key={key_id}&scope=team:core"),
        ("audit log", lambda q: f"{base}audit/"),
        ("audit log, filtered", lambda q: f"{base}audit/?action=feedback"),
    ]


def _deep_cursor(tenant: Any) -> str:
    from facts.selectors.facts import fact_list

    cursor = None
    for _ in range(40):
        # The facts page's own order (most important first), as its next-page links carry.
        cursor = fact_list(tenant=tenant, limit=50, cursor=cursor, order="importance").next_cursor
    assert cursor is not None
    return cursor


def measure(tenant: Any, admin: Any, fact: Any, runs: int, seed: int) -> dict[str, Any]:
    from urllib.parse import quote

    from django.test import Client

    from facts.selectors.dashboard import entity_top
    from tenants.selectors import apikey_list

    client = Client(HTTP_HOST="localhost")
    client.force_login(admin)
    asked = questions(random.Random(seed + 2), runs + WARMUP)  # noqa: S311
    entity_id = entity_top(tenant=tenant, limit=1)[0][0].pk
    pages = _pages(tenant, fact, _deep_cursor(tenant), entity_id, apikey_list(tenant=tenant)[0].pk)
    figures: dict[str, Any] = {}
    for name, url_for in pages:
        times = []
        for run in range(WARMUP + runs):
            url = url_for(quote(asked[run]))
            started = time.perf_counter()
            response = client.get(url)
            elapsed = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise SystemExit(f"{name}: {url} answered {response.status_code}")
            if run >= WARMUP:
                times.append(elapsed)
        figures[name] = {
            "p50_ms": percentile(times, 0.50),
            "p95_ms": percentile(times, 0.95),
            "max_ms": round(max(times), 1),
        }
        progress(f"  {name}: p50 {figures[name]['p50_ms']} ms, p95 {figures[name]['p95_ms']} ms")
    return figures


def run(args: argparse.Namespace) -> dict[str, Any]:
    now = datetime.now(UTC)
    pool = build_pool(random.Random(args.seed), args.pool)  # noqa: S311
    from operations.roles import as_owner

    with as_owner():  # the load builds an index and analyzes tables: the owner's to do
        big, load_figures = load(args, pool, now)
        progress("adding audit events, feedback, people, keys, latencies, a policy")
        extra = _enrich(big, now)
    from facts.selectors.facts import fact_count

    facts = fact_count(tenant=big)
    progress(f"measuring {args.runs} requests per page on a tenant of {facts} active facts")
    pages = measure(big, extra["admin"], extra["fact"], args.runs, args.seed)
    return {
        "pages": pages,
        "tenant_facts": facts,
        "runs": args.runs,
        "goal_ms": GOAL_MS,
        "over_goal": [name for name, f in pages.items() if f["p95_ms"] > GOAL_MS],
        **load_figures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=100_000, help="facts of the large tenant")
    parser.add_argument("--tenants", type=int, default=3, help="tenants, the large one included")
    parser.add_argument("--other-facts", type=int, default=10_000, help="facts of each other one")
    parser.add_argument("--runs", type=int, default=20, help="requests per page measured")
    parser.add_argument("--pool", type=int, default=3000, help="distinct sentences embedded")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.facts < 2100 or args.tenants < 1 or args.runs < 1 or args.other_facts < 0:
        parser.error("--facts must be at least 2100 (40 pages), --tenants and --runs at least 1")
    with bench_database():
        figures = run(args)
    print(
        f"Web admin pages, server render time ({figures['runs']} requests each, a tenant of "
        f"{figures['tenant_facts']} active facts among {args.tenants} tenants)"
    )
    for name, page in figures["pages"].items():
        mark = "" if page["p95_ms"] <= GOAL_MS else f"   over the {GOAL_MS:.0f} ms goal"
        print(f"  {name:<24} p50 {page['p50_ms']:>7} ms   p95 {page['p95_ms']:>7} ms{mark}")
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
