from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings

from memoryadmin.embedded_db import server_for_home


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
def django_db_setup(embedded_database: None, django_db_setup: None) -> None:
    """pytest-django's test database, created once the server runs."""
