"""Mnemosyne's project package: settings, URLs, the Celery app and the command line."""

from memoryadmin.celery import app as celery_app

__all__ = ["celery_app"]
