"""A real Celery worker process runs a task sent through the broker, and writes to the database."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from kombu import Connection

from facts.inputs import fact_draft
from facts.selectors.facts import fact_get, fact_vectors
from facts.services import fact_add
from memoryadmin import broker
from memoryadmin.tasks import heartbeat
from operations.models import ServiceHeartbeat
from tenants.actors import Actor
from tenants.inputs import tenant_draft
from tenants.services import tenant_create
from tests.helpers import PYTHON, REPO, child_env, database_url, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _start_worker(home: Path, log: Path, hostname: str, *args: str, **env: str | None):
    return subprocess.Popen(
        [PYTHON, "-m", "celery", "-A", "memoryadmin", "worker", "--concurrency", "1",
         "--loglevel", "INFO", "--hostname", hostname, *args],
        env=child_env(
            MNEMOSYNE_HOME=str(home), DATABASE_URL=database_url(connection.settings_dict), **env
        ),
        cwd=REPO,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip


def _wait_ready(hostname: str) -> None:
    # The worker announces itself when ready, so what follows cannot race its start-up.
    wait_for(
        lambda: ServiceHeartbeat.objects.filter(name=f"worker:{hostname}").exists(),
        timeout=60,
        what="the worker to start",
    )


def _stop(worker: subprocess.Popen, log: Path) -> None:
    worker.send_signal(signal.SIGTERM)
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        worker.kill()
        raise
    finally:
        print(log.read_text()[-3000:])


def _filesystem_broker(home: Path) -> tuple[str, dict[str, str]]:
    folder = home / "broker"
    return "filesystem://localhost//", {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "control_folder": str(folder / "control"),
    }


def _filesystem_worker(tmp_path: Path, prefix: str):
    """A worker on a filesystem broker of its own, taking one queue of its own: (url, options,
    queue, hostname, log, worker)."""
    home = tmp_path / "home"
    url, options = _filesystem_broker(home)
    queue = f"{prefix}-{uuid.uuid4().hex[:8]}"
    hostname = f"{queue}@test"
    log = tmp_path / "worker.log"
    worker = _start_worker(home, log, hostname, "--queues", queue, CELERY_BROKER_URL=None)
    return url, options, queue, hostname, log, worker


def _redis_broker() -> tuple[str, dict[str, str]]:
    url = os.environ.get("CELERY_BROKER_URL", "")
    if not url.startswith(("redis://", "rediss://")):
        pytest.skip("CELERY_BROKER_URL does not name a Redis server in this run")
    return url, {}


@pytest.mark.parametrize("broker", ["default", "redis"])
def test_a_worker_process_runs_a_task_sent_through_the_broker(broker: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    if broker == "default":
        url, options = _filesystem_broker(home)
        broker_env = {"CELERY_BROKER_URL": None}  # unset: the settings pick the filesystem broker
    else:
        url, options = _redis_broker()
        broker_env = {"CELERY_BROKER_URL": url}
    queue = f"test-{uuid.uuid4().hex[:8]}"
    hostname = f"{queue}@test"
    log = tmp_path / "worker.log"
    worker = _start_worker(home, log, hostname, "--queues", queue, **broker_env)
    name = f"worker:{hostname}"
    try:
        _wait_ready(hostname)
        ServiceHeartbeat.objects.filter(name=name).delete()
        with Connection(url, transport_options=options) as conn:
            heartbeat.apply_async(queue=queue, connection=conn)
        row = wait_for(
            lambda: ServiceHeartbeat.objects.filter(name=name).first(),
            timeout=30,
            what="the task to run",
        )
        assert row.pid != os.getpid(), "the task ran in the worker, not in the test process"
    finally:
        _stop(worker, log)
    assert worker.returncode == 0


def test_a_stored_fact_is_embedded_by_a_worker_once_committed(tmp_path: Path) -> None:
    """fact_add nudges the worker after commit, through the broker this run uses."""
    hostname = f"embed-{uuid.uuid4().hex[:8]}@test"
    log = tmp_path / "worker.log"
    # Same data directory, so the same broker as this process (filesystem or Redis).
    worker = _start_worker(Path(settings.MNEMOSYNE_HOME), log, hostname)
    try:
        _wait_ready(hostname)
        actor = Actor.job("tests")
        tenant = tenant_create(
            actor=actor, draft=tenant_draft({"slug": "embedme", "name": "Embed me"})
        )
        fact = fact_add(
            tenant=tenant,
            actor=actor,
            draft=fact_draft({"content": "Caroline went hiking in Yosemite"}),
        ).fact
        embedded = wait_for(
            lambda: fact_get(tenant=tenant, fact_id=fact.pk).embedding_model,
            timeout=90,
            what="the worker to embed the new fact",
        )
        assert embedded == "multilingual-e5-small-int8"
        [vector] = fact_vectors(tenant=tenant, fact_id=fact.pk)
        assert len(vector.embedding) == vector.dimension == 384
    finally:
        _stop(worker, log)


def test_a_backlog_of_quick_tasks_is_not_taken_one_per_two_seconds(tmp_path: Path) -> None:
    """With late acks and one prefetch slot, Celery's loop acked a finished task only after
    kombu's two-second wait: 1,000 queued nudges held a worker for half an hour. Now 40 quick
    tasks take about a second (they took 80 s before)."""
    url, options, queue, hostname, log, worker = _filesystem_worker(tmp_path, "backlog")
    folder = Path(options["data_folder_in"])
    try:
        _wait_ready(hostname)
        with Connection(url, transport_options=options) as conn:
            for _ in range(40):
                heartbeat.apply_async(queue=queue, connection=conn)
        wait_for(
            lambda: not [n for n in os.listdir(folder) if n.endswith(f".{queue}.msg")],
            timeout=30,
            what="the worker to take 40 quick tasks",
        )
    finally:
        _stop(worker, log)


def test_a_consumer_never_takes_a_message_half_written(tmp_path: Path) -> None:
    """kombu wrote a message into its queue file in place: a consumer looking meanwhile took an
    empty or cut file. One thread sends 40 messages of a megabyte while this one takes them:
    every one arrives whole and none is set aside."""
    url, options = _filesystem_broker(tmp_path)
    options["processed_folder"] = str(tmp_path / "broker" / "processed")
    for folder in ("queue", "control", "processed"):
        (tmp_path / "broker" / folder).mkdir(parents=True, exist_ok=True)
    body = "x" * 1_000_000
    sent = 40
    with (
        Connection(url, transport_options=options) as sender,
        Connection(url, transport_options=options) as taker,
    ):
        sending = sender.default_channel
        taking = taker.default_channel

        def send() -> None:
            for n in range(sent):
                sending._put("big", {"n": n, "body": body})

        thread = threading.Thread(target=send)
        thread.start()
        taken: list[int] = []
        deadline = time.monotonic() + 60
        while len(taken) < sent and time.monotonic() < deadline:
            try:
                message = taking._get("big")
            except queue.Empty:
                continue
            assert message["body"] == body, "a message arrived cut"
            taken.append(message["n"])
        thread.join()
    assert sorted(taken) == list(range(sent))
    assert not list((tmp_path / "broker" / "processed").iterdir()), "a message was set aside"
    assert not list((tmp_path / "broker" / "queue").iterdir())


def test_a_consumer_removes_a_message_its_sender_never_finished(tmp_path: Path) -> None:
    """A sender stopped between writing a message and renaming it into the queue left the file
    for good. A consumer removes it once it is WRITING_ABANDONED_S old, never a younger one (a
    message being written), and still takes the queue's messages."""
    url, options = _filesystem_broker(tmp_path)
    options["processed_folder"] = str(tmp_path / "broker" / "processed")
    for folder in ("queue", "control", "processed"):
        (tmp_path / "broker" / folder).mkdir(parents=True, exist_ok=True)
    folder = tmp_path / "broker" / "queue"
    old, young = folder / f"{broker.WRITING}old", folder / f"{broker.WRITING}young"
    old.write_bytes(b'{"half')
    young.write_bytes(b'{"being written')
    then = time.time() - broker.WRITING_ABANDONED_S - 5
    os.utime(old, (then, then))
    with Connection(url, transport_options=options) as conn:
        channel = conn.default_channel
        channel._put("q", {"n": 1})
        assert channel._get("q") == {"n": 1}
        with pytest.raises(queue.Empty):
            channel._get("q")
    assert not old.exists(), "the abandoned message is removed"
    assert young.exists(), "a message being written is left alone"


def test_a_worker_sets_an_undecodable_message_aside_and_goes_on(tmp_path: Path) -> None:
    """A message file that is not JSON (damaged, or written by something else) stopped the
    worker for good ('Unrecoverable error: JSONDecodeError'). Now it is set aside, the log names
    it, and the next task runs."""
    url, options, queue_name, hostname, log, worker = _filesystem_worker(tmp_path, "bad")
    name = f"worker:{hostname}"
    try:
        _wait_ready(hostname)
        ServiceHeartbeat.objects.filter(name=name).delete()
        folder = Path(options["data_folder_in"])
        # Named to be taken first (kombu's names start with a clock reading in milliseconds).
        (folder / f"0_{uuid.uuid4()}.{queue_name}.msg").write_bytes(b"")
        (folder / f"00_{uuid.uuid4()}.{queue_name}.msg").write_bytes(b"\xff{not json")
        with Connection(url, transport_options=options) as conn:
            heartbeat.apply_async(queue=queue_name, connection=conn)
        wait_for(
            lambda: ServiceHeartbeat.objects.filter(name=name).exists(),
            timeout=30,
            what="the task after the bad messages to run",
        )
        assert worker.poll() is None, "the worker stopped"
        aside = sorted(p.name for p in (tmp_path / "home" / "broker" / "processed").iterdir())
        assert len(aside) == 2 and all(n.endswith(f".{queue_name}.msg.unreadable") for n in aside)
    finally:
        _stop(worker, log)
    assert worker.returncode == 0
    assert "cannot be decoded" in log.read_text()
