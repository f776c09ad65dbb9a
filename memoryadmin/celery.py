"""The Celery application shared by the web server, the worker and beat."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

app = Celery("mnemosyne")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
