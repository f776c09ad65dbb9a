"""The embedded PostgreSQL: start, status, stop, and what the application gets from it."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memoryadmin.embedded_db import OWNER_ROLE, RUNTIME_ROLE, EmbeddedPostgres, server_for_home
from tests.helpers import pid_alive


@pytest.fixture
def server(tmp_path: Path):
    server = server_for_home(tmp_path / "home")
    yield server
    server.stop()


def test_start_status_stop(server: EmbeddedPostgres) -> None:
    assert server.status().running is False
    assert server.start() is True
    status = server.status()
    assert status.running and status.initialised and status.pid
    assert server.start() is False, "a second start finds it running"
    assert server.stop() is True
    assert not server.status().running
    assert not pid_alive(status.pid)
    assert server.stop() is False


def test_the_runtime_role_gets_pgvector_without_superuser_powers(
    server: EmbeddedPostgres,
) -> None:
    server.start()
    with psycopg.connect(server.url()) as conn:
        role, *powers = conn.execute(
            "SELECT current_user, rolsuper, rolbypassrls, rolcreatedb, rolcreaterole "
            "FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        version = conn.execute("SHOW server_version").fetchone()[0]
        distance = conn.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone()[0]
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE mine (note text)")
    assert (role, powers) == (RUNTIME_ROLE, [False, False, False, False])
    assert int(version.split(".")[0]) >= 18
    assert distance == pytest.approx(1.0)
    with psycopg.connect(server.url(user=OWNER_ROLE)) as conn:
        owner, *powers = conn.execute(
            "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        database_owner = conn.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()"
        ).fetchone()[0]
    assert (owner, powers, database_owner) == (OWNER_ROLE, [False, False], OWNER_ROLE)


def test_data_survives_a_restart(server: EmbeddedPostgres) -> None:
    server.start()
    with psycopg.connect(server.url(user=OWNER_ROLE)) as conn:
        conn.execute("CREATE TABLE kept (note text)")
        conn.execute("INSERT INTO kept VALUES ('still here')")
    server.stop()
    server.start()
    with psycopg.connect(server.url(user=OWNER_ROLE)) as conn:
        assert conn.execute("SELECT note FROM kept").fetchone() == ("still here",)


def test_a_long_data_directory_gets_a_short_socket_path(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    server = server_for_home(deep)
    assert len(str(server.socket_dir / ".s.PGSQL.5432")) <= 100
    assert server.socket_dir == server_for_home(deep).socket_dir, "settings must find it again"
    try:
        server.start()
        with psycopg.connect(server.url()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
