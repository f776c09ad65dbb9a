from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
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

_STARTED_FOR_WORKERS = pytest.StashKey[bool]()


def _distributing(session: pytest.Session) -> bool:
    """Whether this is pytest-xdist's controller of a run spread over workers (`-n`)."""
    return session.config.pluginmanager.getplugin("dsession") is not None


def pytest_sessionstart(session: pytest.Session) -> None:
    """With `-n`, the controller starts the embedded PostgreSQL before the workers do: they all
    share it (each with its own test database, `test_mnemosyne_gw0`...), and none of them stops
    it under the others; the controller stops it once all are done."""
    if _distributing(session) and settings.MNEMOSYNE_EMBEDDED_DB:
        session.config.stash[_STARTED_FOR_WORKERS] = server_for_home(
            settings.MNEMOSYNE_HOME
        ).start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.stash.get(_STARTED_FOR_WORKERS, False):
        server_for_home(settings.MNEMOSYNE_HOME).stop()


# -- sharing the server between workers --------------------------------------------------------
# A test marked `server_alone` needs no other transaction open on the whole server (VACUUM FULL
# keeps a row version another database's open transaction might still see: tests/test_erasure.py
# greps the data files for a purged text). Under `-n` every test holds a shared lock on a file
# of the run and such a test an exclusive one; a gate taken before either keeps a waiting
# exclusive lock from being starved by the other workers' stream of shared ones.
_shared_held = 0


@contextmanager
def server_share(*, alone: bool = False) -> Iterator[None]:
    """Hold the server shared (or, with `alone`, to oneself) for the body; only under `-n`."""
    global _shared_held
    if not os.environ.get("PYTEST_XDIST_WORKER") or (_shared_held and not alone):
        yield  # one process, or already held shared by this worker (the module's world)
        return
    folder = Path(settings.MNEMOSYNE_HOME) / "run"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "tests-gate.lock", "a") as gate, open(folder / "tests.lock", "a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        _shared_held += not alone
        try:
            yield
        finally:
            _shared_held -= not alone
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _server_share(request: pytest.FixtureRequest) -> Iterator[None]:
    with server_share(alone=request.node.get_closest_marker("server_alone") is not None):
        yield


@pytest.fixture(scope="session")
def embedded_database() -> Iterator[None]:
    """Start the embedded PostgreSQL for the run (when no TEST_DATABASE_URL), stop it after.
    (Under `-n` the controller has started it: a worker finds it running and leaves it so.)"""
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
def _creating_database() -> Iterator[ExitStack]:
    """The server held shared while this worker's test database is created and migrated (long
    transactions); released once it is ready."""
    with ExitStack() as stack:
        stack.enter_context(server_share())
        yield stack


@pytest.fixture(scope="session")
def django_db_setup(
    embedded_database: None,
    _database_owner: None,
    _creating_database: ExitStack,
    django_db_setup: None,
) -> Iterator[None]:
    """pytest-django's test database, created by the owner once the server runs; the tests run
    as the runtime role, as web processes and workers do."""
    from operations.roles import connect_as, owner_credentials, runtime_credentials

    _creating_database.close()
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
