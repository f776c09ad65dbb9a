"""The Celery application shared by the web server, the worker and beat."""

from __future__ import annotations

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

# kombu's filesystem transport left taken messages in /tmp; ours keeps them in the broker folder.
TRANSPORT_ALIASES["filesystem"] = "memoryadmin.broker:Transport"

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

app = Celery("mnemosyne")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Each task's log context and its count and time in /metrics (and JSON logs in the worker).
from memoryadmin import tasklog  # noqa: E402, F401
