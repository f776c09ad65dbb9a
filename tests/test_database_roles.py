"""The role web processes and workers use cannot lift tenant isolation (docs/database-roles.md).

The tests run as that runtime role (tests/conftest.py: the owner made and migrated the test
database), so `connection` here is the runtime role's own connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import DatabaseError, connection, transaction

from facts.inputs import fact_draft
from facts.models import FactEvent
from facts.services import fact_add
from operations.health import check_database
from operations.roles import (
    as_owner,
    audit_tables,
    connect_as,
    owner_credentials,
    runtime_credentials,
)
from tenants.actors import Actor
from tenants.models import Tenant, TenantOwned
from tenants.scope import tenant_scope
from tenants.services import apikey_create


def _tenant_models() -> list[type]:
    """Every model with a foreign key to Tenant: the registry's list, not a hand-kept one."""
    found = []
    for model in apps.get_models():
        for field in model._meta.get_fields():
            if getattr(field, "many_to_one", False) and field.related_model is Tenant:
                found.append(model)
                break
    return found


TENANT_MODELS = _tenant_models()


def test_the_registry_knows_the_tenant_models() -> None:
    names = {m.__name__ for m in TENANT_MODELS}
    assert {"Fact", "FactEvent", "ApiKey", "Membership", "FactVector"} <= names


@pytest.mark.django_db
@pytest.mark.parametrize("model", TENANT_MODELS, ids=lambda m: m._meta.label)
def test_every_tenant_table_has_forced_row_level_security(model) -> None:
    assert issubclass(model, TenantOwned), "its manager must refuse to run without a tenant"
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relrowsecurity, c.relforcerowsecurity, "
            "pg_has_role(current_user, c.relowner, 'MEMBER') "
            "FROM pg_class c WHERE c.relname = %s AND c.relkind = 'r'",
            [table],
        )
        enabled, forced, owned = cursor.fetchone()
        cursor.execute(
            "SELECT count(*) FROM pg_policies WHERE tablename = %s AND policyname = "
            "'tenant_isolation'",
            [table],
        )
        policies = cursor.fetchone()[0]
    assert (enabled, forced, policies) == (True, True, 1), f"{table}: run tenant_rls('{table}')"
    assert not owned, f"the runtime role owns {table}"


@pytest.fixture
def filled(tenant, other_tenant, system_actor) -> list[Tenant]:
    for t in (tenant, other_tenant):
        fact_add(
            tenant=t,
            actor=system_actor,
            draft=fact_draft({"content": f"{t.name} deploys on Fridays"}),
        )
        apikey_create(tenant=t, name="hermes", actor=system_actor)
    return [tenant, other_tenant]


SETTINGS = [
    ("app.all_tenants", "on"),
    ("app.cross_tenant", "on"),
    ("app.tenant_id", ""),
    ("app.deleting_tenant", "1"),
]


@pytest.mark.django_db
def test_no_setting_shows_a_row_without_a_tenant_scope(filled) -> None:
    tables = [m._meta.db_table for m in TENANT_MODELS]
    with connection.cursor() as cursor:
        for name, value in SETTINGS:
            cursor.execute("SELECT set_config(%s, %s, false)", [name, value])
        for table in tables:
            cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608 - registry names
            assert cursor.fetchone()[0] == 0, table
        # The tenants are there: each, in its own scope, sees its own rows.
    for t in filled:
        with tenant_scope(t), connection.cursor() as cursor:
            cursor.execute("SELECT DISTINCT tenant_id FROM facts_fact")
            assert cursor.fetchall() == [(t.pk,)]


@pytest.mark.django_db
def test_row_security_cannot_be_switched_off_by_the_session(filled) -> None:
    with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL row_security = off")
            cursor.execute("SELECT count(*) FROM facts_fact")


REFUSED = [
    "ALTER TABLE facts_fact ADD COLUMN mallory text",
    "ALTER TABLE facts_fact DISABLE ROW LEVEL SECURITY",
    "ALTER TABLE facts_fact NO FORCE ROW LEVEL SECURITY",
    "ALTER TABLE tenants_apikey NO FORCE ROW LEVEL SECURITY",
    "DROP POLICY tenant_isolation ON facts_fact",
    "ALTER POLICY tenant_isolation ON facts_fact USING (true)",
    "CREATE POLICY mallory ON facts_fact USING (true)",
    "ALTER TABLE facts_factevent DISABLE TRIGGER facts_factevent_append_only",
    "ALTER TABLE facts_factevent DISABLE TRIGGER ALL",
    "DROP TRIGGER facts_factevent_append_only ON facts_factevent",
    "DROP TABLE facts_fact",
    "TRUNCATE facts_fact",
    "TRUNCATE facts_factevent",
    "ALTER TABLE facts_fact OWNER TO CURRENT_USER",
    "CREATE TABLE mallory (id int)",
    "CREATE FUNCTION mallory() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "CREATE OR REPLACE FUNCTION mnemosyne_tenant_delete(doomed bigint, actor text) "
    "RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'",
]


@pytest.mark.django_db
@pytest.mark.parametrize("statement", REFUSED)
def test_the_runtime_role_cannot_change_tables_policies_or_triggers(statement) -> None:
    with pytest.raises(DatabaseError, match="must be owner|permission denied"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement)


@pytest.mark.django_db
def test_the_runtime_role_cannot_become_the_owner() -> None:
    owner = owner_credentials()["USER"]
    with pytest.raises(DatabaseError, match="permission denied"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f'SET ROLE "{owner}"')


@pytest.mark.django_db
def test_audit_tables_take_only_insert_and_select(filled) -> None:
    tenant = filled[0]
    with connection.cursor() as cursor:
        tables = audit_tables(cursor)
    assert {"facts_factevent", "facts_entityevent", "tenants_tenantevent"} <= set(tables)
    for table in tables:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT privilege_type FROM information_schema.role_table_grants "
                "WHERE table_name = %s AND grantee = current_user ORDER BY 1",
                [table],
            )
            assert [row[0] for row in cursor.fetchall()] == ["INSERT", "SELECT"], table
        for statement in (f"UPDATE {table} SET id = id", f"DELETE FROM {table}"):  # noqa: S608
            with tenant_scope(tenant):
                with pytest.raises(DatabaseError, match="permission denied"):
                    with transaction.atomic(), connection.cursor() as cursor:
                        cursor.execute(statement)
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM facts_factevent")
        assert cursor.fetchone()[0] >= 1, "the trail is still there"


@pytest.mark.django_db
def test_the_cross_tenant_functions_answer_only_what_they_are_asked(filled) -> None:
    from tenants import cross_tenant
    from tenants.models import ApiKey

    tenant, other = filled
    with tenant_scope(tenant):
        key = ApiKey.objects.for_tenant(tenant).get()
    found = cross_tenant.apikey_lookup(prefix=key.prefix)
    assert (found.key_id, found.tenant_id, found.secret_hash) == (
        key.pk,
        tenant.pk,
        key.secret_hash,
    )
    assert cross_tenant.apikey_lookup(prefix="nosuchprefix") is None
    assert set(cross_tenant.tenants_unembedded(model="no-such-model")) == {tenant.pk, other.pk}
    # Nothing stays switched on in the session after a function ran.
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(current_setting('app.cross_tenant', true), '')")
        assert cursor.fetchone()[0] in ("", "off")
        cursor.execute("SELECT count(*) FROM tenants_apikey")
        assert cursor.fetchone()[0] == 0
        cursor.execute(
            "SELECT p.proname FROM pg_proc p, "
            "aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a "
            "WHERE p.prosecdef AND p.proname LIKE 'mnemosyne%%' AND a.grantee = 0"
        )
        assert cursor.fetchall() == [], "the functions are the runtime role's, not everyone's"
        cursor.execute(
            "SELECT proname FROM pg_proc WHERE prosecdef AND proname LIKE 'mnem%%' ORDER BY 1"
        )
        definers = [row[0] for row in cursor.fetchall()]
    # 0006's nine, the audit redaction, the stats sweep, the two that make and drop a large
    # tenant's own indexes (retrieval 0005), the analysis after bulk loads (facts 0015), the
    # audit chain's two triggers (tenants 0008) and an account's invitations (tenants 0009);
    # docs/database-roles.md says what each refuses.
    assert len(definers) == 17
    page = (Path(__file__).resolve().parent.parent / "docs" / "database-roles.md").read_text()
    assert [f for f in definers if f"`{f}(" not in page] == [], "undocumented functions"


# -- the checks that say so --------------------------------------------------------------------


@pytest.fixture
def connected_as_owner(django_db_blocker) -> Iterator[None]:
    """The application connected as the owner, as a set-up of the previous release (one role
    for everything) would be. No test transaction: the connection is replaced."""
    with django_db_blocker.unblock():
        connect_as(owner_credentials())
        try:
            yield
        finally:
            connect_as(runtime_credentials())


def test_healthz_and_the_system_check_fail_when_the_role_owns_tenant_tables(
    connected_as_owner,
) -> None:
    check = check_database()
    assert not check["ok"]
    assert f"the role {owner_credentials()['USER']} owns tenant tables" in check["detail"]
    with pytest.raises(SystemCheckError, match=r"mnemosyne\.E001.*owns tenant tables"):
        call_command("check")


@pytest.mark.django_db
def test_healthz_and_the_system_check_pass_for_the_runtime_role() -> None:
    assert check_database()["ok"]
    call_command("check")
    with as_owner():  # `mnemosyne migrate` runs the check as the owner, on purpose
        call_command("check")


def test_healthz_fails_for_a_superuser(settings, django_db_blocker) -> None:
    if not settings.MNEMOSYNE_EMBEDDED_DB:
        pytest.skip("needs a superuser to connect as: the embedded server's (the default run)")
    from memoryadmin.embedded_db import SUPERUSER

    with django_db_blocker.unblock():
        connect_as({**runtime_credentials(), "USER": SUPERUSER})
        try:
            check = check_database()
        finally:
            connect_as(runtime_credentials())
    assert not check["ok"]
    assert f"the role {SUPERUSER} is a superuser" in check["detail"]


# -- what the runtime credential can do as a tenant: only what the product does ----------------


def _forge(tenant: Tenant, actor: str) -> None:
    """An audit event written straight into the table as the runtime role, acting as `tenant`
    (as any session of that role can)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('app.tenant_id', %s, false)", [str(tenant.pk)])
        cursor.execute(
            "INSERT INTO facts_factevent (tenant_id, fact_id, action, actor, at) "
            "VALUES (%s, NULL, 'create', %s, now())",
            [tenant.pk, actor],
        )


@pytest.mark.django_db
def test_a_forged_audit_actor_is_refused_by_the_database(
    tenant, other_tenant, owner, outsider, system_actor
) -> None:
    from django.contrib.auth import get_user_model

    from tenants.models import ApiKey

    other_key = apikey_create(tenant=other_tenant, name="hermes", actor=system_actor).key
    own_key = apikey_create(tenant=tenant, name="hermes", actor=system_actor).key
    root = get_user_model().objects.create_superuser("root", password="pw-root-123")
    refused = [
        f"user:{outsider.pk}:{outsider.username}",  # a member of another tenant only
        f"user:{owner.pk}:alice",  # a member's id under another name
        f"apikey:{other_key.pk}:{other_key.name}",  # another tenant's key
        f"apikey:{own_key.pk}:other-name",
        "system",
        "user:999999:ghost",
        "",
    ]
    for actor in refused:
        with pytest.raises(DatabaseError, match="does not belong to tenant"):
            _forge(tenant, actor)
    accepted = [
        f"user:{owner.pk}:{owner.username}",
        f"user:{root.pk}:root",
        f"apikey:{own_key.pk}:hermes",
        "job:retention",
        "imported:user:7:someone-elsewhere",
    ]
    for actor in accepted:
        _forge(tenant, actor)
    with tenant_scope(tenant):
        written = set(
            FactEvent.objects.for_tenant(tenant)
            .filter(fact_id=None)
            .values_list("actor", flat=True)
        )
        assert ApiKey.objects.for_tenant(tenant).count() == 1
    assert written == set(accepted)


@pytest.mark.django_db
def test_tenant_deletion_through_the_function_refuses_a_legal_hold(tenant, owner) -> None:
    from tenants.inputs import retention_changes
    from tenants.models import TenantDeletion
    from tenants.services import retention_policy_update

    retention_policy_update(
        tenant=tenant, actor=Actor.user(owner), changes=retention_changes({"legal_hold": True})
    )
    with pytest.raises(DatabaseError, match="under legal hold"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT mnemosyne_tenant_delete(%s, 'job:mallory')", [tenant.pk])
    with pytest.raises(DatabaseError, match="does not exist"):
        with transaction.atomic(), connection.cursor() as cursor:  # 0006's, without the rules
            cursor.execute("SELECT mnemosyne_tenant_delete(%s)", [tenant.pk])
    assert Tenant.objects.filter(pk=tenant.pk).exists()
    assert not TenantDeletion.objects.exists()


@pytest.mark.django_db
def test_tenant_deletion_through_the_function_writes_its_record(filled, owner) -> None:
    from tenants.models import TenantDeletion

    tenant = filled[0]
    with pytest.raises(DatabaseError, match="only a superuser or a job"):
        with transaction.atomic(), connection.cursor() as cursor:  # an admin, not a superuser
            cursor.execute(
                "SELECT mnemosyne_tenant_delete(%s, %s)", [tenant.pk, str(Actor.user(owner))]
            )
    with connection.cursor() as cursor:
        cursor.execute("SELECT mnemosyne_tenant_delete(%s, 'job:cleanup')", [tenant.pk])
        record_id = cursor.fetchone()[0]
    record = TenantDeletion.objects.get(pk=record_id)
    assert (record.slug, record.tenant_pk, record.actor) == ("acme", tenant.pk, "job:cleanup")
    assert record.counts["facts_fact"] == 1 and record.counts["tenants_apikey"] == 1
    assert record.counts["facts_factevent"] >= 1
    assert not Tenant.objects.filter(pk=tenant.pk).exists()
    with tenant_scope(filled[1]), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM facts_fact")
        assert cursor.fetchone()[0] == 1, "the other tenant keeps its rows"
    for statement in ("UPDATE tenants_tenantdeletion SET actor = 'x'",
                      "DELETE FROM tenants_tenantdeletion"):  # fmt: skip
        with pytest.raises(DatabaseError, match="permission denied"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(statement)


@pytest.mark.django_db
def test_the_runtime_role_reads_the_chain_head_and_cannot_move_it(filled) -> None:
    tenant = filled[0]
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute("SELECT seq FROM tenants_auditchainhead")
        assert cursor.fetchone()[0] >= 2
    for statement in (
        "UPDATE tenants_auditchainhead SET seq = 0",
        "DELETE FROM tenants_auditchainhead",
        f"INSERT INTO tenants_auditchainhead (tenant_id, seq, hash) VALUES ({tenant.pk}, 0, '')",  # noqa: S608
    ):
        with tenant_scope(tenant), pytest.raises(DatabaseError, match="permission denied"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(statement)
