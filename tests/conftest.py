from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from memoryadmin.embedded_db import server_for_home
from tests.api_fixtures import (  # noqa: F401 - the REST API tests' tenant with data
    cast,
    module_cast,
    shared_world,
    world,
)
from tests.mcp_support import eager_tasks, mcp_team  # noqa: F401 - the MCP tests' team


@pytest.fixture(scope="session")
def embedded_database() -> Iterator[None]:
    """Start the embedded PostgreSQL for the run (when no TEST_DATABASE_URL), stop it after."""
    if not settings.MNEMOSYNE_EMBEDDED_DB:
        yield
        return
    server = server_for_home(settings.MNEMOSYNE_HOME)
    started = server.start()
    yield
    if started:
        from django.db import connections

        connections.close_all()
        server.stop()


@pytest.fixture(scope="session")
def _database_owner(embedded_database: None) -> Iterator[None]:
    """The test database is made, migrated and dropped by the owner role (as `mnemosyne migrate`
    does); flushes after transactional tests too (TRUNCATE is the owner's alone)."""
    from django.test import TransactionTestCase

    from operations.roles import as_owner, connect_as, owner_credentials

    flush = TransactionTestCase._fixture_teardown

    def flush_as_owner(self: TransactionTestCase) -> None:
        with as_owner():
            flush(self)

    TransactionTestCase._fixture_teardown = flush_as_owner  # type: ignore[method-assign]
    connect_as(owner_credentials())
    yield
    TransactionTestCase._fixture_teardown = flush  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def django_db_setup(
    embedded_database: None, _database_owner: None, django_db_setup: None
) -> Iterator[None]:
    """pytest-django's test database, created by the owner once the server runs; the tests run
    as the runtime role, as web processes and workers do."""
    from operations.roles import connect_as, owner_credentials, runtime_credentials

    connect_as(runtime_credentials())
    yield
    connect_as(owner_credentials())  # to drop the test database


@pytest.fixture(scope="module", autouse=True)
def _module_world(request: pytest.FixtureRequest) -> None:
    """A module marked `shared_world` builds its world before any test's own transaction opens
    (tests/api_fixtures.py): each test's is then a savepoint inside the world's."""
    if request.node.get_closest_marker("shared_world") is not None:
        request.getfixturevalue("module_cast")


# -- tenants and people ---------------------------------------------------------------------
# The owner (admin of `tenant`), a teammate with the read-only auditor role, and an outsider who
# belongs to `other_tenant` only. In a module marked `shared_world` they are the module's one
# world's (tests/api_fixtures.py).


@pytest.fixture
def system_actor():
    from tenants.actors import Actor

    return Actor.job("tests")


@pytest.fixture
def tenant(request, db, system_actor):
    from tenants.inputs import tenant_draft
    from tenants.services import tenant_create

    if shared_world(request):
        return request.getfixturevalue("cast").world.tenant
    return tenant_create(actor=system_actor, draft=tenant_draft({"slug": "acme", "name": "Acme"}))


@pytest.fixture
def other_tenant(request, db, system_actor):
    from tenants.inputs import tenant_draft
    from tenants.services import tenant_create

    if shared_world(request):
        return request.getfixturevalue("cast").world.other
    return tenant_create(
        actor=system_actor, draft=tenant_draft({"slug": "globex", "name": "Globex"})
    )


def _member(username: str, tenant, role: str, actor):
    from django.contrib.auth import get_user_model

    from tenants.services import membership_set

    user = get_user_model().objects.create_user(username, password=f"pw-{username}-123")
    membership_set(tenant=tenant, user=user, role=role, actor=actor)
    return user


@pytest.fixture
def owner(request, db, tenant, system_actor):
    if shared_world(request):
        return request.getfixturevalue("cast").owner
    return _member("olivia", tenant, "admin", system_actor)


@pytest.fixture
def auditor(request, db, tenant, system_actor):
    if shared_world(request):
        return request.getfixturevalue("cast").auditor
    return _member("arthur", tenant, "auditor", system_actor)


@pytest.fixture
def outsider(request, db, other_tenant, system_actor):
    if shared_world(request):
        return request.getfixturevalue("cast").outsider
    return _member("oscar", other_tenant, "admin", system_actor)


@pytest.fixture
def owner_actor(owner):
    from tenants.actors import Actor

    return Actor.user(owner)


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    """Every test starts in the default language: a request a test client made in Chinese leaves
    its language active on the thread (in a server every request sets its own)."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _fresh_vector_registry() -> Iterator[None]:
    """Each test's transaction is rolled back, registered embedding models with it: the process
    must not remember them."""
    from indexing.vectors import vector_models_changed

    vector_models_changed()
    yield
    vector_models_changed()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's chromium, headless, for the browser tests (one per run)."""
    import shutil

    from tests.test_web_browser import ARGS, CHROMIUM, SHOTS

    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium chromium-driver)")
    from playwright.sync_api import sync_playwright

    if SHOTS.exists():
        shutil.rmtree(SHOTS)
    SHOTS.mkdir(parents=True)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield launched
        launched.close()
