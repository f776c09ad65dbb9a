"""A real Celery worker process runs a task sent through the broker, and writes to the database."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from django.db import connection
from kombu import Connection

from memoryadmin.models import ServiceHeartbeat
from memoryadmin.tasks import heartbeat
from tests.helpers import PYTHON, REPO, child_env, database_url, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _filesystem_broker(home: Path) -> tuple[str, dict[str, str]]:
    folder = home / "broker"
    return "filesystem://", {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "control_folder": str(folder / "control"),
    }


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
    worker = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "celery",
            "-A",
            "memoryadmin",
            "worker",
            "--concurrency",
            "1",
            "--loglevel",
            "INFO",
            "--hostname",
            hostname,
            "--queues",
            queue,
        ],
        env=child_env(
            MNEMOSYNE_HOME=str(home),
            DATABASE_URL=database_url(connection.settings_dict),
            **broker_env,
        ),
        cwd=REPO,
        stdout=(tmp_path / "worker.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    name = f"worker:{hostname}"
    try:
        # The worker announces itself when ready, so the task below cannot race its start-up.
        wait_for(
            lambda: ServiceHeartbeat.objects.filter(name=name).exists(),
            timeout=60,
            what="the worker to start",
        )
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
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            raise
        print((tmp_path / "worker.log").read_text()[-3000:])
    assert worker.returncode == 0
