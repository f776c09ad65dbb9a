"""Every page of the web admin, for every kind of person: the owner may use it, the auditor reads
and is refused every write (403) and shown no write control, an outsider (admin of another
tenant) gets 404 for everything of this tenant, anonymous visitors are sent to sign in.

The pages come from the registry, so a page added later is checked here without being listed;
a new kind of URL parameter or a new write page without a request body below fails the suite."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from facts import services as fact_services
from facts.inputs import fact_draft
from surfaces.base.pages import Need, PageSpec, TenantPage, registered_pages, tenant_page
from tests.api_fixtures import World

# One world for every test of the module, each test in a savepoint (tests/api_fixtures.py).
pytestmark = [pytest.mark.django_db, pytest.mark.shared_world]

PAGES = registered_pages()
WRITE_BODIES: dict[str, dict[str, Any]] = {
    "fact_new": {"content": "Dana likes oolong", "scope": "user:dana", "category": "user_pref"},
    "fact_edit": {
        "content": "Alice drinks oolong now",
        "scope": "user:alice",
        "category": "user_pref",
        "tags": "tea",
    },  # fmt: skip
    "fact_feedback": {"helpful": "true"},
    "fact_remove": {},
    "fact_restore": {},
    "fact_purge": {"reason": "asked to forget"},
    "fact_pin": {"pinned": "true"},
    "retention_run": {"dry_run": "true"},
    "facts_import_bundle": {},  # no file: the page says so (302 back to the facts)
    "retention": {"archive_below_trust": "0.2", "legal_hold": "on"},
    "member_add": {"username": "carol", "role": "auditor"},
    "member_role": {"role": "admin"},
    "member_remove": {},
    "key_new": {"name": "new-profile", "scopes": ["read", "write"]},
    "key_revoke": {},
    "key_rotate": {"grace_hours": "1"},
    "member_invite": {"role": "auditor", "email": ""},
    "invite_revoke": {},
    "member_reset": {},
    "facts_bulk": {"ids": ["1"], "action": "tag", "tag": "checked"},
    "tenant_settings": {"name": "Acme Corporation"},
    "tenant_delete": {"confirm": "acme"},
    "entity_rename": {"name": "Alice Chen"},
    "entity_type": {"type": "person"},
    "entity_alias_add": {"alias": "alicia"},
    "entity_alias_remove": {"alias": "ali"},
    "entity_merge": {"other": "Bob"},
    "entity_split": {"alias": "ali"},
    "entity_alias_dismiss": {"other": "Bob"},
    "entity_dictionary_add": {"term": "Northstar", "type": "product"},
    "entity_dictionary_remove": {"term": "Orion"},
    "entity_relink": {},
    "conflict_resolve": {"decision": "keep_both", "note": "both were true"},
    "conflict_settings": {"duplicate_threshold": "0.9", "auto_supersede": "on"},
}
# Superusers only, even among admins.
SUPERUSER_WRITES = {"tenant_delete"}
PARAMETERS = {"fact_id", "entity_id", "key_id", "username", "invitation_id", "conflict_id"}


def _client(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _params(spec: PageSpec, w: World, *, foreign: bool = False) -> dict[str, Any]:
    values = {
        "fact_id": (w.other_fact if foreign else w.fact).pk,
        "entity_id": w.other_entity_id if foreign else w.entity_id,
        "key_id": w.other_key_id if foreign else w.key_id,
        "username": "oscar" if foreign else "arthur",
        "invitation_id": w.other_invitation_id if foreign else w.invitation_id,
        "conflict_id": w.other_conflict_id if foreign else w.conflict_id,
    }
    names = set(re.findall(r"<(?:\w+:)?(\w+)>", spec.route))
    return {name: values[name] for name in names}


def _url(spec: PageSpec, w: World, *, tenant: str = "acme", foreign: bool = False) -> str:
    from django.urls import reverse

    kwargs = {"tenant": tenant, **_params(spec, w, foreign=foreign)}
    return reverse(f"web:{spec.name}", kwargs=kwargs)


def _reads(spec: PageSpec) -> bool:
    return hasattr(spec.view, "get")


def _writes(spec: PageSpec) -> bool:
    return hasattr(spec.view, "post")


@pytest.fixture
def carol(db):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("carol", password="pw-carol-123")


def test_the_registry_knows_every_parameter_and_write() -> None:
    assert {"dashboard", "facts", "fact", "recall", "entities", "entity", "retention", "members",
            "keys", "connect", "audit"} <= {spec.name for spec in PAGES}  # fmt: skip
    for spec in PAGES:
        unknown = set(re.findall(r"<(?:\w+:)?(\w+)>", spec.route)) - PARAMETERS
        assert not unknown, f"{spec.name}: add a sample value for {unknown} to this test"
        if _writes(spec):
            assert spec.name in WRITE_BODIES, f"{spec.name}: give this test a request body for it"


@pytest.mark.parametrize("spec", [s for s in PAGES if _reads(s)], ids=lambda s: s.name)
def test_the_owner_reads_every_page(spec, world, owner) -> None:
    response = _client(owner).get(_url(spec, world))
    assert response.status_code == 200, (spec.name, response.content[:500])


@pytest.mark.parametrize("spec", [s for s in PAGES if _writes(s)], ids=lambda s: s.name)
def test_the_owner_may_do_every_write(spec, world, owner, carol) -> None:
    if spec.name == "fact_restore":
        fact_services.fact_remove(tenant=world.tenant, fact_id=world.fact.pk, actor=world_actor())
    response = _client(owner).post(_url(spec, world), WRITE_BODIES[spec.name])
    if spec.name in SUPERUSER_WRITES:
        assert response.status_code == 403, spec.name
        return
    assert response.status_code in (201, 302), (spec.name, response.content[:800])


def world_actor():
    from tenants.actors import Actor

    return Actor.job("tests")


@pytest.mark.parametrize("spec", [s for s in PAGES if _reads(s)], ids=lambda s: s.name)
def test_the_auditor_reads_every_page_and_sees_no_write_control(spec, world, auditor) -> None:
    response = _client(auditor).get(_url(spec, world))
    if spec.view.need_get is Need.WRITE:
        assert response.status_code == 403
        return
    assert response.status_code == 200, spec.name
    if response.streaming:
        return  # a file (the CSV export), not a page
    html = response.content.decode()
    forms = re.findall(r"<form\b[^>]*>", html)
    writable = [f for f in forms if 'method="post"' in f and "data-personal" not in f]
    assert not writable, f"{spec.name} shows an auditor write forms: {writable}"
    assert "/facts/new/" not in html


@pytest.mark.parametrize("spec", [s for s in PAGES if _writes(s)], ids=lambda s: s.name)
def test_the_auditor_is_refused_every_write(spec, world, auditor, carol) -> None:
    client = _client(auditor)
    before = _audit_size(world)
    assert client.post(_url(spec, world), WRITE_BODIES[spec.name]).status_code == 403
    if spec.view.need_get is Need.WRITE:
        assert client.get(_url(spec, world)).status_code == 403
    assert _audit_size(world) == before, "a refused write changed something"


def _audit_size(w: World) -> int:
    from facts.selectors.audit import audit_event_list

    return len(audit_event_list(tenant=w.tenant, limit=200).events)


@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.name)
@pytest.mark.parametrize("foreign_ids", [False, True], ids=["ids", "own-ids"])
def test_an_outsider_reaches_nothing_of_the_tenant(spec, foreign_ids, world, outsider) -> None:
    """Oscar is an admin of globex: acme's pages are 404 to him, with acme's ids or his own."""
    client = _client(outsider)
    url = _url(spec, world, foreign=foreign_ids)
    if _reads(spec):
        assert client.get(url).status_code == 404, spec.name
    if _writes(spec):
        assert client.post(url, WRITE_BODIES[spec.name]).status_code == 404, spec.name


# A username names a person, not an object of a tenant: members are checked below.
OBJECT_PAGES = [s for s in PAGES if "<" in s.route and "<username:" not in s.route]


@pytest.mark.parametrize("spec", OBJECT_PAGES, ids=lambda s: s.name)
def test_another_tenants_object_is_not_found_in_ones_own_tenant(spec, world, owner) -> None:
    """The owner of acme, asking for globex's fact, entity or key under acme: 404."""
    client = _client(owner)
    url = _url(spec, world, foreign=True)
    if _reads(spec):
        assert client.get(url).status_code == 404, spec.name
    if _writes(spec):
        assert client.post(url, WRITE_BODIES[spec.name]).status_code == 404, spec.name


def test_a_member_of_another_tenant_cannot_be_changed_here(world, owner) -> None:
    for name in ("member_role", "member_remove", "member_reset"):
        spec = next(s for s in PAGES if s.name == name)
        response = _client(owner).post(_url(spec, world, foreign=True), WRITE_BODIES[name])
        assert response.status_code == 404


@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.name)
def test_anonymous_visitors_are_sent_to_sign_in(spec, world) -> None:
    url = _url(spec, world)
    response = Client().get(url) if _reads(spec) else Client().post(url, {})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/sign-in/?next=")


def test_an_unknown_tenant_is_the_same_404_as_a_foreign_one(world, owner, outsider) -> None:
    missing = _client(owner).get("/t/no-such-tenant/facts/")
    foreign = _client(outsider).get("/t/acme/facts/")
    assert missing.status_code == foreign.status_code == 404
    assert b"Acme" not in foreign.content  # nothing of the tenant, not even its name


def test_the_tenant_switcher_lists_only_ones_own_tenants(world, owner, outsider) -> None:
    html = _client(outsider).get("/").content.decode()
    assert "/t/globex/" in html and "/t/acme/" not in html
    html = _client(owner).get("/t/acme/facts/").content.decode()
    assert "/t/acme/" in html and "/t/globex/" not in html


def test_the_base_page_cannot_be_made_to_forget_the_tenant() -> None:
    for name in ("dispatch", "setup", "access", "tenant"):
        with pytest.raises(TypeError, match="cannot be replaced"):
            type("Sneaky", (TenantPage,), {name: lambda self, *a, **k: None})
    from django.views import View

    with pytest.raises(TypeError, match="must derive from it"):
        tenant_page("sneaky/", name="sneaky")(type("Plain", (View,), {}))


def test_only_superusers_create_tenants(world, owner, django_user_model) -> None:
    assert _client(owner).post("/tenants/new/", {"slug": "x", "name": "X"}).status_code == 403
    root = django_user_model.objects.create_superuser("root", password="pw-root-123")
    response = _client(root).post("/tenants/new/", {"slug": "research", "name": "Research"})
    assert response.status_code == 302 and response["Location"] == "/t/research/"


# -- query counts -------------------------------------------------------------------------------


def _queries(client: Client, url: str) -> int:
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    return len(queries)


def _grow(world: World, n: int) -> None:
    from tenants.services import apikey_create

    actor = world_actor()
    for i in range(n):
        fact = fact_services.fact_add(
            tenant=world.tenant,
            actor=actor,
            draft=fact_draft({"content": f"Alice noted item {i} about tea"}),
        ).fact
        fact_services.fact_feedback(tenant=world.tenant, fact_id=fact.pk, helpful=True, actor=actor)
        apikey_create(tenant=world.tenant, name=f"profile-{i}", actor=actor)


@pytest.mark.parametrize(
    "url",
    [
        "/t/acme/",
        "/t/acme/dashboard/top-entities",
        "/t/acme/facts/",
        "/t/acme/facts/?status=all&trust_min=0.1",
        "/t/acme/entities/",
        "/t/acme/entities/{entity}/",
        "/t/acme/audit/",
        "/t/acme/keys/",
        "/t/acme/members/",
        "/t/acme/connect/",
        "/t/acme/retention/",
        "/t/acme/facts/{fact}/",
    ],
)
def test_pages_cost_the_same_queries_for_3_or_30_rows(url, world, owner, settings) -> None:
    settings.MNEMOSYNE_ENTITY_EXTRACTOR = "tests.extractors.capitalised_people"
    url = url.format(entity=world.entity_id, fact=world.fact.pk)
    client = _client(owner)
    _grow(world, 3)
    few = _queries(client, url)
    _grow(world, 27)
    many = _queries(client, url)
    assert many == few, f"{url}: {few} queries for a few rows, {many} for many"
    assert few <= 30, f"{url}: {few} queries"
