"""The tamper-evident audit chain (docs/audit-chain.md): the database chains every audit event;
`audit verify` names the first event an owner edited or deleted; a digest taken earlier fails
against a chain rewritten after it, and holds across a lawful purge."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections, transaction

from facts import services
from facts.audit_chain import (
    _WALK,
    ZERO,
    Digest,
    audit_chain_verify,
    audit_digest_current,
    audit_digests_publish,
    digest_parse,
)
from facts.inputs import fact_changes, fact_draft, purge_reason
from facts.models import FactEvent
from operations.roles import as_owner
from tenants.errors import InvalidInput
from tenants.models import AuditDigest, TenantEvent
from tenants.scope import tenant_scope
from tests.api_fixtures import signed_in


def _add(tenant, actor, text: str):
    return services.fact_add(tenant=tenant, actor=actor, draft=fact_draft({"content": text})).fact


def _events(tenant) -> list[tuple[str, int, int]]:
    """(table, id, position) of every audit event of the tenant, in chain order."""
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'facts_factevent', id, chain_seq FROM facts_factevent "
            "UNION ALL SELECT 'facts_entityevent', id, chain_seq FROM facts_entityevent "
            "UNION ALL SELECT 'tenants_tenantevent', id, chain_seq FROM tenants_tenantevent "
            "ORDER BY 3"
        )
        return cursor.fetchall()


@contextmanager
def as_the_owner(*tables: str) -> Iterator[object]:
    """A cursor of the database's owner, its guard and chain triggers on `tables` off, as an
    owner who wants to rewrite the trail would have them (committed at the end)."""
    with as_owner(), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('app.cross_tenant', 'on', true)")
        for table in tables:
            cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        yield cursor
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no check pending at ENABLE
        for table in tables:
            cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")


def _rehash_from(cursor, tenant, position: int) -> None:
    """What a careful forger does after an edit: compute every hash from `position` on again
    (and the head's), so that the chain is whole once more."""
    cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant.pk)])
    cursor.execute(_WALK, {"tenant": tenant.pk})
    previous = ZERO
    for row in cursor.fetchall():
        source, event_id, seq, stored, record = row[:5]
        link = hashlib.sha256(previous + hashlib.sha256(record.encode()).digest()).digest()
        if seq >= position and bytes(stored) != link:
            table = {"fact": "facts_factevent", "entity": "facts_entityevent"}.get(
                source, "tenants_tenantevent"
            )
            cursor.execute(f"UPDATE {table} SET chain_hash = %s WHERE id = %s", [link, event_id])  # noqa: S608
        previous = link
    cursor.execute(
        "UPDATE tenants_auditchainhead SET hash = %s WHERE tenant_id = %s", [previous, tenant.pk]
    )


@pytest.mark.django_db
def test_every_audit_event_is_chained_and_the_chain_verifies(tenant, owner, owner_actor) -> None:
    fact = _add(tenant, owner_actor, "Alice drinks green tea")
    services.fact_feedback(tenant=tenant, fact_id=fact.pk, helpful=True, actor=owner_actor)
    events = _events(tenant)
    tables = {table for table, _, _ in events}
    assert {"facts_factevent", "tenants_tenantevent"} <= tables
    assert [seq for _, _, seq in events] == list(range(1, len(events) + 1))
    report = audit_chain_verify(tenant=tenant)
    assert report.ok and report.broken is None and report.count == len(events)
    assert str(audit_digest_current(tenant=tenant)) == f"{len(events)}:{report.head}"


@pytest.mark.django_db
def test_the_application_cannot_choose_a_place_or_hash(tenant, system_actor) -> None:
    with tenant_scope(tenant):
        before = audit_digest_current(tenant=tenant).count
        event = FactEvent.objects.create(
            tenant=tenant, fact_id=None, action="export", actor=str(system_actor),
            at="2026-01-01T00:00:00Z", chain_seq=1, chain_hash=b"x" * 32,
            content_salt=b"s", content_digest=b"d",
        )  # fmt: skip
        event.refresh_from_db()
    assert event.chain_seq == before + 1 and bytes(event.chain_hash) != b"x" * 32
    assert event.content_salt is None and event.content_digest is None  # no fact text in it
    assert audit_chain_verify(tenant=tenant).ok


@pytest.mark.django_db(transaction=True)
def test_an_event_the_owner_edited_is_named(tenant, owner, owner_actor) -> None:
    fact = _add(tenant, owner_actor, "The deploy key is in the blue vault")
    services.fact_feedback(tenant=tenant, fact_id=fact.pk, helpful=True, actor=owner_actor)
    with tenant_scope(tenant):
        created = FactEvent.objects.for_tenant(tenant).get(fact_id=fact.pk, action="create")
    with as_the_owner("facts_factevent") as cursor:
        cursor.execute(
            "UPDATE facts_factevent SET actor = 'job:retention' WHERE id = %s", [created.pk]
        )
    report = audit_chain_verify(tenant=tenant)
    assert not report.ok
    assert (report.broken.source, report.broken.event_id) == ("fact", created.pk)
    assert report.broken.position == created.chain_seq
    assert "does not match its hash" in report.broken.reason
    assert report.count == created.chain_seq - 1


@pytest.mark.django_db(transaction=True)
def test_an_edited_fact_text_is_named_even_with_its_hash_made_again(
    tenant, owner, owner_actor
) -> None:
    fact = _add(tenant, owner_actor, "Budget for Q3 is 40k")
    with tenant_scope(tenant):
        created = FactEvent.objects.for_tenant(tenant).get(fact_id=fact.pk, action="create")
    with as_the_owner("facts_factevent") as cursor:
        cursor.execute(
            "UPDATE facts_factevent SET after = jsonb_set(after, '{content}', "
            "'\"Budget for Q3 is 90k\"') WHERE id = %s",
            [created.pk],
        )
        _rehash_from(cursor, tenant, created.chain_seq)
    report = audit_chain_verify(tenant=tenant)
    assert (report.broken.event_id, report.broken.reason) == (
        created.pk,
        "its fact text was changed",
    )


@pytest.mark.django_db(transaction=True)
def test_an_event_the_owner_deleted_is_named(tenant, owner, owner_actor) -> None:
    first = _add(tenant, owner_actor, "Carol owns the billing service")
    second = _add(tenant, owner_actor, "Dan owns the search service")
    with tenant_scope(tenant):
        gone = FactEvent.objects.for_tenant(tenant).get(fact_id=first.pk, action="create")
        after = FactEvent.objects.for_tenant(tenant).get(fact_id=second.pk, action="create")
    assert after.chain_seq == gone.chain_seq + 1
    with as_the_owner("facts_factevent") as cursor:
        cursor.execute("DELETE FROM facts_factevent WHERE id = %s", [gone.pk])
    report = audit_chain_verify(tenant=tenant)
    assert (report.broken.position, report.broken.event_id) == (gone.chain_seq, after.pk)
    assert f"positions {gone.chain_seq} to {gone.chain_seq} are missing" in report.broken.reason
    with pytest.raises(CommandError):
        call_command("audit", "verify", tenant.slug)


@pytest.mark.django_db(transaction=True)
def test_the_newest_events_deleted_are_found_by_the_head(tenant, owner, owner_actor) -> None:
    _add(tenant, owner_actor, "Erin joined the platform team")
    with tenant_scope(tenant):
        newest = FactEvent.objects.for_tenant(tenant).order_by("-chain_seq").first()
    with as_the_owner("facts_factevent") as cursor:
        cursor.execute("DELETE FROM facts_factevent WHERE id = %s", [newest.pk])
    report = audit_chain_verify(tenant=tenant)
    assert not report.ok and report.broken.position == newest.chain_seq
    assert "events were removed" in report.broken.reason


@pytest.mark.django_db(transaction=True)
def test_a_digest_taken_earlier_fails_against_a_rewritten_chain(
    tenant, owner, owner_actor, capsys
) -> None:
    fact = _add(tenant, owner_actor, "The on-call phone is 555-0100")
    call_command("audit", "digest", tenant.slug)
    kept = digest_parse(capsys.readouterr().out.split()[1])
    _add(tenant, owner_actor, "Frank is on call in May")
    with tenant_scope(tenant):
        created = FactEvent.objects.for_tenant(tenant).get(fact_id=fact.pk, action="create")
    assert audit_chain_verify(tenant=tenant, digest=kept).ok
    # The owner changes who made the fact, then computes every hash after it again.
    with as_the_owner("facts_factevent") as cursor:
        cursor.execute(
            "UPDATE facts_factevent SET actor = 'job:retention' WHERE id = %s", [created.pk]
        )
        _rehash_from(cursor, tenant, created.chain_seq)
    rewritten = audit_chain_verify(tenant=tenant)
    assert rewritten.ok, "a careful rewrite is a whole chain again: only a kept digest tells"
    report = audit_chain_verify(tenant=tenant, digest=kept)
    assert not report.ok and report.digest_ok is False
    assert f"event {kept.count} no longer has the digest's hash" in report.digest_problem
    call_command("audit", "verify", tenant.slug)  # the chain alone: fine
    with pytest.raises(CommandError):
        call_command("audit", "verify", tenant.slug, "--digest", str(kept))
    assert "does not hold" in capsys.readouterr().out
    # A digest of the rewritten chain holds against it, and the removal of events is told.
    now = audit_digest_current(tenant=tenant)
    assert audit_chain_verify(tenant=tenant, digest=now).ok
    longer = Digest(count=now.count + 3, head=now.head)
    assert "events were removed" in audit_chain_verify(tenant=tenant, digest=longer).digest_problem


@pytest.mark.django_db
def test_a_lawful_purge_keeps_the_chain_and_earlier_digests(tenant, owner, owner_actor) -> None:
    fact = _add(tenant, owner_actor, "Grace's home address is 12 Elm Street")
    services.fact_update(
        tenant=tenant, fact_id=fact.pk, actor=owner_actor,
        changes=fact_changes({"content": "Grace's home address is 14 Elm Street"}),
    )  # fmt: skip
    kept = audit_digest_current(tenant=tenant)
    services.fact_purge(
        tenant=tenant, fact_id=fact.pk, actor=owner_actor, reason=purge_reason("asked to forget")
    )
    with tenant_scope(tenant):
        rows = list(FactEvent.objects.for_tenant(tenant).filter(fact_id=fact.pk).order_by("pk"))
    assert "Elm Street" not in json.dumps([[e.before, e.after] for e in rows])
    redacted = [e for e in rows if e.content_digest is not None]
    assert redacted and all(e.content_salt is None for e in redacted), "the salt is forgotten"
    report = audit_chain_verify(tenant=tenant, digest=kept)
    assert report.ok and report.digest_ok


@pytest.mark.django_db(transaction=True)
def test_a_text_taken_out_without_a_purge_is_named(tenant, owner, owner_actor) -> None:
    fact = _add(tenant, owner_actor, "Heidi signed the contract")
    with tenant_scope(tenant):
        created = FactEvent.objects.for_tenant(tenant).get(fact_id=fact.pk, action="create")
    with as_the_owner("facts_factevent") as cursor:
        cursor.execute(
            "UPDATE facts_factevent SET after = mnemosyne_redact_content(after), "
            "content_salt = NULL WHERE id = %s",
            [created.pk],
        )
    report = audit_chain_verify(tenant=tenant)
    assert report.broken.event_id == created.pk
    assert "no purge of the fact follows" in report.broken.reason


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_get_one_order(tenant, owner_actor) -> None:
    """Four threads, each with its own connection, add facts to one tenant at once: one chain,
    no position twice, none missing."""
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(15):
                _add(tenant, owner_actor, f"Writer {n} stored fact number {i}")
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    events = _events(tenant)
    assert [seq for _, _, seq in events] == list(range(1, len(events) + 1))
    assert len([e for e in events if e[0] == "facts_factevent"]) >= 60
    assert audit_chain_verify(tenant=tenant).ok


@pytest.mark.django_db
def test_the_sweep_publishes_a_digest_when_the_chain_moved(tenant, other_tenant, caplog) -> None:
    caplog.set_level("INFO", logger="facts.audit_chain")
    assert audit_digests_publish() == 2  # both tenants have their creation event
    assert audit_digests_publish() == 0  # nothing moved
    with tenant_scope(tenant):
        TenantEvent.objects.create(tenant=tenant, action="tenant_rename", actor="job:tests")
        [row] = AuditDigest.objects.for_tenant(tenant).all()
    assert audit_digests_publish() == 1
    assert f"audit digest tenant={tenant.slug} count={row.count} head={row.head}" in caplog.text
    with tenant_scope(tenant):
        newest = AuditDigest.objects.for_tenant(tenant).order_by("-id").first()
    assert newest.count == row.count + 1 and newest.reason == "schedule"


@pytest.mark.django_db
def test_digests_are_checked_for_form() -> None:
    assert digest_parse(f"3:{'ab' * 32}") == Digest(count=3, head="ab" * 32)
    assert digest_parse("0:") == Digest(count=0, head="")
    for bad in ("", "3", "x:ab", f"3:{'ab' * 31}", "0:" + "ab" * 32):
        with pytest.raises(InvalidInput, match="digest"):
            digest_parse(bad)


@pytest.mark.django_db
def test_the_export_ends_with_the_digest_which_verifies(world, auditor) -> None:
    response = signed_in(auditor).get("/api/v1/tenants/acme/audit/export?format=jsonl")
    assert response.status_code == 200
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    last = rows[-1]
    assert last["source"] == "digest" and last["after"]["count"] == last["id"]
    assert audit_chain_verify(tenant=world.tenant, digest=digest_parse(last["target"])).ok
    csv = signed_in(auditor).get("/t/acme/audit/export.csv")
    tail = b"".join(csv.streaming_content).decode().strip().splitlines()[-1]
    assert (
        tail.startswith("digest,") and f":{audit_digest_current(tenant=world.tenant).head}" in tail
    )


@pytest.mark.django_db
def test_auditors_verify_through_the_api_and_the_page(world, auditor, outsider) -> None:
    client = signed_in(auditor)
    answer = client.get("/api/v1/tenants/acme/audit/verify").json()
    assert answer["ok"] is True and answer["first_bad"] is None and answer["verified_events"] > 0
    kept = answer["head"]
    answer = client.get("/api/v1/tenants/acme/audit/verify", {"digest": kept}).json()
    assert answer["digest"] == {"digest": kept, "holds": True, "problem": None}
    wrong = f"{kept.split(':')[0]}:{'0' * 64}"
    answer = client.get("/api/v1/tenants/acme/audit/verify", {"digest": wrong}).json()
    assert answer["ok"] is False and answer["digest"]["holds"] is False
    bad = client.get("/api/v1/tenants/acme/audit/verify", {"digest": "nonsense"})
    assert bad.status_code == 400 and "digest" in bad.json()["message"]
    assert signed_in(outsider).get("/api/v1/tenants/acme/audit/verify").status_code == 404
    page = client.get("/t/acme/audit/verify", {"digest": wrong})
    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="chain-ok"' in text and 'id="digest-fails"' in text
    assert client.get("/t/acme/audit/verify", {"digest": "x"}).status_code == 400
