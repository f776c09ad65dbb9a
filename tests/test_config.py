"""Configuration from the environment: bad values stop the process with the variable's name."""

from __future__ import annotations

import subprocess

import pytest

from memoryadmin.env import ConfigError, env_bool, env_int, env_list, parse_database_url
from memoryadmin.settings import _secret_key
from tests.helpers import PYTHON, REPO, child_env


def test_env_bool_accepts_the_usual_spellings(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw, expected in [("1", True), ("yes", True), ("On", True), ("0", False), ("off", False)]:
        monkeypatch.setenv("DEBUG", raw)
        assert env_bool("DEBUG") is expected
    monkeypatch.delenv("DEBUG")
    assert env_bool("DEBUG", default=True) is True


def test_env_bool_rejects_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ConfigError, match=r"DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG")


def test_env_int_checks_type_and_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKERS", "many")
    with pytest.raises(ConfigError, match="WORKERS='many' is not an integer"):
        env_int("WORKERS", 2)
    monkeypatch.setenv("WORKERS", "0")
    with pytest.raises(ConfigError, match="WORKERS=0 must be at least 1"):
        env_int("WORKERS", 2, minimum=1)
    monkeypatch.setenv("WORKERS", " 4 ")
    assert env_int("WORKERS", 2, minimum=1) == 4


def test_env_list_splits_and_trims(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALLOWED_HOSTS", " memory.example.com, ,10.0.0.5 ")
    assert env_list("ALLOWED_HOSTS", ["localhost"]) == ["memory.example.com", "10.0.0.5"]


def test_database_url_for_a_tcp_server() -> None:
    db = parse_database_url("postgresql://app:s%40cret@db.internal:6432/memory?sslmode=require")
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == (
        "app",
        "s@cret",
        "db.internal",
        "6432",
        "memory",
    )
    assert db["OPTIONS"] == {"sslmode": "require"}


def test_database_url_for_a_unix_socket() -> None:
    db = parse_database_url("postgres://app@/memory?host=/var/run/postgresql")
    assert db["HOST"] == "/var/run/postgresql"
    assert db["OPTIONS"] == {}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://root@localhost/db", "must be a postgresql:// URL"),
        ("postgresql://app@localhost:5432/", "names no database"),
        ("postgresql://app@localhost:port/db", "invalid port"),
    ],
)
def test_database_url_errors_name_the_problem(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_database_url(url)


def test_secret_key_is_generated_once_and_kept(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SECRET_KEY", raising=False)
    first = _secret_key(tmp_path)
    assert len(first) >= 50
    assert _secret_key(tmp_path) == first
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv("SECRET_KEY", "from-the-environment-0123456789-abcdefghij")
    assert _secret_key(tmp_path) == "from-the-environment-0123456789-abcdefghij"


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("DEBUG", "maybe", "DEBUG='maybe' is not a boolean"),
        ("DATABASE_URL", "sqlite:///db.sqlite3", "DATABASE_URL must be a postgresql:// URL"),
        ("MNEMOSYNE_HEARTBEAT_SECONDS", "0", "MNEMOSYNE_HEARTBEAT_SECONDS=0 must be at least 1"),
    ],
)
def test_the_command_line_refuses_bad_configuration(
    tmp_path, variable: str, value: str, message: str
) -> None:
    result = subprocess.run(
        [PYTHON, "-m", "memoryadmin.cli", "check"],
        env=child_env(MNEMOSYNE_HOME=str(tmp_path), **{variable: value}),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert f"configuration error: {message}" in result.stderr
    assert "Traceback" not in result.stderr
