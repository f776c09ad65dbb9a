"""Every REST endpoint, for every kind of caller: the owner is allowed, the read-only role and
read-only keys are refused writes (403), outsiders and other tenants' keys get 404 (never 403),
revoked keys and anonymous callers 401."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from facts.selectors.facts import fact_get
from tenants.selectors import membership_role
from tests.api_fixtures import World, bearer, signed_in

# One world for every test of the module, each test in a savepoint (tests/api_fixtures.py).
pytestmark = [pytest.mark.django_db, pytest.mark.shared_world]

R, W, M = "read", "write", "manage"  # manage: tenant administration, signed-in admins only
P = "people"  # the tenant's members and keys: people read them, API keys never


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # {fact} {entity} {key} {member}: objects of the tenant in the URL
    need: str
    ok: int
    body: Any = None
    content_type: str | None = None

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


JSONL = '{"content": "Carol runs the Tuesday demo"}\n{"content": ""}\n'
ENDPOINTS = [
    Endpoint("GET", "facts", R, 200),
    Endpoint("POST", "facts", W, 201, {"content": "Dana likes oolong", "scope": "user:dana"}),
    Endpoint("POST", "facts/import", W, 200, JSONL, "application/x-ndjson"),
    Endpoint("GET", "facts/{fact}", R, 200),
    Endpoint("PATCH", "facts/{fact}", W, 200, {"tags": ["tea"]}),
    Endpoint("DELETE", "facts/{fact}", W, 200),
    Endpoint("POST", "facts/{fact}/feedback", W, 200, {"helpful": True}),
    Endpoint("GET", "facts/{fact}/history", R, 200),
    Endpoint("POST", "facts/{fact}/restore", W, 200),
    Endpoint("POST", "facts/{fact}/purge", M, 200, {"reason": "asked to forget"}),
    Endpoint("POST", "recall", R, 200, {"query": "what does Alice drink?", "explain": True}),
    Endpoint("POST", "context", R, 200, {"query": "green tea"}),
    Endpoint("GET", "entities", R, 200),
    Endpoint("GET", "entities/{entity}", R, 200),
    Endpoint("GET", "entities/{entity}/facts", R, 200),
    Endpoint("PATCH", "entities/{entity}", M, 200, {"name": "Alice Chen", "type": "person"}),
    Endpoint("POST", "entities/{entity}/aliases", M, 200, {"alias": "alicia"}),
    Endpoint("DELETE", "entities/{entity}/aliases?alias=ali", M, 200),
    Endpoint("POST", "entities/{entity}/merge", M, 200, {"other_id": "{bob}"}),
    Endpoint("POST", "entities/{entity}/split", M, 200, {"alias": "ali"}),
    Endpoint("GET", "entities/{entity}/history", R, 200),
    Endpoint("GET", "entities/{entity}/related?hops=1", R, 200),
    Endpoint("GET", "entities/reason?name=Alice&name=Bob", R, 200),
    Endpoint("GET", "entities/dictionary", R, 200),
    Endpoint("POST", "entities/dictionary", M, 200, {"term": "Northstar", "type": "product"}),
    Endpoint("DELETE", "entities/dictionary?term=Orion", M, 200),
    Endpoint("GET", "entities/relink", R, 200),
    Endpoint("POST", "entities/relink", M, 200),
    Endpoint("GET", "conflicts", R, 200),
    Endpoint("GET", "conflicts/{conflict}", R, 200),
    Endpoint("POST", "conflicts/{conflict}/resolve", M, 200, {"decision": "keep_both"}),
    Endpoint("GET", "members", P, 200),
    # A tenant admin invites an account that is not a member (202); the account accepts.
    Endpoint("POST", "members", M, 202, {"username": "newbie", "role": "auditor"}),
    Endpoint("GET", "members/{member}", P, 200),
    Endpoint("PATCH", "members/{member}", M, 200, {"role": "admin"}),
    Endpoint("DELETE", "members/{member}", M, 204),
    Endpoint("GET", "api-keys", P, 200),
    Endpoint("POST", "api-keys", M, 201, {"name": "new-profile"}),
    Endpoint("GET", "api-keys/{key}", P, 200),
    Endpoint("POST", "api-keys/{key}/rotate", M, 200, {"grace_hours": 1}),
    Endpoint("DELETE", "api-keys/{key}", M, 200),
    Endpoint("GET", "retention", R, 200),
    Endpoint("PATCH", "retention", M, 200, {"archive_below_trust": 0.1}),
    Endpoint("GET", "retention/preview", R, 200),
    Endpoint("GET", "retention/runs", R, 200),
    Endpoint("POST", "retention/run", M, 200, {"dry_run": True}),
    Endpoint("GET", "bundle/export", P, 200),
    Endpoint("GET", "audit", R, 200),
    Endpoint("GET", "audit/export", R, 200),
    Endpoint("GET", "audit/verify", P, 200),
    Endpoint("GET", "", R, 200),  # the tenant itself
    Endpoint("PATCH", "", M, 200, {"settings": {"token_budget": 2000}}),
]
OBJECT_ENDPOINTS = [e for e in ENDPOINTS if "{" in e.path]


@pytest.fixture
def member(world: World, system_actor):
    """A teammate for the member endpoints (not one of the standing three)."""
    from tenants.services import membership_set

    users = get_user_model()
    users.objects.create_user("newbie", password="pw-newbie-123")
    carol = users.objects.create_user("carol", password="pw-carol-123")
    membership_set(tenant=world.tenant, user=carol, role="auditor", actor=system_actor)
    return carol


def _url(endpoint: Endpoint, w: World, *, tenant: str | None, foreign: bool = False) -> str:
    """The endpoint's URL under /api/v1/tenants/<tenant>/ or, with tenant=None, the key mount.
    `foreign` puts the other tenant's object ids in it."""
    ids = {
        "fact": (w.other_fact if foreign else w.fact).pk,
        "entity": w.other_entity_id if foreign else w.entity_id,
        "key": w.other_key_id if foreign else w.key_id,
        "member": "oscar" if foreign else "carol",
        "conflict": w.other_conflict_id if foreign else w.conflict_id,
    }
    path = endpoint.path.format(**ids)
    if tenant is None:
        return f"/api/v1/{path}" if path else "/api/v1/tenant"
    return f"/api/v1/tenants/{tenant}" + (f"/{path}" if path else "")


def _call(client: APIClient, endpoint: Endpoint, w: World, url: str):
    kwargs: dict[str, Any] = {}
    if endpoint.body is not None:
        # "{bob}" in a body: the id of another entity of the tenant (a merge needs two).
        kwargs["data"] = (
            {k: w.bob_entity_id if v == "{bob}" else v for k, v in endpoint.body.items()}
            if isinstance(endpoint.body, dict)
            else endpoint.body
        )
        kwargs["content_type"] = endpoint.content_type or "application/json"
        if kwargs["content_type"] == "application/json":
            import json

            kwargs["data"] = json.dumps(kwargs["data"])
    return client.generic(endpoint.method, url, **kwargs)


def _assert_error(response, status: int) -> None:
    assert response.status_code == status, (response.status_code, response.content[:300])
    body = response.json()
    assert set(body) == {"message", "field", "code", "errors"} and body["message"]


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=str)
def test_the_owner_may_do_everything(endpoint, world, owner, member) -> None:
    response = _call(signed_in(owner), endpoint, world, _url(endpoint, world, tenant="acme"))
    assert response.status_code == endpoint.ok, response.content[:500]


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=str)
@pytest.mark.parametrize("mount", ["tenant-url", "key-mount"])
def test_a_write_key_does_all_but_administration(endpoint, mount, world, member) -> None:
    url = _url(endpoint, world, tenant="acme" if mount == "tenant-url" else None)
    response = _call(bearer(world.tokens["write"]), endpoint, world, url)
    if endpoint.need == M:
        _assert_error(response, 403)
        assert "signed-in admin" in response.json()["message"]
    elif endpoint.need == P:
        _assert_error(response, 403)
        assert "members and keys" in response.json()["message"]
    else:
        assert response.status_code == endpoint.ok, response.content[:500]


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=str)
def test_the_auditor_reads_and_is_refused_writes(endpoint, world, auditor, member) -> None:
    response = _call(signed_in(auditor), endpoint, world, _url(endpoint, world, tenant="acme"))
    if endpoint.need in (R, P):
        assert response.status_code == endpoint.ok, response.content[:500]
    else:
        _assert_error(response, 403)
        assert "auditor" in response.json()["message"]


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=str)
def test_a_read_key_reads_and_is_refused_writes(endpoint, world, member) -> None:
    response = _call(
        bearer(world.tokens["read"]), endpoint, world, _url(endpoint, world, tenant=None)
    )
    if endpoint.need == R:
        assert response.status_code == endpoint.ok, response.content[:500]
    else:
        _assert_error(response, 403)


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=str)
def test_an_outsider_finds_nothing(endpoint, world, outsider, member) -> None:
    response = _call(signed_in(outsider), endpoint, world, _url(endpoint, world, tenant="acme"))
    _assert_error(response, 404)
    # ...exactly as if the tenant did not exist at all.
    missing = _call(signed_in(outsider), endpoint, world, _url(endpoint, world, tenant="initech"))
    _assert_error(missing, 404)
    assert missing.json() == response.json()


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=str)
def test_another_tenants_key_finds_nothing(endpoint, world, member) -> None:
    response = _call(
        bearer(world.tokens["other"]), endpoint, world, _url(endpoint, world, tenant="acme")
    )
    _assert_error(response, 404)


@pytest.mark.parametrize("endpoint", [e for e in OBJECT_ENDPOINTS if e.need not in (M, P)], ids=str)
def test_another_tenants_objects_are_missing_in_your_own_tenant(endpoint, world, member) -> None:
    # The key of acme, on its own mount, asking for globex's fact, entity, key or member.
    response = _call(
        bearer(world.tokens["write"]),
        endpoint,
        world,
        _url(endpoint, world, tenant=None, foreign=True),
    )
    _assert_error(response, 404)
    assert response.json()["code"] == "not_found"


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=str)
def test_a_revoked_key_and_no_key_are_401(endpoint, world, member) -> None:
    for client in (bearer(world.tokens["revoked"]), bearer("mnm_nope_nope"), APIClient()):
        response = _call(client, endpoint, world, _url(endpoint, world, tenant="acme"))
        _assert_error(response, 401)
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_refused_writes_change_nothing(world, auditor, member) -> None:
    client = signed_in(auditor)
    assert client.delete(f"/api/v1/tenants/acme/facts/{world.fact.pk}").status_code == 403
    assert client.post(
        f"/api/v1/tenants/acme/facts/{world.fact.pk}/purge", {"reason": "x"}, format="json"
    ).status_code == 403  # fmt: skip
    assert fact_get(tenant=world.tenant, fact_id=world.fact.pk).status == "active"
    assert client.delete("/api/v1/tenants/acme/members/carol").status_code == 403
    assert membership_role(tenant=world.tenant, user=member) == "auditor"
    outsider_client = bearer(world.tokens["other"])
    assert outsider_client.delete(f"/api/v1/tenants/acme/facts/{world.fact.pk}").status_code == 404
    assert outsider_client.delete(f"/api/v1/facts/{world.fact.pk}").status_code == 404
    assert fact_get(tenant=world.tenant, fact_id=world.fact.pk).status == "active"


def test_a_superuser_opens_every_tenant(world) -> None:
    root = get_user_model().objects.create_superuser("root", password="pw-root-123")
    client = signed_in(root)
    for slug in ("acme", "globex"):
        response = client.get(f"/api/v1/tenants/{slug}/facts")
        assert response.status_code == 200 and len(response.json()["results"]) == 2


def test_a_signed_in_person_names_the_tenant(world, owner) -> None:
    response = signed_in(owner).get("/api/v1/facts")
    _assert_error(response, 400)
    assert response.json()["field"] == "tenant"


def test_only_superusers_create_tenants(world, owner) -> None:
    body = {"slug": "initech", "name": "Initech"}
    _assert_error(signed_in(owner).post("/api/v1/tenants", body, format="json"), 403)
    _assert_error(bearer(world.tokens["write"]).post("/api/v1/tenants", body, format="json"), 403)
    root = get_user_model().objects.create_superuser("root", password="pw-root-123")
    created = signed_in(root).post("/api/v1/tenants", body, format="json")
    assert created.status_code == 201 and created.json()["slug"] == "initech"
    listed = signed_in(root).get("/api/v1/tenants").json()
    assert [t["slug"] for t in listed] == ["acme", "globex", "initech"]


def test_each_caller_lists_only_its_tenants(world, owner, outsider) -> None:
    assert [t["slug"] for t in signed_in(owner).get("/api/v1/tenants").json()] == ["acme"]
    assert [t["slug"] for t in signed_in(outsider).get("/api/v1/tenants").json()] == ["globex"]
    mine = bearer(world.tokens["read"]).get("/api/v1/tenants").json()
    assert [(t["slug"], t["role"]) for t in mine] == [("acme", None)]


def test_the_key_mount_serves_the_keys_own_tenant(world) -> None:
    ours = bearer(world.tokens["read"]).get("/api/v1/facts").json()["results"]
    theirs = bearer(world.tokens["other"]).get("/api/v1/facts").json()["results"]
    with_ids = {f["id"] for f in ours}
    assert world.fact.pk in with_ids and world.other_fact.pk not in with_ids
    assert world.other_fact.pk in {f["id"] for f in theirs}
