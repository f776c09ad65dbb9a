"""An open conflict in the context block: both sides from the reader's own tenant only, shown as
soon as the conflict is raised, and no question about conflicts asked when none is open."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from facts import services as fact_services
from facts.inputs import fact_draft
from facts.models import Conflict
from retrieval.context import context_build, context_cached
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _add(tenant, actor, content: str, scope: str = "user:alice"):
    return fact_services.fact_add(
        tenant=tenant, actor=actor, draft=fact_draft({"content": content, "scope": scope})
    ).fact


def _open(tenant, a, b) -> Conflict:
    first, second = sorted((a, b), key=lambda f: f.pk)
    with tenant_scope(tenant):
        return Conflict.objects.for_tenant(tenant).create(
            tenant=tenant, fact_a=first, fact_b=second, reason="value", score=0.9
        )


def _conflict_line(text: str) -> str:
    return next((li for li in text.splitlines() if "Unresolved conflict" in li), "")


def test_a_conflict_raised_after_a_block_was_cached_shows_at_once(tenant, system_actor) -> None:
    older = _add(tenant, system_actor, "The launch is on the 3rd.")
    newer = _add(tenant, system_actor, "The launch slipped to the 10th.")
    before = context_cached(tenant=tenant, scope="user:alice")
    assert _conflict_line(before.text) == ""
    _open(tenant, older, newer)  # as the conflict check raises it: no audit event yet
    after = context_cached(tenant=tenant, scope="user:alice")
    line = _conflict_line(after.text)
    assert "The launch slipped to the 10th." in line and "The launch is on the 3rd." in line


def test_another_tenants_side_of_a_conflict_is_never_shown(
    tenant, other_tenant, system_actor
) -> None:
    """Both tenants have open conflicts over similar words; each block shows its own sides
    only. A conflict row of Globex's that points at Acme's fact (a forged insert by the
    runtime role) is refused by the database."""
    secret = _add(tenant, system_actor, "Acme's launch code is PLUM-7.")
    _open(tenant, secret, _add(tenant, system_actor, "Acme's launch code is PEAR-2."))
    mine = _add(other_tenant, system_actor, "Globex's launch code is KIWI-3.")
    theirs = _add(other_tenant, system_actor, "Globex's launch code is FIG-9.")
    with pytest.raises(IntegrityError), transaction.atomic():
        with tenant_scope(other_tenant):
            Conflict.objects.for_tenant(other_tenant).create(
                tenant=other_tenant, fact_a=secret, fact_b=mine, reason="value", score=0.9
            )
        connection.cursor().execute("SET CONSTRAINTS ALL IMMEDIATE")
    connection.cursor().execute("SET CONSTRAINTS ALL DEFERRED")
    _open(other_tenant, mine, theirs)
    for block in (
        context_build(tenant=other_tenant, scope="user:alice"),
        context_cached(tenant=other_tenant, scope="user:alice"),
        context_cached(tenant=other_tenant, scope="user:alice", query="What is the launch code?"),
    ):
        assert "PLUM-7" not in block.text and secret.pk not in block.fact_ids
        assert "KIWI-3" in _conflict_line(block.text) and "FIG-9" in _conflict_line(block.text)
    acme = _conflict_line(context_cached(tenant=tenant, scope="user:alice").text)
    assert "PLUM-7" in acme and "PEAR-2" in acme and "Globex" not in acme


def test_no_conflict_open_no_question_about_conflicts(tenant, system_actor) -> None:
    _add(tenant, system_actor, "Alice drinks green tea.")
    _add(tenant, system_actor, "Alice rides to work.")
    with CaptureQueriesContext(connection) as asked:
        block = context_cached(tenant=tenant, scope="user:alice")
    assert "Alice drinks green tea." in block.text
    about_conflicts = [q["sql"] for q in asked.captured_queries if '"facts_conflict"' in q["sql"]]
    assert about_conflicts == [], about_conflicts
