"""Whole Hermes Agent processes with the Mnemosyne plugin installed, against a chat server the test
runs on 127.0.0.1 and a Mnemosyne server: the model stores a fact with fact_store, a later turn's
request carries it in <memory-context>, a restarted agent gets the session's last turns back, and
a server (or its database) that goes away mid-conversation loses no turn.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psycopg
import pytest

from facts.models import FactVector
from facts.selectors.facts import fact_list
from hermes_provider.config import update_config
from memoryadmin.embedded_db import server_for_home
from memoryadmin.supervisor import gunicorn_command
from tenants.scope import tenant_scope
from tenants.services import apikey_create
from tests.helpers import PYTHON, REPO, child_env, free_port, wait_for
from tests.hermes_support import ChatServer, memory_context, remembering_model, write_profile

pytestmark = pytest.mark.slow


class HermesProcess:
    """`tests/hermes_agent_child.py` in its own process: one JSON command in, one JSON line out."""

    def __init__(self, home: Path, base_url: str, session_id: str, log: Path) -> None:
        self.output: list[str] = []
        self._answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self.process = subprocess.Popen(
            [PYTHON, str(REPO / "tests" / "hermes_agent_child.py")],
            env=child_env(
                HERMES_HOME=str(home),
                BASE_URL=base_url,
                SESSION_ID=session_id,
                # Nothing of Mnemosyne's own environment: the plugin reads config.yaml.
                DATABASE_URL=None,
                MNEMOSYNE_HOME=None,
                MNEMOSYNE_MODEL_DIR=None,
                SECRET_KEY=None,
                PYTHONPATH=None,
            ),
            cwd=home,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log.open("wb"),
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line.rstrip("\n"))
            try:
                answer = json.loads(line)
            except ValueError:
                continue  # what Hermes prints for the user (warnings, status)
            if isinstance(answer, dict):
                self._answers.put(answer)

    def send(self, command: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        try:
            return self._answers.get(timeout=timeout)
        except queue.Empty:
            output = "\n".join(self.output)
            raise AssertionError(f"no answer to {command}; output:\n{output}") from None

    def say(self, text: str) -> str:
        return self.send({"say": text})["reply"]

    def exit(self) -> dict[str, Any]:
        answer = self.send({"exit": True})
        self.process.wait(timeout=60)
        return answer


@pytest.mark.django_db(transaction=True)
def test_an_agent_stores_a_fact_recalls_it_and_gets_its_session_back_after_a_restart(
    tmp_path: Path, tenant, system_actor, live_server, eager_tasks
) -> None:
    token = apikey_create(tenant=tenant, name="hermes", actor=system_actor).token
    home = write_profile(tmp_path / "hermes", token, live_server.url)
    with ChatServer(remembering_model) as model:
        agent = HermesProcess(home, model.base_url, "chat-1", tmp_path / "agent-1.log")
        agent.say("Please remember that the staging database is called Orion.")
        facts = [f.content for f in fact_list(tenant=tenant).facts]
        assert facts == ["The staging database is called Orion."]
        # The model's tool call went through fact_store: the fact is the key's.
        assert fact_list(tenant=tenant).facts[0].created_by.endswith(":hermes")

        agent.say("What is the staging database called?")
        asked = model.user_messages()[-1]
        assert asked.startswith("What is the staging database called?")
        assert "The staging database is called Orion." in memory_context(asked)
        bye = agent.exit()
        assert bye["django_env"] is None  # no settings module leaked to Hermes
        # The provider loaded neither Django nor a database driver nor a model: the server did.
        assert bye["loaded"] == [], bye["loaded"]
        # The server embedded what the profile stored (its worker; here, eager tasks).
        stored = (
            fact_list(tenant=tenant, limit=10).facts
            + fact_list(tenant=tenant, kind="turn", limit=10).facts
        )
        with tenant_scope(tenant):
            embedded = set(FactVector.objects.for_tenant(tenant).values_list("fact_id", flat=True))
        assert {f.pk for f in stored} <= embedded

        turns = sorted(fact_list(tenant=tenant, kind="turn").facts, key=lambda f: f.position)
        assert [(t.speaker, t.content) for t in turns] == [
            ("user", "Please remember that the staging database is called Orion."),
            ("assistant", "Noted; I will remember that."),
            ("user", "What is the staging database called?"),
            ("assistant", "You said: What is the staging database called? (I recall something)"),
        ]
        assert {t.session_id for t in turns} == {"chat-1"}

        again = HermesProcess(home, model.base_url, "chat-1", tmp_path / "agent-2.log")
        again.say("Where were we?")
        restored = memory_context(model.user_messages()[-1])
        assert "## Recent conversation" in restored
        assert restored.index("Please remember that the staging database is called Orion.") < (
            restored.index("What is the staging database called?")
        )
        again.say("Thanks.")
        assert "## Recent conversation" not in memory_context(model.user_messages()[-1])
        again.exit()


# -- a server and a database the test owns, so it can stop them ------------------------------


class OwnServer:
    """Mnemosyne's web server (gunicorn, as `mnemosyne up` runs it) on a database of its own."""

    def __init__(self, home: Path, database: Any, log: Path) -> None:
        self.home, self.database, self.log = home, database, log
        self.url = f"http://127.0.0.1:{free_port()}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        bind = self.url.removeprefix("http://")
        self.process = subprocess.Popen(
            [PYTHON, *gunicorn_command(bind=bind, workers=1)],
            env=child_env(MNEMOSYNE_HOME=str(self.home), DATABASE_URL=None),
            cwd=REPO,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        wait_for(self._answers, timeout=120, what="the web server")

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=5):  # noqa: S310
                return True
        except urllib.error.HTTPError:
            return True  # it answers (a 503 names a part that is down)
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


@pytest.fixture
def own_server(tmp_path: Path):
    """An embedded PostgreSQL of this test's own, migrated, with a tenant and its API key, and
    a web server on it.

    The database lives outside pytest's temporary folders: a pytest session starting meanwhile
    (anyone's) makes those private again, and the server, which runs as its own system user,
    would lose its way to its data."""
    home = Path(tempfile.mkdtemp(prefix="mnemosyne-outage-test-"))
    database = server_for_home(home)
    database.start()
    env = child_env(MNEMOSYNE_HOME=str(home), DATABASE_URL=None)
    web = OwnServer(home, database, tmp_path / "web.log")
    try:
        subprocess.run(
            [PYTHON, "-m", "memoryadmin.cli", "migrate", "--verbosity", "0"],
            env=env, cwd=REPO, check=True, timeout=300,
        )  # fmt: skip
        made = subprocess.run(
            [PYTHON, "-m", "memoryadmin.cli", "shell", "-c",
             "from tenants.actors import Actor; from tenants.services import *; "
             "from tenants.inputs import tenant_draft; "
             "t = tenant_create(draft=tenant_draft({'slug': 'ops', 'name': 'Ops'}), "
             "actor=Actor.job('test')); "
             "print(apikey_create(tenant=t, name='hermes', actor=Actor.job('test')).token)"],
            env=env, cwd=REPO, check=True, timeout=120, capture_output=True, text=True,
        )  # fmt: skip
        web.start()
        yield web, made.stdout.strip().splitlines()[-1]
    finally:
        web.stop()
        database.stop()
        shutil.rmtree(home, ignore_errors=True)


def _rows(web: OwnServer) -> list[tuple[int, str, str]]:
    with psycopg.connect(
        host=str(web.database.socket_dir), port=5432, user="postgres", dbname="mnemosyne"
    ) as db:
        return db.execute(
            "SELECT position, speaker, content FROM facts_fact WHERE kind = 'turn' "
            "ORDER BY position"
        ).fetchall()


def test_a_server_or_database_outage_mid_conversation_loses_no_turn_and_writes_none_twice(
    tmp_path: Path, own_server
) -> None:
    web, token = own_server
    hermes = tmp_path / "hermes"
    hermes.mkdir()
    installed = subprocess.run(
        [PYTHON, "-m", "memoryadmin.cli", "hermes", "install", "--hermes-home", str(hermes),
         "--url", web.url, "--api-key", token, "--scope", "team:ops"],
        env=child_env(DATABASE_URL=None, MNEMOSYNE_HOME=None),
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    assert "tenant ops (Ops)" in installed.stdout
    update_config(hermes / "config.yaml", {"plugins.mnemosyne.flush_seconds": 2})

    said = [f"Turn {n}: the {word} is ready." for n, word in enumerate(
        ["build", "deploy", "backup", "report", "release", "review", "retro"], 1)]  # fmt: skip
    with ChatServer(remembering_model) as model:
        agent = HermesProcess(hermes, model.base_url, "ops-chat", tmp_path / "agent-1.log")
        agent.say(said[0])
        wait_for(lambda: len(_rows(web)) == 2, timeout=30, what="the first turn")

        web.stop()  # the server goes away mid-conversation
        assert agent.say(said[1]).startswith("You said: Turn 2")  # the agent carries on
        agent.say(said[2])
        web.start()
        agent.say(said[3])
        wait_for(lambda: len(_rows(web)) == 8, timeout=60, what="the buffer to drain")

        web.database.stop()  # now its database: the server answers 503
        agent.say(said[4])
        agent.exit()  # Hermes exits while the turn cannot be stored: it waits on disk
        assert any("kept in" in line for line in agent.output), agent.output

        # Hermes starts again before the database is back.
        again = HermesProcess(hermes, model.base_url, "ops-chat", tmp_path / "agent-2.log")
        assert again.say(said[5]).startswith("You said: Turn 6")
        assert any("unreachable" in line for line in again.output), again.output
        web.database.start()
        again.say(said[6])
        wait_for(lambda: len(_rows(web)) == 14, timeout=60, what="the buffer to drain")
        again.exit()

    rows = _rows(web)
    users = [content for _, speaker, content in rows if speaker == "user"]
    assert users == said  # every turn, once, in order
    assert [position for position, _, _ in rows] == list(range(14))
    assert len({content for _, _, content in rows}) == 14
