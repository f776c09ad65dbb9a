"""Shared set-up of the REST API tests: a tenant with data, people and keys of every kind."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from facts import services as fact_services
from facts.inputs import fact_draft
from facts.models import Conflict, DictionaryEntry, Entity, Fact
from tenants import invitations as tenant_invitations
from tenants import services as tenant_services
from tenants.scope import tenant_scope


@dataclass
class World:
    tenant: Any
    other: Any
    fact: Any
    other_fact: Any
    entity_id: int
    other_entity_id: int
    key_id: int
    other_key_id: int
    tokens: dict[str, str]
    invitation_id: int = 0
    other_invitation_id: int = 0
    bob_entity_id: int = 0
    conflict_id: int = 0
    other_conflict_id: int = 0


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def signed_in(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


EXTRACTOR = "tests.extractors.capitalised_people"


@pytest.fixture
def world(request, tenant, other_tenant, owner, auditor, outsider, system_actor, settings) -> World:
    if shared_world(request):
        return request.getfixturevalue("cast").world
    settings.MNEMOSYNE_ENTITY_EXTRACTOR = EXTRACTOR
    return world_build(tenant, other_tenant, system_actor)


def world_build(tenant, other_tenant, system_actor) -> World:
    """Two tenants' facts, keys, invitations, aliases, terms and conflicts (the people are the
    callers' fixtures)."""
    from facts.selectors.entities import entity_list

    facts = {}
    for t in (tenant, other_tenant):
        facts[t.slug] = fact_services.fact_add(
            tenant=t,
            actor=system_actor,
            draft=fact_draft(
                {
                    "content": f"Alice drinks green tea at {t.name}",
                    "scope": "user:alice",
                    "category": "user_pref",
                }
            ),
        ).fact
        fact_services.fact_add(
            tenant=t,
            actor=system_actor,
            draft=fact_draft({"content": "Bob is allergic to peanuts"}),
        )
    keys = {
        "write": tenant_services.apikey_create(tenant=tenant, name="hermes", actor=system_actor),
        "read": tenant_services.apikey_create(
            tenant=tenant, name="dashboard", actor=system_actor, scopes=["read"]
        ),
        "revoked": tenant_services.apikey_create(tenant=tenant, name="old", actor=system_actor),
        "other": tenant_services.apikey_create(
            tenant=other_tenant, name="hermes", actor=system_actor
        ),
    }
    tenant_services.apikey_revoke(tenant=tenant, key_id=keys["revoked"].key.pk, actor=system_actor)
    invitations = [
        tenant_invitations.invitation_create(tenant=t, role="auditor", actor=system_actor)
        for t in (tenant, other_tenant)
    ]
    # An alias, a dictionary term and a conflict for the curation endpoints, made without
    # services: the other tests count the facts and audit events of this world.
    conflicts = {}
    for t in (tenant, other_tenant):
        with tenant_scope(t):
            alice = Entity.objects.for_tenant(t).get(normalized="alice")
            alice.aliases = ["ali"]
            alice.save(update_fields=["aliases"])
            DictionaryEntry.objects.create(
                tenant=t, term="Orion", normalized="orion", type="product", created_by="job:tests"
            )
            first, second = Fact.objects.for_tenant(t).order_by("pk")[:2]
            conflicts[t.slug] = Conflict.objects.create(
                tenant=t, fact_a=first, fact_b=second, reason="value", score=0.8,
                detected_by="job:tests",
            ).pk  # fmt: skip
    return World(
        tenant=tenant,
        other=other_tenant,
        fact=facts["acme"],
        other_fact=facts["globex"],
        entity_id=entity_list(tenant=tenant, query="alice").entities[0].pk,
        other_entity_id=entity_list(tenant=other_tenant, query="alice").entities[0].pk,
        key_id=keys["read"].key.pk,
        other_key_id=keys["other"].key.pk,
        tokens={name: created.token for name, created in keys.items()},
        invitation_id=invitations[0].invitation.pk,
        other_invitation_id=invitations[1].invitation.pk,
        bob_entity_id=entity_list(tenant=tenant, query="bob").entities[0].pk,
        conflict_id=conflicts["acme"],
        other_conflict_id=conflicts["globex"],
    )


# -- one world for a whole module ---------------------------------------------------------------
# The endpoint-by-caller tables (tests/test_api_access.py, test_web_access.py) run hundreds of
# tests against the same world; building it took most of each test's time. In a module marked
# `shared_world` the world (with `tenant`, `other_tenant`, `owner`, `auditor` and `outsider`) is
# built once, in a transaction of its own, and each test runs in a savepoint inside it (as
# Django's TestCase.setUpTestData does): whatever a test writes is rolled back before the next,
# the world itself at the end of the module. Every test of such a module runs inside that
# transaction (the conftest's `_module_world` opens it first), so none of them may be
# transactional. Under -n a worker that takes tests of the module builds a world of its own.


def shared_world(request: pytest.FixtureRequest) -> bool:
    """Whether the test's module builds its world once (`pytest.mark.shared_world`)."""
    return request.node.get_closest_marker("shared_world") is not None


@dataclass
class Cast:
    world: World
    owner: Any
    auditor: Any
    outsider: Any


@pytest.fixture(scope="module")
def module_cast(django_db_setup, django_db_blocker) -> Iterator[Cast]:
    from django.db import transaction
    from django.test import override_settings

    from tenants.actors import Actor
    from tenants.inputs import tenant_draft
    from tests.conftest import _member, server_share

    # The world's transaction stays open between its tests: the server is shared meanwhile.
    share = server_share()
    share.__enter__()
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        outer._from_testcase = True  # as TestCase's own: durable blocks inside are allowed
        try:
            actor = Actor.job("tests")
            tenant, other = (
                tenant_services.tenant_create(
                    actor=actor, draft=tenant_draft({"slug": slug, "name": name})
                )
                for slug, name in (("acme", "Acme"), ("globex", "Globex"))
            )
            with override_settings(MNEMOSYNE_ENTITY_EXTRACTOR=EXTRACTOR):
                cast = Cast(
                    world=world_build(tenant, other, actor),
                    owner=_member("olivia", tenant, "admin", actor),
                    auditor=_member("arthur", tenant, "auditor", actor),
                    outsider=_member("oscar", other, "admin", actor),
                )
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            share.__exit__(None, None, None)
            raise
    try:
        yield cast
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
        share.__exit__(None, None, None)


@pytest.fixture
def cast(module_cast: Cast, db, settings) -> Cast:
    """This test's copy of the module's world (its objects may be changed freely), with the
    settings the world was built with and empty caches: a cache entry keyed by a tenant's id
    and write count would otherwise outlive the rolled-back writes of the test before."""
    from django.core.cache import caches

    settings.MNEMOSYNE_ENTITY_EXTRACTOR = EXTRACTOR
    for cache in caches.all():
        cache.clear()
    return copy.deepcopy(module_cast)
