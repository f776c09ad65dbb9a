"""Alias suggestions: which names are offered as one person, accepting (a merge, audited) and
dismissing (remembered) them on the entities page, and never another tenant's entities."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from facts import curation
from facts.aliases import alias_dismiss, alias_suggestions
from facts.inputs import fact_draft
from facts.models import EntityEvent
from facts.selectors.entities import entity_get, entity_list
from facts.services import fact_add
from tenants.errors import NotFound
from tenants.models import TenantEvent
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _add(tenant, actor, text: str, scope: str = "team:infra") -> None:
    fact_add(tenant=tenant, actor=actor, draft=fact_draft({"content": text, "scope": scope}))


def _entity(tenant, name: str):
    return next(e for e in entity_list(tenant=tenant, query=name).entities if e.name == name)


def _pairs(tenant) -> set[tuple[str, str]]:
    return {(s.entity.name, s.other.name) for s in alias_suggestions(tenant=tenant)}


@pytest.fixture
def team(tenant, system_actor):
    for text in (
        "王建国负责明年的预算。",
        "老王下周去上海出差。",
        "王总说预算要再砍一成。",
        "小王今天迟到了。",
        "Bob Smith leads the release review.",
        "Bob fixed the build on Friday.",
        "Dr. Smith signed the contract.",
    ):
        _add(tenant, system_actor, text)
    # 李娜 and 老李 are never named in one scope: nothing connects them.
    _add(tenant, system_actor, "李娜在北京开会。", scope="team:sales")
    _add(tenant, system_actor, "老李周三要去杭州。", scope="team:infra")
    return tenant


def test_short_forms_and_first_names_are_suggested_beside_the_full_name(team) -> None:
    assert _pairs(team) == {
        ("王建国", "老王"),
        ("王建国", "王总"),
        ("王建国", "小王"),
        ("王总", "老王"),
        ("Bob Smith", "Bob"),
        ("Bob Smith", "Dr. Smith"),
    }
    bob = _entity(team, "Bob")
    assert {(s.entity.name, s.other.name) for s in alias_suggestions(
        tenant=team, entity_id=bob.pk)} == {("Bob Smith", "Bob")}  # fmt: skip
    assert all(s.scopes == ("team:infra",) for s in alias_suggestions(tenant=team))


def test_another_tenant_entities_are_never_suggested_nor_dismissed(
    team, other_tenant, system_actor, owner_actor
) -> None:
    _add(other_tenant, system_actor, "王建国在杭州。")
    _add(other_tenant, system_actor, "老王在杭州。")
    foreign = _entity(other_tenant, "老王")
    ours = {e.pk for e in entity_list(tenant=team, limit=200).entities}
    for s in alias_suggestions(tenant=team):
        assert {s.entity.pk, s.other.pk} <= ours
    assert _pairs(other_tenant) == {("王建国", "老王")}
    with pytest.raises(NotFound):
        alias_dismiss(tenant=team, entity_id=_entity(team, "王建国").pk, other_id=foreign.pk,
                      actor=owner_actor)  # fmt: skip
    assert _pairs(other_tenant) == {("王建国", "老王")}


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _section(html: str) -> str:
    found = re.search(r'<section class="card" id="alias-suggestions">.*?</section>', html, re.S)
    return found.group(0) if found else ""


def test_accepting_merges_through_curation_and_dismissing_is_remembered(team, owner) -> None:
    client = _client(owner)
    section = _section(client.get("/t/acme/entities/").content.decode())
    assert "老王" in section and "Bob Smith" in section and "Accept: merge into" in section
    full, old = _entity(team, "王建国"), _entity(team, "老王")

    # Accept: the suggestion's form posts the existing merge, which records it.
    accepted = client.post(f"/t/acme/entities/{full.pk}/merge", {"other": f"#{old.pk}"})
    assert accepted.status_code == 302
    assert "老王" in entity_get(tenant=team, entity_id=full.pk).aliases
    with pytest.raises(NotFound):
        entity_get(tenant=team, entity_id=old.pk)
    with tenant_scope(team):
        assert TenantEvent.objects.for_tenant(team).filter(action="entity_merge").count() == 1
    assert ("王建国", "老王") not in _pairs(team)

    # Dismiss: gone from the page, and it stays gone.
    bob, smith = _entity(team, "Bob"), _entity(team, "Bob Smith")
    dismissed = client.post(f"/t/acme/entities/{smith.pk}/alias-dismiss", {"other": f"#{bob.pk}"})
    assert dismissed.status_code == 302
    page = client.get("/t/acme/entities/").content.decode()
    assert f'data-pair="{smith.pk}-{bob.pk}"' not in _section(page)
    assert f'data-pair="{full.pk}-' in _section(page), "the other suggestions stay"
    assert ("Bob Smith", "Bob") not in _pairs(team)
    _add(team, owner_actor_of(owner), "Bob Smith and Bob met again.")
    assert ("Bob Smith", "Bob") not in _pairs(team), "a dismissal is remembered"
    # Nothing was merged by the dismissal; it is in the entity's history and the audit log.
    assert entity_get(tenant=team, entity_id=bob.pk).name == "Bob"
    history = curation.entity_history(tenant=team, entity_id=smith.pk)
    assert [e.action for e in history] == ["alias_dismiss"]
    with tenant_scope(team):
        assert TenantEvent.objects.for_tenant(team).filter(
            action="entity_alias_dismiss").count() == 1  # fmt: skip


def owner_actor_of(user):
    from tenants.actors import Actor

    return Actor.user(user)


def test_an_auditor_sees_suggestions_without_buttons_and_may_not_dismiss(
    team, auditor, outsider
) -> None:
    section = _section(_client(auditor).get("/t/acme/entities/").content.decode())
    assert "王建国" in section and "<form" not in section
    bob, smith = _entity(team, "Bob"), _entity(team, "Bob Smith")
    url = f"/t/acme/entities/{smith.pk}/alias-dismiss"
    assert _client(auditor).post(url, {"other": f"#{bob.pk}"}).status_code == 403
    # An admin of another tenant: the same 404 as for a tenant that does not exist.
    assert _client(outsider).post(url, {"other": f"#{bob.pk}"}).status_code == 404
    assert _client(outsider).get("/t/acme/entities/").status_code == 404
    with tenant_scope(team):
        assert not EntityEvent.objects.for_tenant(team).filter(action="alias_dismiss").exists()
