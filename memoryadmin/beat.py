"""Beat's scheduler: django-celery-beat's, plus a heartbeat written from beat itself."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django_celery_beat.schedulers import DatabaseScheduler

from operations.services import heartbeat_record

logger = logging.getLogger(__name__)


class HeartbeatScheduler(DatabaseScheduler):
    """Records `beat` in ServiceHeartbeat on start and every heartbeat interval."""

    _last_heartbeat = 0.0

    def tick(self, *args: Any, **kwargs: Any) -> float:
        now = time.monotonic()
        if now - self._last_heartbeat >= settings.MNEMOSYNE_HEARTBEAT_SECONDS:
            try:
                heartbeat_record(name="beat")
                self._last_heartbeat = now
            except DatabaseError:
                logger.warning("beat heartbeat could not be written", exc_info=True)
        delay = super().tick(*args, **kwargs)
        return min(delay, float(settings.MNEMOSYNE_HEARTBEAT_SECONDS))
