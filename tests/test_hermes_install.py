"""`mnemosyne hermes install` and `uninstall`, run as a user runs them, against a live server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tenants.services import apikey_create
from tests.helpers import PYTHON, REPO, child_env

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
        # Nothing that reaches the database: the command needs the server's URL and a key.
        env=child_env(DATABASE_URL=None, MNEMOSYNE_HOME="/nonexistent", SECRET_KEY=None),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def key(tenant, system_actor) -> str:
    return apikey_create(tenant=tenant, name="coder", actor=system_actor).token


@pytest.fixture
def url(live_server) -> str:
    return live_server.url


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "hermes"
    home.mkdir()
    (home / "config.yaml").write_text(USERS_CONFIG)
    (home / "config.yaml").chmod(0o644)  # as an editor leaves it
    return home


def test_install_connects_the_profile_and_keeps_the_users_settings(
    home: Path, key: str, url: str
) -> None:
    done = _mnemosyne("install", "--hermes-home", str(home), "--url", url, "--api-key", key,
                      "--scope", "project:beta")  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"Connecting the Hermes profile in {home} to Mnemosyne at {url}" in out
    assert "of tenant acme (Acme); it may read and write" in out
    assert "memory.provider: holographic -> mnemosyne" in out
    assert "set url, api_key, scope, previous_provider" in out

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
    assert section == {
        "url": url,
        "api_key": key,
        "scope": "project:beta",
        "previous_provider": "holographic",
    }

    assert (home / "config.yaml").stat().st_mode & 0o777 == 0o600  # it holds the API key

    (home / "config.yaml").chmod(0o644)
    again = _mnemosyne("install", "--hermes-home", str(home), "--url", url, "--api-key", key)
    assert again.returncode == 0, again.stderr
    assert "memory.provider is mnemosyne already" in again.stdout
    assert "was up to date" in again.stdout
    assert (home / "config.yaml").stat().st_mode & 0o777 == 0o600  # unchanged, yet closed

    gone = _mnemosyne("uninstall", "--hermes-home", str(home))
    assert gone.returncode == 0, gone.stderr
    assert "memory.provider: mnemosyne -> holographic" in gone.stdout
    assert not plugin.exists()
    assert (home / "config.yaml").read_text() == USERS_CONFIG  # as the user left it


def test_install_refuses_an_unknown_key_and_changes_nothing(home: Path, key: str, url: str) -> None:
    done = _mnemosyne("install", "--hermes-home", str(home), "--url", url,
                      "--api-key", key[:-3] + "xyz")  # fmt: skip
    assert done.returncode == 1
    assert "that API key is unknown or revoked" in done.stderr
    assert "Traceback" not in done.stderr
    assert (home / "config.yaml").read_text() == USERS_CONFIG
    assert not (home / "plugins").exists()


def test_install_refuses_a_server_that_does_not_answer_and_changes_nothing(
    home: Path, key: str
) -> None:
    from tests.helpers import free_port

    nobody = f"http://127.0.0.1:{free_port()}"
    done = _mnemosyne("install", "--hermes-home", str(home), "--url", nobody, "--api-key", key)
    assert done.returncode == 1
    assert f"cannot reach {nobody}" in done.stderr and "is Mnemosyne running" in done.stderr
    assert "Traceback" not in done.stderr
    assert (home / "config.yaml").read_text() == USERS_CONFIG
    assert not (home / "plugins").exists()


def test_installing_again_takes_the_database_url_of_an_earlier_release_out(
    home: Path, key: str, url: str
) -> None:
    from hermes_provider.config import update_config

    update_config(home / "config.yaml", {
        "memory.provider": "mnemosyne",
        "plugins.mnemosyne.database_url": "postgresql://mnemosyne:s3cret@db:5432/mnemosyne",
        "plugins.mnemosyne.api_key": key,
        "plugins.mnemosyne.model_dir": "/srv/mnemosyne/models",
        "plugins.mnemosyne.embedder": "default",
    })  # fmt: skip
    done = _mnemosyne("install", "--hermes-home", str(home), "--url", url, "--api-key", key)
    assert done.returncode == 0, done.stderr
    assert "removed database_url, model_dir, embedder (no longer used)" in done.stdout
    text = (home / "config.yaml").read_text()
    assert "s3cret" not in text and "postgresql" not in text and "/srv/mnemosyne" not in text
    assert yaml.safe_load(text)["plugins"]["mnemosyne"] == {"url": url, "api_key": key}


def test_install_refuses_a_bad_scope_and_a_plugin_folder_with_other_files(
    home: Path, key: str, url: str
) -> None:
    bad = _mnemosyne("install", "--hermes-home", str(home), "--url", url, "--api-key", key,
                     "--scope", "a b")  # fmt: skip
    assert bad.returncode == 1 and "--scope: segment 'a b' is not type:name" in bad.stderr
    plugin = home / "plugins" / "mnemosyne"
    plugin.mkdir(parents=True)
    (plugin / "helper.py").write_text("print('I run inside Hermes')\n")
    done = _mnemosyne("install", "--hermes-home", str(home), "--url", url, "--api-key", key)
    assert done.returncode == 1
    assert "holds files that are not Mnemosyne's (helper.py)" in done.stderr
    assert (home / "config.yaml").read_text() == USERS_CONFIG


def test_uninstall_of_a_profile_without_mnemosyne_says_so(home: Path) -> None:
    done = _mnemosyne("uninstall", "--hermes-home", str(home))
    assert done.returncode == 0, done.stderr
    assert "was not there" in done.stdout
    assert "memory.provider is holographic; left as it is" in done.stdout
    assert (home / "config.yaml").read_text() == USERS_CONFIG
