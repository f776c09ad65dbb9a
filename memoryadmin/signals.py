"""Celery signal handlers: a worker's embedder does not spin; a worker announces itself as soon
as it is ready."""

from __future__ import annotations

import logging
import os
from typing import Any

from celery.signals import worker_init, worker_ready
from django.db import DatabaseError, close_old_connections

from indexing.embedders.base import SPIN_ENV, STREAMS_ENV
from operations.services import heartbeat_record

logger = logging.getLogger(__name__)


@worker_init.connect
def _embedder_without_spinning(**_: Any) -> None:
    """Before any task (the pool's processes inherit it): the worker's embedder shares the cores
    with PostgreSQL indexing its vectors and with the processes storing facts, and its idle
    threads spinning took their time. With one worker importing 2,000 facts, end to end went
    from 171, 162 and 170 facts/s to 181, 177 and 179 (docs/benchmarks/ingest-runs.md). An
    operator's MNEMOSYNE_EMBED_SPIN wins.

    Its embedding runs in two streams, each with its own copy of the model on half the
    process's threads (`facts.embedding.facts_embed_all`), when it has two threads or more: two
    one-thread sessions side by side embed more texts per second than one session of two
    threads (docs/benchmarks/ingest-runs.md). An operator's MNEMOSYNE_EMBED_STREAMS wins."""
    os.environ.setdefault(SPIN_ENV, "0")
    os.environ.setdefault(STREAMS_ENV, "2")


@worker_ready.connect
def _announce_worker(sender: Any = None, **_: Any) -> None:
    try:
        heartbeat_record(name=f"worker:{sender.hostname}")
    except DatabaseError:
        logger.warning("worker ready, but its heartbeat could not be written", exc_info=True)
    finally:
        # The prefork pool's children must not share this process's database connection.
        close_old_connections()
