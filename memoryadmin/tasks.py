from __future__ import annotations

from celery import shared_task

from operations.services import heartbeat_record


@shared_task(name="memoryadmin.tasks.heartbeat", ignore_result=True)
def heartbeat() -> None:
    """Sent by beat, run by a worker: proves beat -> broker -> worker -> database works."""
    hostname = heartbeat.request.hostname or "worker"
    heartbeat_record(name=f"worker:{hostname}")
