"""What every benchmark shares: a throwaway database, progress lines, figures as JSON."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


@contextmanager
def bench_database() -> Iterator[None]:
    """A fresh, migrated database, dropped afterwards.

    The embedded PostgreSQL in a temporary data directory by default; with DATABASE_URL set, a
    `test_<name>` database on that server. Prepared models are shared with the product's
    (MNEMOSYNE_MODEL_DIR), so the default embedder is converted once, not per run.
    """
    home = None
    if not os.environ.get("DATABASE_URL"):
        home = Path(tempfile.mkdtemp(prefix="mnemosyne-bench-"))
        os.environ["MNEMOSYNE_HOME"] = str(home)
    os.environ.setdefault("MNEMOSYNE_MODEL_DIR", str(REPO / ".mnemosyne" / "models"))
    os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key-0123456789abcdefghij")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    from memoryadmin.embedded_db import server_for_home
    from operations.roles import as_owner

    server = server_for_home(settings.MNEMOSYNE_HOME) if settings.MNEMOSYNE_EMBEDDED_DB else None
    if server is not None:
        server.start()

    old_name = connection.settings_dict["NAME"]
    try:
        progress("preparing a fresh database")
        # Made, migrated and dropped by the owner role; the bench runs as the runtime role, as
        # web processes and workers do (load steps that build indexes or ANALYZE use as_owner).
        with as_owner():
            connection.creation.create_test_db(verbosity=0, autoclobber=True)
        try:
            yield
        finally:
            with as_owner():
                connection.creation.destroy_test_db(old_name, verbosity=0)
    finally:
        if server is not None:
            from django.db import connections

            connections.close_all()
            server.stop()
        if home is not None:
            shutil.rmtree(home, ignore_errors=True)


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def write_json(path: str | None, figures: dict[str, Any]) -> None:
    if path:
        Path(path).write_text(json.dumps(figures, indent=2, ensure_ascii=False))
        progress(f"figures written to {path}")


@contextmanager
def vector_cache(path: Path | None) -> Iterator[None]:
    """Remember the configured embedder's vectors in the file `path` (keyed by model, purpose
    and text), so that a benchmark run again on the same data embeds nothing twice. The vectors
    are the model's own; only the time to make them is saved. Without a path, nothing changes."""
    if path is None:
        yield
        return
    import pickle

    import numpy as np

    from indexing.vectors import configured_embedder

    embedder = configured_embedder()
    known: dict[tuple[str, str, str], np.ndarray] = {}
    if path.is_file():
        known = pickle.loads(path.read_bytes())  # noqa: S301 - a file this function wrote
    embed = embedder.embed

    def cached(texts: Any, *, purpose: Any = "passage") -> np.ndarray:
        keys = [(embedder.name, purpose, text) for text in texts]
        todo = [text for text, key in zip(texts, keys, strict=True) if key not in known]
        if todo:
            for text, vector in zip(todo, embed(todo, purpose=purpose), strict=True):
                known[(embedder.name, purpose, text)] = vector
        if not keys:
            return embed(texts, purpose=purpose)
        return np.stack([known[key] for key in keys])

    embedder.embed = cached  # type: ignore[method-assign]
    try:
        yield
    finally:
        embedder.embed = embed  # type: ignore[method-assign]
        path.write_bytes(pickle.dumps(known))
        progress(f"{len(known)} vectors kept in {path}")


@contextmanager
def web_server(*, workers: int = 2) -> Iterator[str]:
    """Mnemosyne's web processes (gunicorn, as `mnemosyne up` starts them) on the bench's
    database; yields their URL. Call inside bench_database()."""
    import subprocess

    import httpx
    from django.db import connection

    from memoryadmin.supervisor import gunicorn_command
    from tests.helpers import database_url, free_port, wait_for

    port = free_port()
    log = Path(tempfile.gettempdir()) / f"mnemosyne-bench-web-{port}.log"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "MNEMOSYNE_API_RATE_KEY": "off",  # a bench sends more than an agent would
        "PYTHONPATH": str(REPO),
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    progress(f"starting gunicorn on 127.0.0.1:{port}, {workers} workers (log: {log})")
    web = subprocess.Popen(  # noqa: S603 - our own gunicorn, fixed arguments
        [sys.executable, *gunicorn_command(bind=f"127.0.0.1:{port}", workers=workers)],
        env=env, cwd=REPO, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        # An API answer (401 without a key) says a worker serves requests; /healthz would wait
        # for every part it checks.
        try:
            return httpx.get(f"{url}/api/v1/agent/whoami", timeout=10).status_code == 401
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, timeout=300, what="gunicorn")
        yield url
    finally:
        web.terminate()
        web.wait(timeout=30)


# -- CPU time of the processes that served a run ------------------------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces: the fields after it start past its ')'.
    return raw[raw.rindex(")") + 2 :].split()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def tree_cpu_s(root: int) -> float:
    """CPU seconds (user + system) of a process and all its descendants, living and ended: each
    process's own time plus that of the children it has reaped (PostgreSQL's postmaster reaps
    its backends, gunicorn and Celery their workers), from /proc."""
    total, stack, seen = 0, [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        fields = _stat(pid)
        if fields is None:
            continue
        # utime, stime, cutime, cstime: fields 14-17 of /proc/<pid>/stat (11-14 after the name).
        total += sum(int(v) for v in fields[11:15])
        stack.extend(_children(pid))
    return total / CLOCK_TICKS


def embedder_rate() -> dict[str, float]:
    """The configured embedder's rate on this machine now: 64 short passages, wall and CPU
    (this process's), so a reader can scale the run's timings to another machine."""
    from django.conf import settings

    from indexing.embedders import get_embedder

    embedder = get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR)
    embedder.embed(["warm up"], purpose="passage")
    texts = [f"Passage {n}: the team moved the release to Friday after review." for n in range(64)]
    wall, cpu = time.perf_counter(), time.process_time()
    for text in texts:
        embedder.embed([text], purpose="passage")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "passages_per_s": round(len(texts) / wall, 1),
        "passages_per_cpu_s": round(len(texts) / cpu, 1) if cpu else 0.0,
    }
