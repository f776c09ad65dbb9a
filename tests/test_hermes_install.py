"""`mnemosyne hermes install` and `uninstall`, run as a user runs them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from django.db import connection

from tenants.services import apikey_create
from tests.helpers import PYTHON, REPO, child_env, database_url

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

USERS_CONFIG = """\
# My Hermes profile: keep these comments!
model:
  default: anthropic/claude-sonnet-4   # the one I like
  provider: openrouter
memory:
  memory_enabled: true
  provider: holographic
plugins:
  hermes-memory-store:
    auto_extract: true
toolsets:
- web
- memory
"""


def _mnemosyne(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "memoryadmin.cli", "hermes", *args],
        env=child_env(DATABASE_URL=database_url(connection.settings_dict)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def key(tenant, system_actor) -> str:
    return apikey_create(tenant=tenant, name="coder", actor=system_actor).token


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "hermes"
    home.mkdir()
    (home / "config.yaml").write_text(USERS_CONFIG)
    return home


def test_install_connects_the_profile_and_keeps_the_users_settings(home: Path, key: str) -> None:
    done = _mnemosyne("install", "--hermes-home", str(home), "--api-key", key, "--scope",
                      "project:beta")  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"Connecting the Hermes profile in {home}" in out
    assert "of tenant acme (Acme); it may read and write" in out
    assert "memory.provider: holographic -> mnemosyne" in out
    assert "set database_url, api_key, model_dir, embedder, scope, previous_provider" in out

    plugin = home / "plugins" / "mnemosyne"
    assert sorted(p.name for p in plugin.iterdir()) == ["__init__.py", "plugin.yaml"]
    assert yaml.safe_load((plugin / "plugin.yaml").read_text())["name"] == "mnemosyne"
    assert "register_memory_provider" in (plugin / "__init__.py").read_text()

    text = (home / "config.yaml").read_text()
    assert "# My Hermes profile: keep these comments!" in text and "# the one I like" in text
    config = yaml.safe_load(text)
    assert config["model"] == {"default": "anthropic/claude-sonnet-4", "provider": "openrouter"}
    assert config["memory"] == {"memory_enabled": True, "provider": "mnemosyne"}
    assert config["plugins"]["hermes-memory-store"] == {"auto_extract": True}
    assert config["toolsets"] == ["web", "memory"]
    section = config["plugins"]["mnemosyne"]
    assert section["api_key"] == key and section["scope"] == "project:beta"
    assert section["database_url"] == database_url(connection.settings_dict)

    again = _mnemosyne("install", "--hermes-home", str(home), "--api-key", key)
    assert again.returncode == 0, again.stderr
    assert "memory.provider is mnemosyne already" in again.stdout
    assert "was up to date" in again.stdout

    gone = _mnemosyne("uninstall", "--hermes-home", str(home))
    assert gone.returncode == 0, gone.stderr
    assert "memory.provider: mnemosyne -> holographic" in gone.stdout
    assert not plugin.exists()
    assert (home / "config.yaml").read_text() == USERS_CONFIG  # as the user left it


def test_install_refuses_an_unknown_key_and_changes_nothing(home: Path, key: str) -> None:
    done = _mnemosyne("install", "--hermes-home", str(home), "--api-key", key[:-3] + "xyz")
    assert done.returncode == 1
    assert "that API key is unknown or revoked" in done.stderr
    assert "Traceback" not in done.stderr
    assert (home / "config.yaml").read_text() == USERS_CONFIG
    assert not (home / "plugins").exists()


def test_install_refuses_a_bad_scope_and_a_plugin_folder_with_other_files(
    home: Path, key: str
) -> None:
    bad = _mnemosyne("install", "--hermes-home", str(home), "--api-key", key, "--scope", "a b")
    assert bad.returncode == 1 and "--scope segment 'a b' is not type:name" in bad.stderr
    plugin = home / "plugins" / "mnemosyne"
    plugin.mkdir(parents=True)
    (plugin / "helper.py").write_text("print('I run inside Hermes')\n")
    done = _mnemosyne("install", "--hermes-home", str(home), "--api-key", key)
    assert done.returncode == 1
    assert "holds files that are not Mnemosyne's (helper.py)" in done.stderr
    assert (home / "config.yaml").read_text() == USERS_CONFIG


def test_uninstall_of_a_profile_without_mnemosyne_says_so(home: Path) -> None:
    done = _mnemosyne("uninstall", "--hermes-home", str(home))
    assert done.returncode == 0, done.stderr
    assert "was not there" in done.stdout
    assert "memory.provider is holographic; left as it is" in done.stdout
    assert (home / "config.yaml").read_text() == USERS_CONFIG
