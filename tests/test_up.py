"""`mnemosyne up` as a user runs it: one command, healthy, Ctrl-C leaves nothing behind."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PYTHON, REPO, child_env, free_port, pid_alive, wait_for

pytestmark = pytest.mark.slow


class Up:
    """A `mnemosyne up` child process whose output is collected line by line."""

    def __init__(self, home: Path, port: int, **env: str | None) -> None:
        self.home = home
        self.url = f"http://127.0.0.1:{port}"
        self.lines: list[str] = []
        # The single-machine product: the embedded database, whatever this test run uses.
        self.process = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "memoryadmin.cli",
                "up",
                "--bind",
                f"127.0.0.1:{port}",
                "--web-workers",
                "1",
                "--concurrency",
                "1",
            ],
            env=child_env(MNEMOSYNE_HOME=str(home), DATABASE_URL=None, SECRET_KEY=None, **env),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_ready(self) -> None:
        def ready() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"`up` exited early:\n{self.output}")
            return "Mnemosyne is running at" in self.output

        wait_for(ready, timeout=180, what=f"`up` to report ready; output so far:\n{self.output}")

    def stop_with(self, signum: int) -> int:
        self.process.send_signal(signum)
        return self.process.wait(timeout=120)


def _mnemosyne(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "memoryadmin.cli", *args],
        env=child_env(MNEMOSYNE_HOME=str(home), DATABASE_URL=None, SECRET_KEY=None),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _health(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _pids(home: Path) -> list[int]:
    info = json.loads((home / "run" / "up.json").read_text())
    postmaster = int((home / "pgdata" / "postmaster.pid").read_text().split()[0])
    return [info["pid"], *info["children"].values(), postmaster]


def _metrics_of_every_process(url: str, home: Path) -> None:
    """/metrics of a web process adds up what every web and worker process recorded (the
    worker's heartbeat tasks, the web processes' answers to /healthz) from the data directory's
    multi-process folder."""
    from prometheus_client.parser import text_string_to_metric_families

    beat = (
        "mnemosyne_tasks_total",
        (("outcome", "success"), ("task", "memoryadmin.tasks.heartbeat")),
    )
    scraped: dict[str, Any] = {}

    def scrape() -> bool:
        with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:
            scraped["text"] = response.read().decode()
        scraped["samples"] = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(scraped["text"])
            for sample in family.samples
        }
        return scraped["samples"].get(beat, 0) >= 1

    # The worker counts a heartbeat when the task has returned, a moment after the heartbeat
    # that made /healthz answer "ok" was written.
    wait_for(scrape, timeout=60, what="the worker's heartbeat task in /metrics", interval=1)
    text, samples = scraped["text"], scraped["samples"]
    healthz = [
        value
        for (name, labels), value in samples.items()
        if name == "mnemosyne_http_request_duration_seconds_count"
        and ("route", "healthz") in labels
    ]
    assert sum(healthz) >= 1, text
    assert list((home / "run" / "metrics").glob("*.db")), "each process writes its own file"


def _one_connection_serves_several_requests(url: str) -> None:
    """An agent's client keeps its connection: the web server does not close it after each
    answer (a new connection per prefetch cost a TCP handshake each turn)."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    try:
        sockets = set()
        for _ in range(3):
            connection.request("GET", "/healthz")
            response = connection.getresponse()
            response.read()
            assert response.status == 200
            assert (response.getheader("Connection") or "").lower() != "close"
            sockets.add(id(connection.sock))
        assert len(sockets) == 1, "each request opened a new connection"
    finally:
        connection.close()


def test_up_serves_a_healthy_mnemosyne_and_ctrl_c_leaves_nothing_behind(tmp_path: Path) -> None:
    home = tmp_path / "home"
    up = Up(home, free_port())
    try:
        up.wait_ready()
        assert "admin user created: admin / " in up.output, "the generated password is shown once"
        status, body = _health(up.url)
        assert status == 200, body
        assert all(check["ok"] for check in body["checks"].values())
        assert body["checks"]["database"]["embedded"] is True
        _one_connection_serves_several_requests(up.url)
        pids = _pids(home)
        assert all(pid_alive(pid) for pid in pids)

        second = _mnemosyne(home, "up", "--bind", f"127.0.0.1:{free_port()}")
        assert second.returncode != 0
        assert "already running" in second.stderr

        status_cmd = _mnemosyne(home, "status")
        assert status_cmd.returncode == 0, status_cmd.stdout + status_cmd.stderr
        assert f"running: yes (pid {up.process.pid}) at {up.url}/" in status_cmd.stdout
        assert "health: ok" in status_cmd.stdout
        _metrics_of_every_process(up.url, home)

        assert up.stop_with(signal.SIGINT) == 0, up.output  # what Ctrl-C sends
    finally:
        if up.process.poll() is None:
            up.process.kill()
    assert "Mnemosyne stopped." in up.output
    wait_for(
        lambda: not any(pid_alive(pid) for pid in pids), timeout=10, what="every process to end"
    )
    after = _mnemosyne(home, "status")
    assert after.returncode == 3
    assert "running: no" in after.stdout and "embedded PostgreSQL, stopped" in after.stdout


def test_a_second_up_keeps_the_data_and_stop_ends_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = Up(home, free_port(), MNEMOSYNE_ADMIN_PASSWORD="chosen-by-the-admin-42")
    first.wait_ready()
    assert "admin user created: admin (password from the environment)" in first.output
    assert first.stop_with(signal.SIGTERM) == 0

    again = Up(home, free_port())
    try:
        again.wait_ready()
        assert "admin user created" not in again.output, "the first admin is created only once"
        assert "migrations: up to date" in again.output
        pids = _pids(home)
        began = time.monotonic()
        stopped = _mnemosyne(home, "stop")
        assert stopped.returncode == 0, stopped.stderr
        # The worker's main process alone gets the stop signal and ends its pool itself.
        assert time.monotonic() - began < 20, "stop took too long"
        assert "Mnemosyne stopped." in stopped.stdout
        assert again.process.wait(timeout=30) == 0
    finally:
        if again.process.poll() is None:
            again.process.kill()
    wait_for(
        lambda: not any(pid_alive(pid) for pid in pids), timeout=10, what="every process to end"
    )


def test_up_refuses_a_port_in_use(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _mnemosyne(tmp_path / "home", "up", "--bind", f"127.0.0.1:{port}")
    assert result.returncode != 0
    assert f"127.0.0.1:{port} is already in use" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_workers_processes_share_the_cores_when_embedding(monkeypatch) -> None:
    """Under `up`, each of the worker's processes embeds with its share of the cores (two
    processes with two threads each on two cores only take turns); an explicit
    MNEMOSYNE_EMBED_THREADS is left as it is."""
    from memoryadmin import supervisor

    monkeypatch.delenv("MNEMOSYNE_EMBED_THREADS", raising=False)
    monkeypatch.setattr(supervisor.os, "cpu_count", lambda: 8)
    assert supervisor.embed_threads_share(2) == {"MNEMOSYNE_EMBED_THREADS": "4"}
    assert supervisor.embed_threads_share(16) == {"MNEMOSYNE_EMBED_THREADS": "1"}
    monkeypatch.setenv("MNEMOSYNE_EMBED_THREADS", "3")
    assert supervisor.embed_threads_share(2) == {}
