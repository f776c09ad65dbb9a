"""Embedding is nudged once per tenant and transaction, not once per fact: a bulk import must
not flood the broker (each message waits its turn, heartbeats included)."""

from __future__ import annotations

import json

import pytest

from facts.inputs import fact_draft
from facts.services import fact_add, fact_import
from tests.helpers import tasks_sent_on_commit

pytestmark = pytest.mark.django_db


def _embedding_nudges(callbacks: list) -> list[int]:
    return tasks_sent_on_commit(callbacks, "facts.tasks.facts_embed_pending")


def test_an_import_of_many_lines_sends_one_embedding_message(
    tenant, system_actor, django_capture_on_commit_callbacks
) -> None:
    lines = [json.dumps({"content": f"the ferry leaves at {h}:00 on day {h}"}) for h in range(40)]
    with django_capture_on_commit_callbacks() as callbacks:
        report = fact_import(tenant=tenant, lines=lines, actor=system_actor)
    assert report.counts["added"] == 40
    assert _embedding_nudges(callbacks) == [tenant.pk]


def test_two_tenants_in_one_transaction_get_one_message_each(
    tenant, other_tenant, system_actor, django_capture_on_commit_callbacks
) -> None:
    from django.db import transaction

    from tenants.scope import tenant_scope

    with django_capture_on_commit_callbacks() as callbacks, transaction.atomic():
        for owner in (tenant, other_tenant, tenant):
            with tenant_scope(owner):
                fact_add(
                    tenant=owner,
                    actor=system_actor,
                    draft=fact_draft({"content": f"{owner.slug} likes tea"}),
                )
    assert sorted(_embedding_nudges(callbacks)) == sorted([tenant.pk, other_tenant.pk])


def test_a_refused_line_does_not_take_the_message_of_the_others_with_it(
    tenant, system_actor, django_capture_on_commit_callbacks
) -> None:
    # The first line's savepoint is rolled back; the nudge of the second must still be sent.
    lines = ['{"content": ""}', json.dumps({"content": "the harbour opens at six"})]
    with django_capture_on_commit_callbacks() as callbacks:
        report = fact_import(tenant=tenant, lines=lines, actor=system_actor)
    assert [line.status for line in report.lines] == ["error", "added"]
    assert _embedding_nudges(callbacks) == [tenant.pk]


def test_facts_stored_one_by_one_send_a_message_or_two_per_window_not_one_each(
    tenant, monkeypatch
) -> None:
    """Each fact stored alone is its own transaction; a message each left a worker 1,000 nudges
    with nothing to do. One goes at once, one more at the window's end covers the rest."""
    import time

    from facts.tasks import facts_embed_pending
    from tenants.jobs import job_send_coalesced

    sent: list[float] = []
    monkeypatch.setattr(
        facts_embed_pending, "apply_async", lambda args, kwargs=None, **options: sent.append(
            options.get("countdown", 0.0)
        )
    )  # fmt: skip
    for _ in range(200):
        job_send_coalesced("facts.tasks.facts_embed_pending", tenant.pk, window=0.3)
    assert len(sent) == 2
    assert sent[0] == 0.0
    assert 0 < sent[1] <= 0.3  # starts after the last call: it embeds what they stored
    time.sleep(0.7)  # both windows over: the next fact's message goes at once
    job_send_coalesced("facts.tasks.facts_embed_pending", tenant.pk, window=0.3)
    assert sent[2:] == [0.0]
