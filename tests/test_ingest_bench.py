"""bench.ingest's account of where the cores went (CpuWatch): each process's and thread's CPU
lands in its own part, the parts add up to all the cores' time, and a worker's embedding
streams are told from its other threads by their names."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest
from django.db import connection

from bench.ingest import CPU_PARTS, CpuWatch, _postmaster
from facts.embedding import EMBED_THREAD, EmbedStreams

# A stand-in worker: once told to go (after the watch's first reading), a thread named as an
# embedding stream burns 0.6 s of CPU, then waits long enough to be read once more before it
# ends.
_WORKER = textwrap.dedent(
    f"""
    import ctypes, sys, threading, time

    def embed():
        ctypes.CDLL(None).prctl(15, b"{EMBED_THREAD}0", 0, 0, 0)
        began = time.thread_time()
        while time.thread_time() - began < 0.6:
            pass
        time.sleep(0.5)  # read again while it lives: an ended thread's last reading stays

    sys.stdin.readline()
    thread = threading.Thread(target=embed)
    thread.start()
    thread.join()
    """
)


@pytest.mark.django_db
def test_the_watch_puts_embedding_database_and_writer_time_each_in_its_part() -> None:
    worker = subprocess.Popen(  # noqa: S603 - fixed code
        [sys.executable, "-c", _WORKER], stdin=subprocess.PIPE, text=True
    )
    watch = CpuWatch([worker.pid], _postmaster())
    watch.start()
    worker.stdin.write("go\n")
    worker.stdin.close()
    with connection.cursor() as cursor:  # the database server's work
        cursor.execute("SELECT count(*) FROM generate_series(1, 4000000)")
    began = time.thread_time()
    while time.thread_time() - began < 0.3:  # the writer's
        pass
    worker.wait(timeout=30)
    watch.stop()
    seconds = watch.seconds()
    assert 0.5 <= seconds["embedding"] <= 0.8, seconds
    assert seconds["workers_other"] < 0.3, seconds
    assert seconds["database"] >= 0.1, seconds
    assert seconds["writer"] >= 0.25, seconds
    shares = watch.shares()
    assert set(shares) == set(CPU_PARTS)
    assert sum(shares.values()) == pytest.approx(1.0, abs=0.01)


def test_an_embedding_streams_thread_carries_its_name() -> None:
    """`top -H` and /proc show which threads embed."""
    streams = EmbedStreams(2)
    try:
        names = {streams._pool.submit(_own_name).result() for _ in range(8)}
    finally:
        streams.close()
    assert names <= {f"{EMBED_THREAD}0", f"{EMBED_THREAD}1"} and names, names


def _own_name() -> str:
    path = f"/proc/self/task/{threading.get_native_id()}/comm"
    with open(path, encoding="utf-8") as file:  # noqa: PTH123
        return file.read().strip()


@pytest.mark.django_db(transaction=True)
def test_the_long_import_stores_every_line_and_times_each_2000() -> None:
    from bench.ingest import long_import
    from facts.models import Fact
    from tenants.models import Tenant
    from tenants.scope import tenant_scope

    texts = [f"Speaker {i}: line {i} of the long import." for i in range(300)]
    figures = long_import(texts, 2300, 250)
    assert figures["facts"] == 2300 and len(figures["seconds_per_2000"]) == 2
    assert all(seconds > 0 for seconds in figures["seconds_per_2000"])
    tenant = Tenant.objects.get(slug="long")
    with tenant_scope(tenant):
        assert Fact.objects.for_tenant(tenant).count() == 2300, "each line once, none twice"
