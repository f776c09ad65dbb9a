"""Upgrading a database the previous release made (docs/upgrades.md).

That release ran everything as one role, which owned every table, with policies that honoured
`app.all_tenants`. Here: such a database is made (migrated to the last migration before the
roles, as that one role) and filled; then `mnemosyne migrate` runs with the old role as the owner
and a runtime role beside it, and the runtime role works, owns nothing and cannot lift isolation.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection

from operations.roles import owner_credentials, runtime_credentials
from tests.helpers import PYTHON, REPO, child_env, database_url

# Builds and migrates a database of an earlier release (minutes): not in the quick loop.
pytestmark = [pytest.mark.django_db, pytest.mark.slow]

BEFORE_ROLES = "0005_lifecycle"  # tenants' last migration before the database roles

FILL = (
    "from tenants.actors import Actor; from tenants.services import *; "
    "from tenants.inputs import tenant_draft; from facts.inputs import fact_draft; "
    "from facts.services import fact_add; a = Actor.job('test'); "
    "t = tenant_create(draft=tenant_draft({'slug': 'ops', 'name': 'Ops'}), actor=a); "
    "fact_add(tenant=t, draft=fact_draft({'content': 'Ops deploys on Fridays'}), actor=a); "
    "print(apikey_create(tenant=t, name='hermes', actor=a).token)"
)

VERIFY = (
    "import json; from django.db import connection; "
    "from tenants.services import apikey_authenticate; from tenants.scope import tenant_scope; "
    "from facts.models import Fact; from operations.health import check_database; "
    "key = apikey_authenticate(token=TOKEN); "
    "c = connection.cursor(); "
    "c.execute(\"SELECT set_config('app.all_tenants', 'on', false)\"); "
    "c.execute('SELECT count(*) FROM facts_fact'); unscoped = c.fetchone()[0]; "
    "scope = tenant_scope(key.tenant); scope.__enter__(); "
    "facts = [f.content for f in Fact.objects.for_tenant(key.tenant)]; "
    "print(json.dumps({'tenant': key.tenant.slug, 'facts': facts, 'unscoped': unscoped, "
    "'health': check_database()}))"
)


def _url(credentials: dict, name: str) -> str:
    return database_url({**credentials, "NAME": name})


@pytest.fixture
def legacy_database() -> Iterator[str]:
    """A database of its own on the test server, made by the owner role (named after the test
    database, so that two suites on one server do not meet)."""
    name = f"{connection.settings_dict['NAME']}_upgrade"
    owner = owner_credentials()
    admin = _url(owner, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run(*args: str, **env: str | None) -> str:
    done = subprocess.run(  # noqa: S603 - our own command line
        [PYTHON, "-m", "memoryadmin.cli", *args],
        env=child_env(**env), cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_migrate_upgrades_a_single_role_database(legacy_database) -> None:
    old_role = _url(owner_credentials(), legacy_database)
    runtime = _url(runtime_credentials(), legacy_database)
    # The previous release: one role for everything, filled, with the schema as it was before
    # the roles (filled first, by this release's code, then migrated back: the code of today
    # writes the columns of today).
    legacy = {"DATABASE_URL": old_role, "DATABASE_OWNER_URL": None}
    _run("migrate", "--verbosity", "0", **legacy)
    token = _run("shell", "-c", FILL, **legacy).strip().splitlines()[-1]
    _run("migrate", "tenants", BEFORE_ROLES, "--verbosity", "0", **legacy)
    with psycopg.connect(old_role) as conn:
        policy = conn.execute(
            "SELECT qual FROM pg_policies WHERE tablename = 'facts_fact' "
            "AND policyname = 'tenant_isolation'"
        ).fetchone()[0]
        assert "all_tenants" in policy, "the old policies, as the previous release left them"
    # The new code run as that one role says what is wrong, and refuses to run commands.
    refused = subprocess.run(  # noqa: S603 - our own command line
        [PYTHON, "-m", "memoryadmin.cli", "check"],
        env=child_env(**legacy), cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "mnemosyne.E001" in refused.stderr and "owns tenant tables" in refused.stderr

    # The upgrade: the old role becomes the owner; web and workers move to the runtime role.
    upgraded = {"DATABASE_URL": runtime, "DATABASE_OWNER_URL": old_role}
    _run("migrate", "--verbosity", "0", **upgraded)
    seen = json.loads(
        _run("shell", "-c", f"TOKEN = {token!r}; " + VERIFY, **upgraded).strip().splitlines()[-1]
    )
    assert seen["tenant"] == "ops"
    assert seen["facts"] == ["Ops deploys on Fridays"]
    assert seen["unscoped"] == 0, "app.all_tenants shows nothing any more"
    assert seen["health"]["ok"], seen["health"]
    _run("check", **upgraded)
