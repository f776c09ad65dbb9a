"""The memory lifecycle: importance and pinning; retention runs that archive into bundles and
purge for good; legal hold; dry runs; the Retention page's runs."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from facts import services
from facts.bundles import bundle_open
from facts.importance import importance_recompute
from facts.inputs import fact_changes, fact_draft
from facts.models import Fact, FactEntity, FactEvent, FactVector, RetentionRun, Status
from facts.retention import (
    retention_dry_run,
    retention_run_claim,
    retention_run_execute,
    retention_run_start,
    retention_sweep,
)
from facts.selectors.facts import fact_history, fact_list
from retrieval.context import context_build
from tenants.inputs import retention_changes
from tenants.scope import tenant_scope
from tenants.services import retention_policy_update
from tests.api_fixtures import bearer, signed_in

pytestmark = pytest.mark.django_db
BASE = "/api/v1/tenants/acme"


@pytest.fixture
def archives(settings, tmp_path) -> Path:
    settings.MNEMOSYNE_ARCHIVE_DIR = tmp_path / "archives"
    return settings.MNEMOSYNE_ARCHIVE_DIR


def add(tenant, actor, content: str, **kw) -> Fact:
    return services.fact_add(
        tenant=tenant, actor=actor, draft=fact_draft({"content": content, **kw})
    ).fact


def age(tenant, fact: Fact, days: int, **fields) -> None:
    """Make a fact look stored (and last retrieved) `days` ago."""
    moment = timezone.now() - timedelta(days=days)
    with tenant_scope(tenant):
        Fact.objects.for_tenant(tenant).filter(pk=fact.pk).update(created_at=moment, **fields)


def fresh(tenant, fact: Fact) -> Fact | None:
    with tenant_scope(tenant):
        return Fact.objects.for_tenant(tenant).filter(pk=fact.pk).first()


def run_now(tenant, actor) -> RetentionRun:
    run, created = retention_run_start(tenant=tenant, actor=actor)
    assert created
    return retention_run_execute(tenant=tenant, run_id=run.pk)


# -- importance --------------------------------------------------------------------------------


def test_importance_follows_feedback_use_and_recency(tenant, owner_actor) -> None:
    rated = add(tenant, owner_actor, "Alice's build server is orion")
    unrated = add(tenant, owner_actor, "Bob's editor is helix")
    doubted = add(tenant, owner_actor, "Carol's laptop is a thinkpad")
    old = add(tenant, owner_actor, "Dave ran the 2019 migration")
    age(tenant, old, 200)
    importance_recompute(tenant=tenant)
    services.fact_feedback(tenant=tenant, fact_id=rated.pk, helpful=True, actor=owner_actor)
    services.fact_feedback(tenant=tenant, fact_id=doubted.pk, helpful=False, actor=owner_actor)
    values = {f.pk: fresh(tenant, f).importance for f in (rated, unrated, doubted, old)}
    # Feedback recomputes at once: helpful rises above unrated, unhelpful sinks below it.
    assert values[rated.pk] > values[unrated.pk] > values[doubted.pk]
    assert values[unrated.pk] > values[old.pk]  # not used for 200 days
    assert all(0 <= v < 1 for v in values.values())
    # New facts get the formula's value without a query; the database's agrees.
    assert importance_recompute(tenant=tenant, fact_ids=[unrated.pk]) == 0


def test_importance_is_recomputed_on_each_tenants_own_schedule(
    tenant, other_tenant, owner_actor, system_actor
) -> None:
    from facts.importance import importance_due, importance_recompute_due

    fact = add(tenant, owner_actor, "Erin rotates the TLS certificates")
    add(other_tenant, system_actor, "Globex rotates nothing")
    start = timezone.now()
    assert {tenant.pk, other_tenant.pk} <= set(importance_due(now=start))  # never recomputed
    assert importance_recompute_due(tenant=tenant, now=start) is not None
    assert importance_recompute_due(tenant=tenant, now=start) is None  # this round is taken
    assert tenant.pk not in importance_due(now=start + timedelta(minutes=59))
    assert tenant.pk in importance_due(now=start + timedelta(hours=1))  # the default: hourly
    retention_policy_update(
        tenant=tenant, actor=owner_actor, changes=retention_changes({"importance_every_hours": 6})
    )
    assert tenant.pk not in importance_due(now=start + timedelta(hours=5))
    assert other_tenant.pk in importance_due(now=start + timedelta(hours=5))
    # Six hours on, a fact unused for 200 days has lost importance to recency.
    age(tenant, fact, 200)
    before = fresh(tenant, fact).importance
    assert importance_recompute_due(tenant=tenant, now=start + timedelta(hours=6)) == 1
    assert fresh(tenant, fact).importance < before
    with pytest.raises(Exception, match="importance_every_hours"):
        retention_changes({"importance_every_hours": 0})


def test_pin_puts_a_fact_first_in_the_known_facts_and_lists(tenant, owner_actor) -> None:
    facts = [add(tenant, owner_actor, f"Project note number {i} about deploys") for i in range(3)]
    for fact in facts[1:]:
        services.fact_feedback(tenant=tenant, fact_id=fact.pk, helpful=True, actor=owner_actor)
    pinned = services.fact_update(
        tenant=tenant,
        fact_id=facts[0].pk,
        actor=owner_actor,
        changes=fact_changes({"pinned": True}),
    )
    assert pinned.pinned and pinned.importance == 1.0
    block = context_build(tenant=tenant)
    assert block.levels["important"][0] == facts[0].pk
    page = fact_list(tenant=tenant, order="importance", limit=2)
    assert page.facts[0].pk == facts[0].pk and page.next_cursor
    rest = fact_list(tenant=tenant, order="importance", limit=2, cursor=page.next_cursor)
    assert [f.pk for f in page.facts + rest.facts] == [facts[0].pk, facts[2].pk, facts[1].pk]
    history = fact_history(tenant=tenant, fact_id=facts[0].pk)
    assert history[-1].action == "update" and history[-1].after == {"pinned": True}
    unpinned = services.fact_update(
        tenant=tenant,
        fact_id=facts[0].pk,
        actor=owner_actor,
        changes=fact_changes({"pinned": False}),
    )
    assert not unpinned.pinned and unpinned.importance < 1


def test_importance_and_pins_leave_recalls_order_alone(tenant, owner_actor) -> None:
    from retrieval.inputs import recall_query
    from retrieval.search import recall_search

    facts = [
        add(tenant, owner_actor, text)
        for text in (
            "The release train leaves every Tuesday",
            "The release notes live in the wiki",
            "Tuesday lunch is at the canteen",
        )
    ]

    def order() -> list[int]:
        query = recall_query({"query": "when does the release train leave on Tuesday"})
        return [hit.fact.pk for hit in recall_search(tenant=tenant, query=query).hits]

    before = order()
    assert set(before) == {f.pk for f in facts}
    last = before[-1]
    services.fact_update(
        tenant=tenant, fact_id=last, actor=owner_actor, changes=fact_changes({"pinned": True})
    )
    assert fresh(tenant, Fact(pk=last)).importance == 1.0  # trust, which recall reads, as it was
    assert order() == before


def test_pin_through_the_api_the_tools_and_the_fact_page(world, owner, auditor) -> None:
    from agenttools.mcp import Binding, tool_call
    from tenants.actors import Actor
    from tenants.models import ApiKey

    client = signed_in(owner)
    url = f"{BASE}/facts/{world.fact.pk}"
    assert client.patch(url, {"pin": True}, format="json").json()["pinned"] is True
    bad = client.patch(url, {"pin": "maybe"}, format="json")
    assert bad.status_code == 400 and "pin" in json.dumps(bad.json())
    listed = client.get(f"{BASE}/facts?order=importance").json()
    assert listed["results"][0]["id"] == world.fact.pk
    assert client.get(f"{BASE}/facts?order=loudest").status_code == 400

    with tenant_scope(world.tenant):
        key = ApiKey.objects.for_tenant(world.tenant).get(name="hermes")
    agent = bearer(world.tokens["write"])

    def fact_store(arguments: dict) -> Any:
        return agent.post(
            "/api/v1/agent/tools/fact_store",
            {"arguments": arguments, "session_id": "s1"},
            format="json",
        )

    added = fact_store({"action": "add", "content": "Deploys need two approvals", "pin": True})
    added = added.json()
    assert fresh(world.tenant, Fact(pk=added["fact_id"])).pinned
    fact_store({"action": "update", "fact_id": added["fact_id"], "pin": False})
    assert not fresh(world.tenant, Fact(pk=added["fact_id"])).pinned
    refused = fact_store({"action": "update", "fact_id": added["fact_id"], "pin": 3})
    assert refused.status_code == 400 and "error" in refused.json()
    mcp = Binding(
        tenant=world.tenant, actor=Actor.api_key(key), rights=frozenset({"read", "write"})
    )
    stored = tool_call(mcp, "memory_store", {"content": "Staging is rebuilt on Mondays",
                                             "pin": True}).payload  # fmt: skip
    assert fresh(world.tenant, Fact(pk=stored["fact_id"])).pinned

    page = Client()
    page.force_login(owner)
    other = world.other_fact.pk
    response = page.post(f"/t/acme/facts/{world.fact.pk}/pin", {"pinned": "false"})
    assert response.status_code == 302 and not fresh(world.tenant, world.fact).pinned
    assert "fact-pin" in page.get(f"/t/acme/facts/{world.fact.pk}/").content.decode()
    assert page.post(f"/t/acme/facts/{other}/pin", {"pinned": "true"}).status_code == 404
    reader = Client()
    reader.force_login(auditor)
    assert reader.post(f"/t/acme/facts/{world.fact.pk}/pin", {"pinned": "true"}).status_code == 403


# -- retention ---------------------------------------------------------------------------------


def test_a_run_archives_into_a_bundle_then_purges_everywhere(
    tenant, other_tenant, owner_actor, system_actor, archives
) -> None:
    stale = add(tenant, owner_actor, "Zed's old phone number is 555-0199")
    doubted = add(tenant, owner_actor, "The office wifi password is hunter2", trust=0.1)
    kept = add(tenant, owner_actor, "Alice leads the platform team")
    pinned = add(tenant, owner_actor, "Never deploy on Fridays", pinned=True)
    foreign = add(other_tenant, system_actor, "Globex keeps everything forever")
    for fact in (stale, pinned):
        age(tenant, fact, 400)
    age(other_tenant, foreign, 400)
    with tenant_scope(tenant):
        links = FactEntity.objects.for_tenant(tenant).filter(fact_id=stale.pk).count()
    retention_policy_update(
        tenant=tenant,
        actor=owner_actor,
        changes=retention_changes(
            {
                "archive_after_days_unretrieved": 365,
                "archive_below_trust": 0.3,
                "purge_archived_after_days": 30,
            }
        ),
    )
    dry = retention_dry_run(tenant=tenant, actor=owner_actor)
    assert dry.counts["archive"] == 2 and fresh(tenant, stale).status == Status.ACTIVE

    run = run_now(tenant, owner_actor)
    assert run.status == "done"
    assert (run.counts["unretrieved"], run.counts["low_trust"], run.counts["purged"]) == (1, 1, 0)
    assert fresh(tenant, kept).status == fresh(tenant, pinned).status == Status.ACTIVE
    assert fresh(other_tenant, foreign).status == Status.ACTIVE  # another tenant: untouched
    archived = fresh(tenant, stale)
    assert archived.status == Status.ARCHIVED and archived.archive_bundle
    bundle = bundle_open(archives / str(tenant.pk) / archived.archive_bundle)
    assert sorted(bundle.ids("fact")) == sorted([stale.pk, doubted.pk])
    assert {r.body["content"] for r in bundle.records()} >= {stale.content}
    [event] = [e for e in fact_history(tenant=tenant, fact_id=stale.pk) if e.action == "archive"]
    assert event.actor == "job:retention" and event.after["reason"] == "unretrieved"
    # Archived facts leave recall and the context.
    assert stale.pk not in context_build(tenant=tenant).fact_ids

    # Thirty-one days later the purge deletes them: rows, links, vectors, bundle, audit text.
    with tenant_scope(tenant):
        Fact.objects.for_tenant(tenant).filter(pk=stale.pk).update(
            archived_at=timezone.now() - timedelta(days=31)
        )
    second = run_now(tenant, owner_actor)
    assert second.counts["purged"] == 1
    assert fresh(tenant, stale) is None and fresh(tenant, doubted).status == Status.ARCHIVED
    with tenant_scope(tenant):
        assert not FactEntity.objects.for_tenant(tenant).filter(fact_id=stale.pk).exists()
        assert not FactVector.objects.for_tenant(tenant).filter(fact_id=stale.pk).exists()
    assert links  # it had entity links to lose
    survivor = bundle_open(archives / str(tenant.pk) / archived.archive_bundle)
    assert survivor.ids("fact") == [doubted.pk]
    history = fact_history(tenant=tenant, fact_id=stale.pk)
    assert [e.action for e in history] == ["create", "archive", "purge"]
    assert history[-1].actor == "job:retention"
    assert "555-0199" not in json.dumps([[e.before, e.after] for e in history])
    _nowhere(tenant, "555-0199", archives)


def _nowhere(tenant, text: str, archives: Path) -> None:
    """`text` is in no table of the database and no live bundle file."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' "
            "AND data_type IN ('text', 'character varying', 'jsonb', 'json', 'tsvector') "
            "GROUP BY table_name"
        )
        tables = [row[0] for row in cursor.fetchall()]
    hits = []
    with tenant_scope(tenant), connection.cursor() as cursor:
        for table in tables:
            cursor.execute(
                f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE %s',  # noqa: S608
                [f"%{text}%"],
            )
            if cursor.fetchone()[0]:
                hits.append(table)
    assert hits == []
    for path in archives.rglob("*.manifest.json"):
        reader = bundle_open(path)
        assert all(text not in json.dumps(r.body) for r in reader.records())


def test_the_fact_pages_purge_also_takes_the_fact_out_of_its_bundle(
    tenant, owner_actor, archives
) -> None:
    fact = add(tenant, owner_actor, "Mallory's home address is 12 Elm Street", trust=0.1)
    other = add(tenant, owner_actor, "Trent's address is 4 Oak Lane", trust=0.1)
    retention_policy_update(
        tenant=tenant, actor=owner_actor, changes=retention_changes({"archive_below_trust": 0.3})
    )
    run_now(tenant, owner_actor)
    services.fact_restore(tenant=tenant, fact_id=fact.pk, actor=owner_actor)  # back, then purged
    services.fact_purge(tenant=tenant, fact_id=fact.pk, actor=owner_actor, reason="asked to")
    _nowhere(tenant, "12 Elm Street", archives)
    assert fresh(tenant, other).status == Status.ARCHIVED


def test_legal_hold_touches_nothing(tenant, owner_actor, archives) -> None:
    fact = add(tenant, owner_actor, "Evidence: the contract was signed on May 2", trust=0.1)
    age(tenant, fact, 400)
    retention_policy_update(
        tenant=tenant, actor=owner_actor,
        changes=retention_changes({"archive_after_days_unretrieved": 1, "archive_below_trust": 0.5,
                 "max_active_facts": 1, "purge_archived_after_days": 1, "legal_hold": True}),
    )  # fmt: skip
    assert retention_dry_run(tenant=tenant, actor=owner_actor).counts["archive"] == 0
    run = run_now(tenant, owner_actor)
    assert run.status == "done" and "legal hold" in run.note
    assert fresh(tenant, fact).status == Status.ACTIVE
    assert not archives.exists() or not any(archives.rglob("*"))
    with tenant_scope(tenant):
        Fact.objects.for_tenant(tenant).filter(pk=fact.pk).update(
            status=Status.ARCHIVED, archived_at=timezone.now() - timedelta(days=90)
        )
    run_now(tenant, owner_actor)
    assert fresh(tenant, fact).status == Status.ARCHIVED  # not purged either


def test_a_fact_archived_twice_is_purged_from_both_bundles(
    tenant, other_tenant, owner_actor, system_actor, archives
) -> None:
    fact = add(tenant, owner_actor, "The vault code is ZEBRA-4411", trust=0.1)
    theirs = add(other_tenant, system_actor, "The vault code is ZEBRA-4411", trust=0.1)
    retention_policy_update(
        tenant=tenant,
        actor=owner_actor,
        changes=retention_changes({"archive_below_trust": 0.3, "purge_archived_after_days": 30}),
    )
    first = run_now(tenant, owner_actor)
    services.fact_restore(tenant=tenant, fact_id=fact.pk, actor=owner_actor)
    second = run_now(tenant, owner_actor)  # archived again, into the second run's bundle
    assert first.counts["low_trust"] == second.counts["low_trust"] == 1
    assert len(list(archives.rglob("*.manifest.json"))) == 2
    with tenant_scope(tenant):
        Fact.objects.for_tenant(tenant).filter(pk=fact.pk).update(
            archived_at=timezone.now() - timedelta(days=31)
        )
    assert run_now(tenant, owner_actor).counts["purged"] == 1
    _nowhere(tenant, "ZEBRA-4411", archives)
    assert not any(archives.rglob("*.manifest.json"))  # both bundles held only it
    # The other tenant's fact of the same text, and the entities it names, are untouched.
    assert fresh(other_tenant, theirs).content == "The vault code is ZEBRA-4411"
    with tenant_scope(other_tenant):
        assert FactEntity.objects.for_tenant(other_tenant).filter(fact_id=theirs.pk).exists()


def test_a_damaged_bundle_stops_a_purge_and_says_which(world, owner, archives) -> None:
    """Its text could not be shown gone: nothing is purged, and the admin is told (503)."""
    fact = add(world.tenant, _actor(owner), "Dan's locker code is 7-7-19", trust=0.1)
    retention_policy_update(
        tenant=world.tenant,
        actor=_actor(owner),
        changes=retention_changes({"archive_below_trust": 0.3}),
    )
    run_now(world.tenant, _actor(owner))
    bundle = fresh(world.tenant, fact).archive_bundle
    index = archives / str(world.tenant.pk) / f"{bundle}.idx"
    index.write_bytes(index.read_bytes()[:-7])  # truncated
    answer = signed_in(owner).post(
        f"{BASE}/facts/{fact.pk}/purge", {"reason": "asked to"}, format="json"
    )
    assert answer.status_code == 503, answer.content
    assert answer.json()["code"] == "archive_damaged" and bundle in answer.json()["message"]
    page = Client()
    page.force_login(owner)
    shown = page.post(f"/t/acme/facts/{fact.pk}/purge", {"reason": "asked to"})
    assert shown.status_code == 503 and bundle in shown.content.decode()
    assert fresh(world.tenant, fact).status == Status.ARCHIVED  # not purged


def test_a_purge_takes_the_text_out_of_a_bundle_no_fact_names(
    tenant, owner_actor, archives
) -> None:
    """A run that failed after writing its bundle leaves one that its facts never came to name."""
    from facts.archive import archive_stem, fact_body
    from facts.bundles import BundleRecord, bundle_write

    fact = add(tenant, owner_actor, "Peggy's badge number is 88-1234")
    other = add(tenant, owner_actor, "Victor's desk is on floor 3")
    stem = archive_stem(tenant, "run9-00000")
    stem.parent.mkdir(parents=True, exist_ok=True)
    bundle_write(
        stem=stem,
        records=[
            BundleRecord("fact", f.pk, fact_body(fresh(tenant, f)), {}) for f in (fact, other)
        ],
        tenant=tenant.slug,
        purpose="archive",
    )
    assert fresh(tenant, fact).archive_bundle == ""
    services.fact_purge(tenant=tenant, fact_id=fact.pk, actor=owner_actor, reason="asked to")
    _nowhere(tenant, "88-1234", archives)
    assert bundle_open(stem).ids("fact") == [other.pk]


def test_legal_hold_refuses_a_purge_by_hand_and_the_tenants_deletion(
    world, owner, system_actor, archives
) -> None:
    from tenants.errors import InvalidInput
    from tenants.services import tenant_delete

    retention_policy_update(
        tenant=world.tenant, actor=_actor(owner), changes=retention_changes({"legal_hold": True})
    )
    url = f"{BASE}/facts/{world.fact.pk}/purge"
    refused = signed_in(owner).post(url, {"reason": "asked to"}, format="json")
    assert refused.status_code == 400 and "legal hold" in json.dumps(refused.json())
    page = Client()
    page.force_login(owner)
    shown = page.post(f"/t/acme/facts/{world.fact.pk}/purge", {"reason": "asked to"})
    assert shown.status_code == 400 and "legal hold" in shown.content.decode()
    with pytest.raises(InvalidInput, match="legal hold"):
        tenant_delete(tenant=world.tenant, actor=system_actor, confirm="acme")
    assert fresh(world.tenant, world.fact).status == Status.ACTIVE
    # Another tenant's hold is not this one's: Globex purges while Acme is held.
    services.fact_purge(
        tenant=world.other, fact_id=world.other_fact.pk, actor=system_actor, reason="asked to"
    )
    assert fresh(world.other, world.other_fact) is None
    # No scheduled run is started while the hold lasts (the page says "held").
    assert all(t != world.tenant.pk for t, _ in retention_sweep())
    retention_policy_update(
        tenant=world.tenant, actor=_actor(owner), changes=retention_changes({"legal_hold": False})
    )
    assert signed_in(owner).post(url, {"reason": "asked to"}, format="json").status_code == 200
    assert fresh(world.tenant, world.fact) is None
    assert [t for t, _ in retention_sweep() if t == world.tenant.pk] == [world.tenant.pk]


def test_the_cap_archives_the_least_important_first(tenant, owner_actor, archives) -> None:
    facts = [add(tenant, owner_actor, f"Runbook step {i} for the release") for i in range(4)]
    for fact in facts[2:]:
        services.fact_feedback(tenant=tenant, fact_id=fact.pk, helpful=True, actor=owner_actor)
    retention_policy_update(
        tenant=tenant, actor=owner_actor, changes=retention_changes({"max_active_facts": 2})
    )
    run = run_now(tenant, owner_actor)
    assert run.counts["over_limit"] == 2
    assert [fresh(tenant, f).status for f in facts] == ["archived", "archived", "active", "active"]


def test_a_run_is_claimed_once_and_one_runs_at_a_time(tenant, owner_actor, archives) -> None:
    run, created = retention_run_start(tenant=tenant, actor=owner_actor)
    again, created_again = retention_run_start(tenant=tenant, actor=owner_actor)
    assert created and not created_again and again.pk == run.pk
    assert retention_run_claim(tenant=tenant, run_id=run.pk) is not None
    assert retention_run_claim(tenant=tenant, run_id=run.pk) is None  # leased to the first
    with tenant_scope(tenant):
        RetentionRun.objects.for_tenant(tenant).filter(pk=run.pk).update(
            lease_until=timezone.now() - timedelta(seconds=1)
        )
    assert run.pk in [r for _, r in retention_sweep()]  # a dead worker's run is sent again
    assert retention_run_execute(tenant=tenant, run_id=run.pk).status == "done"
    assert retention_run_execute(tenant=tenant, run_id=run.pk) is None  # done: nothing again


def test_the_sweep_starts_runs_when_their_interval_has_passed(tenant, owner_actor) -> None:
    started = retention_sweep()
    assert [t for t, _ in started] == [tenant.pk]
    assert all(t != tenant.pk for t, _ in retention_sweep())  # queued a moment ago
    with tenant_scope(tenant):
        RetentionRun.objects.for_tenant(tenant).update(status="done")
    assert all(t != tenant.pk for t, _ in retention_sweep())  # not due for 24 hours
    retention_policy_update(
        tenant=tenant, actor=owner_actor, changes=retention_changes({"run_every_hours": 1})
    )
    with tenant_scope(tenant):
        RetentionRun.objects.for_tenant(tenant).update(
            created_at=timezone.now() - timedelta(hours=2)
        )
    assert [t for t, _ in retention_sweep()] == [tenant.pk]


def test_the_retention_page_runs_dry_and_now(world, owner, auditor, outsider, archives) -> None:
    client = Client()
    client.force_login(owner)
    retention_policy_update(
        tenant=world.tenant, actor=_actor(owner), changes=retention_changes({"max_active_facts": 1})
    )
    response = client.post("/t/acme/retention/run", {"dry_run": "true"}, follow=True)
    text = response.content.decode()
    assert "would archive 1" in text and "retention-run-table" in text
    assert fresh(world.tenant, world.fact).status == Status.ACTIVE
    response = client.post("/t/acme/retention/run", follow=True)
    assert "queued" in response.content.decode()
    reader = Client()
    reader.force_login(auditor)
    assert reader.post("/t/acme/retention/run").status_code == 403
    assert "retention-run-now" not in reader.get("/t/acme/retention/").content.decode()
    stranger = Client()
    stranger.force_login(outsider)
    assert stranger.post("/t/acme/retention/run").status_code == 404
    with tenant_scope(world.other):
        assert not RetentionRun.objects.for_tenant(world.other).exists()


def test_the_retention_page_shows_the_last_run_and_the_next(world, owner, archives) -> None:
    import re

    client = Client()
    client.force_login(owner)

    def shown() -> tuple[str, str]:
        text = client.get("/t/acme/retention/").content.decode()
        last = re.search(r'id="retention-last">([^<]*)<', text).group(1)
        upcoming = re.search(r'id="retention-next">([^<]*)<', text).group(1)
        return last.strip(), upcoming.strip()

    assert shown()[0] == "never"
    page = client.get("/t/acme/retention/").content.decode()
    assert 'id="importance-last">not yet<' in page
    saved = client.post(
        "/t/acme/retention/", {"importance_every_hours": "3", "run_every_hours": "24"}
    )
    assert saved.status_code == 302, saved.content.decode()[:2000]
    with tenant_scope(world.tenant):
        from tenants.models import RetentionPolicy

        assert RetentionPolicy.objects.for_tenant(world.tenant).get().importance_every_hours == 3
    retention_policy_update(
        tenant=world.tenant, actor=_actor(owner), changes=retention_changes({"run_every_hours": 6})
    )
    [(tenant_id, run_id)] = [(t, r) for t, r in retention_sweep() if t == world.tenant.pk]
    retention_run_execute(tenant=world.tenant, run_id=run_id)
    with tenant_scope(world.tenant):
        run = RetentionRun.objects.for_tenant(world.tenant).get(pk=run_id)
    local = timezone.localtime
    last, upcoming = shown()
    assert last == f"{local(run.created_at):%Y-%m-%d %H:%M} (done)"
    assert upcoming == f"{local(run.created_at + timedelta(hours=6)):%Y-%m-%d %H:%M}"
    retention_policy_update(
        tenant=world.tenant, actor=_actor(owner), changes=retention_changes({"legal_hold": True})
    )
    assert shown()[1] == "held (legal hold)"


def _actor(user):
    from tenants.actors import Actor

    return Actor.user(user)


def test_retention_runs_are_invisible_to_other_tenants(tenant, other_tenant, owner_actor) -> None:
    retention_dry_run(tenant=tenant, actor=owner_actor)
    with tenant_scope(other_tenant):
        assert not RetentionRun.objects.for_tenant(other_tenant).exists()
        with connection.cursor() as cursor:  # row-level security, without the ORM's filter
            cursor.execute("SELECT count(*) FROM facts_retentionrun")
            assert cursor.fetchone()[0] == 0


def test_the_audit_trail_refuses_every_change_but_a_purge_redaction(tenant, owner_actor) -> None:
    from django.db import DatabaseError, transaction

    fact = add(tenant, owner_actor, "Peggy's salary is 90k")
    with tenant_scope(tenant):
        event = FactEvent.objects.for_tenant(tenant).get(fact_id=fact.pk)
        for change in ({"after": {"content": "[purged]"}}, {"actor": "someone else"}):
            with pytest.raises(DatabaseError), transaction.atomic():
                FactEvent.objects.for_tenant(tenant).filter(pk=event.pk).update(**change)
    services.fact_purge(tenant=tenant, fact_id=fact.pk, actor=owner_actor, reason="asked")
    with tenant_scope(tenant):
        event.refresh_from_db()
        assert event.after["content"] == "[purged]" and event.actor == str(owner_actor)
        with pytest.raises(DatabaseError), transaction.atomic():
            FactEvent.objects.for_tenant(tenant).filter(pk=event.pk).update(actor="x")


def test_deleting_a_tenant_takes_its_archives_too(
    tenant, owner_actor, system_actor, archives, django_capture_on_commit_callbacks
) -> None:
    from tenants.inputs import retention_changes
    from tenants.services import tenant_delete

    add(tenant, owner_actor, "A doubtful note", trust=0.1)
    retention_policy_update(
        tenant=tenant, actor=owner_actor, changes=retention_changes({"archive_below_trust": 0.3})
    )
    run_now(tenant, owner_actor)
    assert any((archives / str(tenant.pk)).iterdir())
    with django_capture_on_commit_callbacks(execute=True):
        record = tenant_delete(tenant=tenant, actor=system_actor, confirm="acme")
    assert record.counts["facts_fact"] == 1 and record.counts["facts_retentionrun"] == 1
    assert not (archives / str(tenant.pk)).exists()
    # Nothing of it is left in any table, audit trails included.
    from django.apps import apps

    from tenants.models import TenantOwned

    with tenant_scope(tenant), connection.cursor() as cursor:
        for model in apps.get_models():
            if issubclass(model, TenantOwned):
                cursor.execute(f"SELECT count(*) FROM {model._meta.db_table}")  # noqa: S608
                assert cursor.fetchone()[0] == 0, model._meta.db_table
