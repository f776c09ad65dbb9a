"""Tenant administration: tenants, settings, members, API keys, retention; all audited."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from tenants import selectors, services
from tenants.errors import InvalidInput, NotFound
from tenants.inputs import retention_changes, settings_changes, tenant_draft
from tenants.models import DEFAULT_TENANT_SETTINGS, ApiKey
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _actions(tenant) -> list[str]:
    return [e.action for e in reversed(selectors.tenant_event_list(tenant=tenant))]


# -- tenants and settings ---------------------------------------------------------------------


def test_a_new_tenant_has_the_design_defaults_and_an_empty_retention_policy(tenant) -> None:
    assert tenant.effective_settings == DEFAULT_TENANT_SETTINGS
    assert tenant.setting("half_life_days") == 0 and tenant.setting("token_budget") == 1300
    policy = selectors.retention_policy_get(tenant=tenant)
    assert policy.pk and policy.max_active_facts is None and policy.legal_hold is False
    assert _actions(tenant) == ["tenant_create"]


@pytest.mark.parametrize(
    ("slug", "name", "field"),
    [("Acme Corp", "Acme", "slug"), ("-acme", "Acme", "slug"), ("acme", "", "name")],
)
def test_tenant_create_validates(db, system_actor, slug, name, field) -> None:
    with pytest.raises(InvalidInput) as error:
        services.tenant_create(actor=system_actor, draft=tenant_draft({"slug": slug, "name": name}))
    assert error.value.field == field


def test_slugs_are_unique(tenant, system_actor) -> None:
    with pytest.raises(InvalidInput, match="exists already"):
        services.tenant_create(
            actor=system_actor, draft=tenant_draft({"slug": "acme", "name": "Another Acme"})
        )


def test_settings_update_is_validated_and_audited(tenant, owner_actor) -> None:
    services.tenant_update_settings(
        tenant=tenant,
        changes=settings_changes({"half_life_days": 30, "token_budget": 2000}),
        actor=owner_actor,
    )
    tenant.refresh_from_db()
    assert tenant.setting("half_life_days") == 30.0 and tenant.setting("token_budget") == 2000
    event = selectors.tenant_event_list(tenant=tenant)[0]
    assert (event.action, event.actor) == ("settings_update", str(owner_actor))
    assert event.before["half_life_days"] == 0 and event.after["half_life_days"] == 30


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"weight_fts": -0.1}, "settings.weight_fts"),
        ({"half_life_days": -1}, "settings.half_life_days"),
        ({"token_budget": 50}, "settings.token_budget"),
        ({"token_budget": 1300.5}, "settings.token_budget"),
        ({"min_trust": "high"}, "settings.min_trust"),
        ({"min_trust": True}, "settings.min_trust"),
        ({"colour": "blue"}, "settings.colour"),
        ({"weight_fts": 0, "weight_vec": 0, "weight_entity": 0}, "settings"),
    ],
)
def test_bad_settings_are_refused(tenant, system_actor, changes, field) -> None:
    with pytest.raises(InvalidInput) as error:
        services.tenant_update_settings(
            tenant=tenant, changes=settings_changes(changes), actor=system_actor
        )
    assert error.value.field == field
    tenant.refresh_from_db()
    assert tenant.effective_settings == DEFAULT_TENANT_SETTINGS


# -- members ----------------------------------------------------------------------------------


def test_members_see_only_their_own_tenants(owner, auditor, outsider, tenant, other_tenant) -> None:
    assert selectors.tenants_for_user(user=owner) == [(tenant, "admin")]
    assert selectors.tenants_for_user(user=auditor) == [(tenant, "auditor")]
    assert selectors.tenants_for_user(user=outsider) == [(other_tenant, "admin")]
    assert selectors.membership_role(tenant=tenant, user=outsider) is None


def test_role_changes_and_removal_are_audited(tenant, auditor, owner_actor) -> None:
    services.membership_set(tenant=tenant, user=auditor, role="admin", actor=owner_actor)
    assert selectors.membership_role(tenant=tenant, user=auditor) == "admin"
    services.membership_remove(tenant=tenant, user=auditor, actor=owner_actor)
    assert selectors.membership_role(tenant=tenant, user=auditor) is None
    assert _actions(tenant)[-2:] == ["member_set", "member_remove"]
    with pytest.raises(InvalidInput, match="role"):
        services.membership_set(tenant=tenant, user=auditor, role="owner", actor=owner_actor)
    with pytest.raises(NotFound):
        services.membership_remove(tenant=tenant, user=auditor, actor=owner_actor)


def test_a_superuser_sees_every_tenant(tenant, other_tenant) -> None:
    root = get_user_model().objects.create_superuser("root", password="pw-root-123")
    assert selectors.tenants_for_user(user=root) == [(tenant, "admin"), (other_tenant, "admin")]


# -- API keys ---------------------------------------------------------------------------------


def test_an_api_key_is_shown_once_and_verifies(tenant, owner_actor) -> None:
    created = services.apikey_create(tenant=tenant, name="hermes-research", actor=owner_actor)
    assert created.token.startswith(f"mnm_{created.key.prefix}_")
    with tenant_scope(tenant):
        stored = ApiKey.objects.for_tenant(tenant).get(pk=created.key.pk)
    assert created.token not in stored.secret_hash and stored.scopes == ["read", "write"]
    key = services.apikey_verify(token=created.token)
    assert key is not None and key.pk == created.key.pk and key.tenant == tenant
    assert key.last_used_at is not None
    assert [k.name for k in selectors.apikey_list(tenant=tenant)] == ["hermes-research"]


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # wrong secret, right prefix
        lambda t: "mnm_000000000000_" + t.split("_", 2)[2],  # unknown prefix
        lambda t: "",
        lambda t: "Bearer " + t,
        lambda t: "mnm__",
    ],
)
def test_wrong_tokens_verify_to_nothing(tenant, system_actor, mangle) -> None:
    created = services.apikey_create(tenant=tenant, name="k", actor=system_actor)
    assert services.apikey_verify(token=mangle(created.token)) is None


def test_a_revoked_key_stops_working(tenant, owner_actor) -> None:
    created = services.apikey_create(tenant=tenant, name="old", actor=owner_actor)
    services.apikey_revoke(tenant=tenant, key_id=created.key.pk, actor=owner_actor)
    assert services.apikey_verify(token=created.token) is None
    assert _actions(tenant)[-2:] == ["apikey_create", "apikey_revoke"]


def test_keys_of_another_tenant_cannot_be_revoked(tenant, other_tenant, system_actor) -> None:
    theirs = services.apikey_create(tenant=other_tenant, name="theirs", actor=system_actor)
    with pytest.raises(NotFound):
        services.apikey_revoke(tenant=tenant, key_id=theirs.key.pk, actor=system_actor)
    assert services.apikey_verify(token=theirs.token) is not None


def test_key_scopes_are_checked(tenant, system_actor) -> None:
    read_only = services.apikey_create(
        tenant=tenant, name="ro", scopes=["read"], actor=system_actor
    )
    assert read_only.key.scopes == ["read"]
    for scopes in ([], ["admin"]):
        with pytest.raises(InvalidInput, match="scopes"):
            services.apikey_create(tenant=tenant, name="x", scopes=scopes, actor=system_actor)


def test_last_used_is_not_written_on_every_request(tenant, system_actor) -> None:
    created = services.apikey_create(tenant=tenant, name="busy", actor=system_actor)
    first = services.apikey_verify(token=created.token).last_used_at
    assert services.apikey_verify(token=created.token).last_used_at == first
    with tenant_scope(tenant):
        ApiKey.objects.for_tenant(tenant).filter(pk=created.key.pk).update(
            last_used_at=timezone.now() - timedelta(minutes=5)
        )
    assert services.apikey_verify(token=created.token).last_used_at > first


# -- retention --------------------------------------------------------------------------------


def test_retention_policy_update_and_clear(tenant, owner_actor) -> None:
    services.retention_policy_update(
        tenant=tenant,
        actor=owner_actor,
        changes=retention_changes(
            {"archive_after_days_unretrieved": 180, "archive_below_trust": 0.2}
        ),
    )
    policy = services.retention_policy_update(
        tenant=tenant,
        actor=owner_actor,
        changes=retention_changes({"archive_below_trust": None, "legal_hold": True}),
    )
    assert policy.archive_after_days_unretrieved == 180
    assert policy.archive_below_trust is None and policy.legal_hold is True
    event = selectors.tenant_event_list(tenant=tenant)[0]
    assert event.before == {"archive_below_trust": 0.2, "legal_hold": False}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"archive_below_trust": 2},
        {"max_active_facts": 0},
        {"purge_archived_after_days": 1.5},
        {"legal_hold": "yes"},
        {"delete_everything": True},
    ],
)
def test_bad_retention_changes_are_refused(tenant, system_actor, changes) -> None:
    with pytest.raises(InvalidInput):
        services.retention_policy_update(
            tenant=tenant, actor=system_actor, changes=retention_changes(changes)
        )
    assert selectors.retention_policy_get(tenant=tenant).legal_hold is False
