"""`mnemosyne up`: run the database, web server, worker and beat as one unit.

Children run in their own process groups, so a terminal's Ctrl-C reaches only us and we stop
them in order: web, beat, worker (a warm shutdown finishes running tasks), then the database.
Each child also gets SIGTERM if we die without cleaning up (PR_SET_PDEATHSIG).

While running, `up` supervises: a child that dies is started again after a pause that doubles
with each quick death (1 s up to 30 s), and an embedded database that stops is started again.
Each restart is said on our output and recorded in `run/up.json`, where `status` shows it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from indexing.embedders.base import THREADS_ENV
from memoryadmin.children import RESTART_MAX_S, RESTART_MIN_S, Child, SupervisorError
from memoryadmin.embedded_db import EmbeddedDatabaseError, server_for_home
from memoryadmin.runstate import STOP_TIMEOUT_S, RunLock, fetch_health
from operations.roles import as_owner
from operations.services import admin_ensure_first


@dataclass
class UpOptions:
    bind: str
    web_workers: int
    concurrency: int
    ready_timeout: float = 180.0


def parse_bind(bind: str) -> tuple[str, int]:
    host, _, port = bind.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SupervisorError(
            f"--bind must look like HOST:PORT (e.g. 127.0.0.1:8000), got {bind!r}"
        )
    return host.strip("[]"), int(port)


def _port_is_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = os.environ.get("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    env["MNEMOSYNE_HOME"] = str(settings.MNEMOSYNE_HOME)
    # Children find our packages even when run from a checkout that was never pip-installed.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(settings.BASE_DIR), env.get("PYTHONPATH", "")) if p
    )
    env["PYTHONUNBUFFERED"] = "1"
    # Web and worker processes write their metrics here; /metrics adds them up.
    env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(settings.MNEMOSYNE_HOME / "run" / "metrics"))
    return env


def metrics_folder_reset(folder: Path) -> None:
    """Empty the multi-process metrics folder: counts start again with each `up` (files of a
    previous run's processes would otherwise be added to this one's)."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink(missing_ok=True)


def embed_threads_share(processes: int) -> dict[str, str]:
    """Processes that embed side by side (the worker's, the web server's) share the machine's
    cores: each embeds with its share (at least one thread), unless MNEMOSYNE_EMBED_THREADS
    says otherwise. More threads than cores only make them take turns: two web processes with
    two threads each on two cores answered half as many recalls per second as with one."""
    if os.environ.get(THREADS_ENV):
        return {}
    return {THREADS_ENV: str(max(1, (os.cpu_count() or 1) // max(1, processes)))}


def _children(options: UpOptions, logs: Path) -> list[Child]:
    python = sys.executable
    celery = [python, "-m", "celery", "-A", "memoryadmin"]
    return [
        Child(
            "worker",
            [
                *celery,
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(options.concurrency),
                "--hostname",
                "worker@%h",
            ],
            logs / "worker.log",
            env=embed_threads_share(options.concurrency),
        ),
        Child("beat", [*celery, "beat", "--loglevel", "INFO"], logs / "beat.log"),
        Child(
            "web",
            [python, *gunicorn_command(bind=options.bind, workers=options.web_workers)],
            logs / "web.log",
            env=embed_threads_share(options.web_workers),
        ),
    ]


def gunicorn_command(*, bind: str, workers: int) -> list[str]:
    """The web server's arguments (after the Python executable)."""
    return [
        "-m",
        "gunicorn",
        "memoryadmin.wsgi:application",
        "--bind",
        bind,
        "--workers",
        str(workers),
        # Threads that keep a client's connection open between its requests (the Hermes
        # provider and the MCP relay hold one): a sync worker answers `Connection: close`, so
        # every prefetch paid a new TCP connection. One thread per process, as before, since
        # the embedder's threads are counted per process (embed_threads_share).
        "--worker-class",
        "gthread",
        "--threads",
        "1",
        "--keep-alive",
        "75",
        "--timeout",
        "120",
        # With JSON logs each request's line is Mnemosyne's own (memoryadmin/requestlog.py).
        *([] if settings.MNEMOSYNE_LOG_FORMAT == "json" else ["--access-logfile", "-"]),
        "--error-logfile",
        "-",
        "--graceful-timeout",
        "10",
        # gunicorn's default (4094 bytes) answered a long cursor with an HTML page of its own;
        # up to its maximum, Mnemosyne refuses over-long URLs itself, with a JSON 400 under
        # /api/ (surfaces.base.security.RequestLineLimitMiddleware, 8000 characters).
        "--limit-request-line",
        "8190",
    ]


class Supervisor:
    def __init__(self, options: UpOptions, say: Callable[[str], None]) -> None:
        self.options = options
        self.say = say
        self.home: Path = settings.MNEMOSYNE_HOME
        self.lock = RunLock(self.home)
        self.children: list[Child] = []
        self.database = server_for_home(self.home) if settings.MNEMOSYNE_EMBEDDED_DB else None
        self.started_database = False
        self.owns_database = False
        self._stopping = False
        self._received: int | None = None
        self._env: dict[str, str] = {}
        self._started_at = time.time()
        self._database_restarts = 0
        self._database_retry_at = 0.0
        self._database_backoff = RESTART_MIN_S

    @property
    def url(self) -> str:
        host, port = parse_bind(self.options.bind)
        shown = "127.0.0.1" if host in {"0.0.0.0", ""} else host  # noqa: S104 - display only
        return f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}"

    def run(self) -> int:
        if not self.lock.acquire():
            info = self.lock.read_info()
            raise SupervisorError(
                f"Mnemosyne is already running on {self.home} "
                f"(pid {info.get('pid', '?')}, {info.get('url', 'starting')}). "
                "Use `mnemosyne status` or `mnemosyne stop`."
            )
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            self._start()
            return self._watch()
        finally:
            self._shutdown()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.lock.release()

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._received = signum
        if signum == signal.SIGINT and not self._stopping:
            self.say("")  # end the ^C line

    def _check_interrupted(self) -> None:
        if self._received is not None:
            raise KeyboardInterrupt

    def _start(self) -> None:
        host, port = parse_bind(self.options.bind)
        if not _port_is_free(host, port):
            raise SupervisorError(
                f"{self.options.bind} is already in use; "
                "choose another with --bind or MNEMOSYNE_BIND"
            )
        self.say(f"Mnemosyne data directory: {self.home}")
        metrics_folder_reset(Path(_child_env()["PROMETHEUS_MULTIPROC_DIR"]))
        self._start_database()
        self._check_interrupted()
        self._migrate()
        self._ensure_admin()
        self._prepare_embedder()
        connections.close_all()  # children open their own; we must not hold one across a DB stop
        self._env = _child_env()
        self.children = _children(self.options, self.home / "logs")
        for child in self.children:
            self._check_interrupted()
            child.start(self._env)
            self.say(f"  {child.name:<8} started (pid {child.pid}), log: {child.log_path}")
        self._write_info()
        self._wait_until_healthy()

    def _write_info(self) -> None:
        self.lock.write_info(
            {
                "pid": os.getpid(),
                "url": self.url,
                "home": str(self.home),
                "started_at": self._started_at,
                "children": {c.name: c.pid for c in self.children},
                "restarts": {
                    c.name: {"count": c.restarts, "last_exit": c.last_exit}
                    for c in self.children
                    if c.restarts or c.restart_at is not None
                },
                "down": [c.name for c in self.children if c.restart_at is not None],
                "database_restarts": self._database_restarts,
            }
        )

    def _start_database(self) -> None:
        if self.database is None:
            db = settings.DATABASES["default"]
            self.say(f"  database: PostgreSQL server {db['HOST'] or 'localhost'}/{db['NAME']}")
            return
        t0 = time.monotonic()
        self.started_database = self.database.start()
        self.owns_database = True
        # One already running (left by a killed `up`, or started by hand) is taken over: `up`
        # restarts it if it stops and stops it when `up` stops.
        verb = "started" if self.started_database else "already running, taken over"
        self.say(
            f"  database: embedded PostgreSQL {verb} ({time.monotonic() - t0:.1f} s), "
            f"socket {self.database.socket_dir}"
        )

    def _migrate(self) -> None:
        executor = MigrationExecutor(connections["default"])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if plan:
            self.say(f"  migrations: applying {len(plan)} ...")
            with as_owner():
                call_command("migrate", interactive=False, verbosity=0)
        self.say("  migrations: up to date")

    def _ensure_admin(self) -> None:
        created = admin_ensure_first(
            username=os.environ.get("MNEMOSYNE_ADMIN_USERNAME", "admin"),
            email=os.environ.get("MNEMOSYNE_ADMIN_EMAIL", ""),
            password=os.environ.get("MNEMOSYNE_ADMIN_PASSWORD") or None,
        )
        if created is None:
            return
        if created.password:
            self.say(
                f"  admin user created: {created.username} / {created.password}\n"
                "    (shown once: note it now, or set MNEMOSYNE_ADMIN_PASSWORD before the first up)"
            )
        else:
            self.say(f"  admin user created: {created.username} (password from the environment)")

    def _prepare_embedder(self) -> None:
        """Prepare the model once here, so web and worker processes do not each do it at once."""
        self.say(
            f"  embedder: loading {settings.MNEMOSYNE_EMBEDDER!r} (the first time takes ~20 s)"
        )
        result = subprocess.run(  # noqa: S603 - our own interpreter and command
            [sys.executable, "-m", "memoryadmin.cli", "embedder"],
            env=_child_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            # Not fatal: /healthz keeps naming the embedder until it is fixed.
            self.say(f"  embedder: NOT working: {(result.stderr or result.stdout).strip()}")
        else:
            for line in result.stdout.strip().splitlines():
                self.say(f"  embedder: {line}")

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + self.options.ready_timeout
        waiting_for: list[str] | None = None
        while time.monotonic() < deadline:
            self._check_interrupted()
            self._check_children()
            report = fetch_health(f"{self.url}/healthz")
            failing = ["web"] if report is None else report.get("failing", [])
            if not failing:
                self.say(f"\nMnemosyne is running at {self.url}/  (Ctrl-C stops it)")
                return
            if failing != waiting_for:
                self.say(f"  waiting for: {', '.join(failing)}")
                waiting_for = failing
            time.sleep(0.5)
        self.say(
            f"\nMnemosyne is serving at {self.url}/ but not healthy yet: "
            f"{', '.join(waiting_for or [])}"
            f"\n  see {self.url}/healthz and the logs in {self.home / 'logs'}"
        )

    def _check_children(self) -> None:
        """Restart children that died, each after its pause; say and record every change."""
        if self._stopping:
            return
        now = time.monotonic()
        changed = False
        for child in self.children:
            if child.restart_at is not None:
                if now >= child.restart_at:
                    child.restart_at = None
                    child.restarts += 1
                    child.start(self._env)
                    self._say_logged(
                        f"  {child.name:<8} restarted (pid {child.pid}, restart {child.restarts})"
                    )
                    changed = True
                continue
            code = child.exited()
            if code is None:
                continue
            delay = child.note_exit(code, now)
            self._say_logged(
                f"  {child.name:<8} exited unexpectedly (code {code}); restarting in {delay:.0f} s."
                f" Last lines of {child.log_path}:\n{child.log_tail(5)}"
            )
            changed = True
        if changed:
            self._write_info()

    def _check_database(self) -> None:
        """An embedded database that stopped is started again (with the same backoff)."""
        if self.database is None or not self.owns_database or self._stopping:
            return
        now = time.monotonic()
        if now < self._database_retry_at or self.database.status().running:
            return
        self._say_logged("  database stopped unexpectedly; starting it again")
        try:
            self.database.start()
        except EmbeddedDatabaseError as error:
            self._database_retry_at = now + self._database_backoff
            self._database_backoff = min(self._database_backoff * 2, RESTART_MAX_S)
            self._say_logged(
                f"  database did not start ({error}); next try in "
                f"{self._database_retry_at - now:.0f} s"
            )
            return
        self._database_backoff = RESTART_MIN_S
        self._database_restarts += 1
        self._say_logged(f"  database restarted (restart {self._database_restarts})")
        self._write_info()

    def _say_logged(self, line: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        self.say(f"{stamp}{line}")

    def _watch(self) -> int:
        while True:
            if self._received is not None:
                return 0
            self._check_database()
            self._check_children()
            time.sleep(0.5)

    def _shutdown(self) -> None:
        self._stopping = True
        if self.children:
            self.say("Stopping Mnemosyne ...")
        # Web first (no new work), then beat, then the worker, which finishes running tasks.
        for name in ("web", "beat", "worker"):
            for child in self.children:
                if child.name == name:
                    child.stop(STOP_TIMEOUT_S)
                    self.say(f"  {child.name:<8} stopped")
        connections.close_all()
        if self.database is not None and self.owns_database:
            self.database.stop()
            self.say("  database stopped")
        if self.children:
            self.say("Mnemosyne stopped.")
