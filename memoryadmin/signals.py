"""Celery signal handlers: a worker announces itself as soon as it is ready."""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_ready
from django.db import DatabaseError, close_old_connections

from memoryadmin.services import heartbeat_record

logger = logging.getLogger(__name__)


@worker_ready.connect
def _announce_worker(sender: Any = None, **_: Any) -> None:
    try:
        heartbeat_record(name=f"worker:{sender.hostname}")
    except DatabaseError:
        logger.warning("worker ready, but its heartbeat could not be written", exc_info=True)
    finally:
        # The prefork pool's children must not share this process's database connection.
        close_old_connections()
