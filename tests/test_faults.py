"""Parts of `mnemosyne up` die under load: nothing acknowledged is lost, clients get clear
errors, `/healthz` and `status` name the part that is down, and the part comes back by itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryadmin.embedded_db import server_for_home
from tests.helpers import pid_alive, wait_for
from tests.test_up import Up, _health, _mnemosyne

pytestmark = pytest.mark.slow


class Writer(threading.Thread):
    """An agent storing facts as fast as the server lets it; keeps what was acknowledged."""

    def __init__(self, url: str, key: str, name: str) -> None:
        super().__init__(daemon=True)
        self.url, self.key, self.name = url, key, name
        self.acknowledged: list[str] = []
        self.refusals: dict[int, int] = {}  # status -> count (never a 500)
        self.bodies: list[dict[str, Any]] = []
        self.slowest_s = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            content = f"{self.name} wrote note number {n} about the harbour"
            started = time.monotonic()
            status, body, _ = _request(
                self.url, "POST", "/api/v1/facts", self.key, {"content": content}
            )
            self.slowest_s = max(self.slowest_s, time.monotonic() - started)
            if status in (200, 201):
                self.acknowledged.append(content)
            else:
                self.refusals[status] = self.refusals.get(status, 0) + 1
                if status >= 500 and body:
                    self.bodies.append(body)
                time.sleep(0.2)


def _request(
    url: str, method: str, path: str, key: str, payload: dict[str, Any] | None = None
) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
    """(status, JSON body, headers); status 0 when nothing answered (web restarting)."""
    request = urllib.request.Request(
        url + path,
        method=method,
        data=json.dumps(payload).encode() if payload is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=15) as response:  # noqa: S310 - our server
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"raw": raw[:300].decode(errors="replace")}
        return error.code, body, dict(error.headers)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, None, {}


def _health_or_none(url: str) -> tuple[int, dict[str, Any]]:
    try:
        return _health(url)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, {}  # the web server is restarting


def _info(home: Path) -> dict[str, Any]:
    return json.loads((home / "run" / "up.json").read_text())


def _postmaster(home: Path) -> int:
    return int((home / "pgdata" / "postmaster.pid").read_text().split()[0])


def _stored(home: Path, slug: str) -> dict[str, Any]:
    """Every fact of the tenant (content -> count) and how many have a vector, read directly."""
    code = (
        "import json\n"
        "from tenants.models import Tenant\n"
        "from tenants.scope import tenant_scope\n"
        "from facts.models import Fact, FactVector\n"
        f"t = Tenant.objects.get(slug={slug!r})\n"
        "with tenant_scope(t):\n"
        "    contents = list(Fact.objects.for_tenant(t).values_list('content', flat=True))\n"
        "    vectors = FactVector.objects.for_tenant(t).values('fact_id').distinct().count()\n"
        "print('RESULT' + json.dumps({'contents': contents, 'embedded': vectors}))\n"
    )
    result = _mnemosyne(home, "shell", "-c", code)
    assert result.returncode == 0, result.stdout + result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("RESULT"))
    return json.loads(line.removeprefix("RESULT"))


def _key(home: Path, slug: str) -> str:
    made = _mnemosyne(home, "tenant", "create", slug, "Fault drills")
    assert made.returncode == 0, made.stdout + made.stderr
    created = _mnemosyne(home, "apikey", "create", slug, "drill-agent")
    assert created.returncode == 0, created.stdout + created.stderr
    return next(x for x in created.stdout.split() if x.startswith("mnm_"))


def _wait_restarted(home: Path, name: str, old_pid: int, restarts: int) -> int:
    def back() -> int | None:
        info = _info(home)
        pid = info["children"][name]
        count = info.get("restarts", {}).get(name, {}).get("count", 0)
        return pid if pid != old_pid and count >= restarts and name not in info["down"] else None

    return wait_for(back, timeout=60, what=f"the {name} to be restarted")


@pytest.fixture
def started() -> Iterator[list[Up]]:
    """`up` processes a test starts; whatever happens, none outlives it, nor its database."""
    ups: list[Up] = []
    yield ups
    for up in ups:
        if up.process.poll() is None:
            os.kill(up.process.pid, signal.SIGCONT)
            up.process.send_signal(signal.SIGTERM)
            try:
                up.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                up.process.kill()
        if server_running(up.home):
            server_for_home(up.home).stop()


def test_killed_parts_come_back_and_no_acknowledged_write_is_lost(
    tmp_path: Path, started: list[Up]
) -> None:
    home = tmp_path / "home"
    # Beat's sweep finds facts whose embedding message died with a killed worker, every 5 s here.
    up = Up(home, _free_port(), MNEMOSYNE_EMBED_SWEEP_SECONDS="5")
    started.append(up)
    writers: list[Writer] = []
    try:
        up.wait_ready()
        key = _key(home, "drills")
        writers = [Writer(up.url, key, f"agent{i}") for i in range(3)]
        for writer in writers:
            writer.start()
        wait_for(lambda: all(len(w.acknowledged) >= 5 for w in writers), timeout=60, what="writes")

        # 1. The worker's main process, SIGKILLed while it embeds: it comes back by itself.
        worker = _info(home)["children"]["worker"]
        os.kill(worker, signal.SIGKILL)
        _wait_restarted(home, "worker", worker, 1)
        assert "worker   exited unexpectedly (code -9); restarting in 1 s" in up.output

        # 2. The web server's main process, SIGKILLed under load.
        web = _info(home)["children"]["web"]
        os.kill(web, signal.SIGKILL)
        _wait_restarted(home, "web", web, 1)
        wait_for(lambda: _health_or_none(up.url)[0] == 200, timeout=60, what="healthy again")

        # 3. PostgreSQL killed while `up` is paused, so the outage lasts long enough to look at.
        os.kill(up.process.pid, signal.SIGSTOP)
        try:
            postmaster = _postmaster(home)
            os.kill(postmaster, signal.SIGKILL)
            wait_for(lambda: not pid_alive(postmaster), timeout=10, what="postgres to die")
            status, body, headers = _request(up.url, "GET", "/api/v1/facts", key)
            assert status == 503, body
            assert body and body["code"] == "database_unavailable", body
            assert "database is unavailable" in body["message"]
            assert headers.get("Retry-After") == "5"
            code, report = _health(up.url)
            assert code == 503 and report["failing"] == ["database"], report
            status_cmd = _mnemosyne(home, "status")
            assert status_cmd.returncode == 1, status_cmd.stdout
            assert "embedded PostgreSQL, stopped" in status_cmd.stdout
            # Another command neither starts the database under `up` nor waits for it long.
            other = _mnemosyne(home, "showmigrations", "facts")
            assert other.returncode != 0
            assert not server_running(home)
        finally:
            os.kill(up.process.pid, signal.SIGCONT)
        wait_for(lambda: "database restarted" in up.output, timeout=60, what="database restart")
        wait_for(lambda: _health_or_none(up.url)[0] == 200, timeout=90, what="healthy at last")

        time.sleep(2)  # a few more writes after everything came back
    finally:
        for writer in writers:
            writer.stop.set()
        for writer in writers:
            writer.join(timeout=30)
    try:
        for writer in writers:
            assert set(writer.refusals) <= {0, 503}, (writer.refusals, writer.bodies)
            assert writer.slowest_s < 16, "a request hung past its timeout"
        acknowledged = [content for w in writers for content in w.acknowledged]
        assert len(acknowledged) > 20
        stored = _stored(home, "drills")
        for content in acknowledged:
            assert stored["contents"].count(content) == 1, content
        # Every fact gets its vector in the end (the killed worker's batch included).
        wait_for(
            lambda: _stored(home, "drills")["embedded"] == len(_stored(home, "drills")["contents"]),
            timeout=120,
            what="every fact to be embedded",
        )
        status_cmd = _mnemosyne(home, "status")
        assert status_cmd.returncode == 0, status_cmd.stdout
        assert "(restarted 1 times, last exit code -9)" in status_cmd.stdout
        assert "embedded PostgreSQL, running" in status_cmd.stdout
        assert "(restarted 1 times)" in status_cmd.stdout
        assert up.stop_with(signal.SIGINT) == 0, up.output
    finally:
        if up.process.poll() is None:
            up.process.kill()
    assert not server_running(home), "Ctrl-C stops the database `up` restarted"


def test_a_killed_up_tree_starts_again_on_the_same_data(tmp_path: Path, started: list[Up]) -> None:
    home = tmp_path / "home"
    up = Up(home, _free_port())
    started.append(up)
    try:
        up.wait_ready()
        key = _key(home, "again")
        status, body, _ = _request(up.url, "POST", "/api/v1/facts", key, {"content": "kept"})
        assert status in (200, 201), body
        children = list(_info(home)["children"].values())
        pids = [up.process.pid, *children]
        os.kill(up.process.pid, signal.SIGKILL)
        for pid in children:
            os.killpg(pid, signal.SIGKILL)  # each child with its own processes (its group)
        up.process.wait(timeout=10)
        assert server_running(home), "the embedded database outlives a killed `up`"
    finally:
        if up.process.poll() is None:
            up.process.kill()
    wait_for(lambda: not any(pid_alive(p) for p in pids), timeout=15, what="the old tree to end")

    again = Up(home, _free_port())
    started.append(again)
    try:
        again.wait_ready()
        assert "already running, taken over" in again.output
        assert _stored(home, "again")["contents"] == ["kept"]
        assert again.stop_with(signal.SIGINT) == 0, again.output
    finally:
        if again.process.poll() is None:
            again.process.kill()
    assert not server_running(home), "Ctrl-C stops the database `up` took over"


_RETENTION_SETUP = """
import json
from datetime import timedelta
from django.utils import timezone
from facts.models import Fact, Status
from facts.retention import retention_run_start
from facts.services import content_hash
from tenants.actors import Actor
from tenants.inputs import retention_changes, tenant_draft
from tenants.scope import tenant_scope
from tenants.services import retention_policy_update, tenant_create
actor = Actor.job("tests")
t = tenant_create(draft=tenant_draft({"slug": "outage", "name": "Outage"}), actor=actor)
now = timezone.now()
with tenant_scope(t):
    low = Fact.objects.bulk_create(
        Fact(tenant=t, content=f"Build {i} passed on runner {i % 7}",
             content_hash=content_hash(f"Build {i} passed on runner {i % 7}"),
             trust_score=0.1, created_by="job:tests", created_at=now)
        for i in range(15000))
    old = Fact.objects.bulk_create(
        Fact(tenant=t, content=f"Old incident {i}", content_hash=f"{i:064x}",
             status=Status.ARCHIVED, archived_at=now - timedelta(days=90),
             created_by="job:tests", created_at=now)
        for i in range(600))
retention_policy_update(tenant=t, actor=actor, changes=retention_changes(
    {"archive_below_trust": 0.3, "purge_archived_after_days": 30}))
run, _ = retention_run_start(tenant=t, actor=actor)
print("RESULT" + json.dumps({"tenant": t.pk, "run": run.pk, "low": [f.pk for f in low],
                             "old": [f.pk for f in old]}))
"""

_RETENTION_OUTCOME = """
import json
from collections import Counter
from facts.models import EventAction, Fact, FactEvent, RetentionRun
from tenants.models import Tenant
from tenants.scope import tenant_scope
t = Tenant.objects.get(slug="outage")
with tenant_scope(t):
    run = RetentionRun.objects.for_tenant(t).get(pk=RUN)
    events = Counter(FactEvent.objects.for_tenant(t)
                     .filter(action__in=[EventAction.ARCHIVE, EventAction.PURGE])
                     .values_list("fact_id", "action"))
    statuses = Counter(Fact.objects.for_tenant(t).values_list("status", flat=True))
print("RESULT" + json.dumps({
    "status": run.status, "counts": run.counts, "attempts": run.attempts,
    "archived": sorted(f for f, a in events if a == "archive"),
    "purged": sorted(f for f, a in events if a == "purge"),
    "most_events_per_step": max(events.values()), "statuses": statuses}))
"""


def _outcome(home: Path, run_id: int) -> dict[str, Any]:
    return _shell(home, _RETENTION_OUTCOME.replace("RUN", str(int(run_id))))


def _shell(home: Path, code: str) -> dict[str, Any]:
    result = _mnemosyne(home, "shell", "-c", code)
    assert result.returncode == 0, result.stdout + result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("RESULT"))
    return json.loads(line.removeprefix("RESULT"))


def _run_state(home: Path, tenant_id: int, run_id: int) -> dict[str, Any] | None:
    """The retention run's status and progress, read straight from the database (None while
    the database is down)."""
    import psycopg

    try:
        with psycopg.connect(server_for_home(home).url(), connect_timeout=2) as db:
            db.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_id)])
            row = db.execute(
                "SELECT status, batches_done FROM facts_retentionrun "
                "WHERE tenant_id = %s AND id = %s",
                [tenant_id, run_id],
            ).fetchone()
    except psycopg.OperationalError:
        return None
    return {"status": row[0], "batches_done": row[1]} if row else None


def test_a_retention_run_finishes_once_after_the_database_restarts(
    tmp_path: Path, started: list[Up]
) -> None:
    home = tmp_path / "home"
    # A short lease and sweep: a run whose worker lost its database is taken up again soon.
    up = Up(home, _free_port(), MNEMOSYNE_RETENTION_LEASE_SECONDS="3",
            MNEMOSYNE_RETENTION_SWEEP_SECONDS="2")  # fmt: skip
    started.append(up)
    up.wait_ready()
    made = _shell(home, _RETENTION_SETUP)

    def running() -> bool:
        state = _run_state(home, made["tenant"], made["run"])
        if state is not None and state["status"] not in ("queued", "running"):
            raise AssertionError(("over before it was caught", _outcome(home, made["run"])))
        return state is not None and state["status"] == "running" and state["batches_done"] >= 1

    wait_for(running, timeout=120, what="the run's first batch", interval=0.05)
    postmaster = _postmaster(home)
    os.kill(postmaster, signal.SIGKILL)  # under the worker, in the middle of the run
    wait_for(lambda: not pid_alive(postmaster), timeout=10, what="postgres to die")
    wait_for(lambda: "database restarted" in up.output, timeout=60, what="database restart")

    def done() -> bool:
        state = _run_state(home, made["tenant"], made["run"])
        return state is not None and state["status"] in ("done", "failed")

    wait_for(done, timeout=300, what="the run to finish")
    outcome = _outcome(home, made["run"])
    assert outcome["status"] == "done", (outcome, up.output[-3000:])
    assert outcome["attempts"] >= 2, "taken up again after the outage"
    assert outcome["counts"]["low_trust"] == len(made["low"])
    assert outcome["counts"]["purged"] == len(made["old"])
    assert outcome["archived"] == sorted(made["low"]) and outcome["purged"] == sorted(made["old"])
    assert outcome["most_events_per_step"] == 1  # no step twice
    assert outcome["statuses"] == {"archived": len(made["low"])}
    assert up.stop_with(signal.SIGINT) == 0, up.output


def server_running(home: Path) -> bool:
    return server_for_home(home).status().running


def _free_port() -> int:
    from tests.helpers import free_port

    return free_port()


def test_an_unwritable_queue_folder_leaves_no_copy_of_a_message_anywhere(tmp_path: Path) -> None:
    from kombu import Connection

    folders = {name: tmp_path / name for name in ("queue", "control", "processed")}
    for folder in folders.values():
        folder.mkdir()
    options = {
        "data_folder_in": str(folders["queue"]),
        "data_folder_out": str(folders["queue"]),
        "control_folder": str(folders["control"]),
        "processed_folder": str(folders["processed"]),
        "store_processed": False,
    }
    secret = "a private memory of tenant seven"
    with Connection("filesystem://", transport_options=options) as conn:
        queue = conn.SimpleQueue("drill")
        queue.put({"content": secret})
        temporary = Path(tempfile.gettempdir())
        before = set(temporary.iterdir())
        # Immutable: even root can neither add nor remove a file there (chmod does not bind root).
        subprocess.run(["chattr", "+i", str(folders["queue"])], check=True)  # noqa: S607
        try:
            with pytest.raises(queue.Empty):
                queue.get(timeout=1)
        finally:
            subprocess.run(["chattr", "-i", str(folders["queue"])], check=True)  # noqa: S607
        leaked = [
            path
            for path in set(temporary.iterdir()) - before
            if path.is_file() and secret.encode() in path.read_bytes()
        ]
        assert leaked == []
        assert list(folders["processed"].iterdir()) == []
        # Writable again: the message was kept and is delivered once, then gone.
        message = queue.get(timeout=5)
        assert message.payload == {"content": secret}
        message.ack()
        assert list(folders["queue"].iterdir()) == []
        assert list(folders["processed"].iterdir()) == []
        queue.close()
