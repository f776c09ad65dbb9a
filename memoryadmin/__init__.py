"""Mnemosyne's project package: settings, URLs, the Celery app and the command line.

The Celery app (memoryadmin/celery.py) is made when Django's apps are ready (MemoryAdminConfig)
or when the worker names this package (`celery -A memoryadmin`), not when the package is
imported: importing Celery takes seconds, which `mnemosyne --help`, `status` and `stop` skip.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["celery_app"]


def __getattr__(name: str) -> Any:
    if name in ("celery_app", "app"):
        return importlib.import_module("memoryadmin.celery").app
    if name == "celery":
        return importlib.import_module("memoryadmin.celery")
    raise AttributeError(f"module 'memoryadmin' has no attribute {name!r}")
