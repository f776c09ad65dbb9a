"""Shared set-up of the REST API tests: a tenant with data, people and keys of every kind."""

from __future__ import annotations

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


@pytest.fixture
def world(tenant, other_tenant, owner, auditor, outsider, system_actor, settings) -> World:
    from facts.selectors.entities import entity_list

    settings.MNEMOSYNE_ENTITY_EXTRACTOR = "tests.extractors.capitalised_people"
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
