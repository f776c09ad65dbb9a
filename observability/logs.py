"""Log lines as JSON (MNEMOSYNE_LOG_FORMAT=json) or plain text, each with its context.

The JSON is python-json-logger's (a maintained formatter for the standard logging module, so
every library's log lines come out as JSON too, with no logging API of our own); the request
id and the tenant's slug come from `observability.context` through ContextFilter.
"""

from __future__ import annotations

import logging
from typing import Any

from observability.context import log_context


class ContextFilter(logging.Filter):
    """Adds `request_id` and `tenant` (empty outside a request or task) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = log_context()
        record.request_id = context.request_id if context else ""
        record.tenant = context.tenant if context else ""
        return True


def logging_config(*, json_lines: bool, level: str, extra_filters: list[str]) -> dict[str, Any]:
    """The LOGGING setting: one console handler, plain or JSON, with the context filter."""
    formatters: dict[str, Any] = {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(levelname)s %(name)s %(message)s",
            "rename_fields": {"levelname": "level", "name": "logger"},
            "timestamp": "time",  # ISO 8601, UTC
        },
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": formatters,
        "filters": {"context": {"()": "observability.logs.ContextFilter"}},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json" if json_lines else "plain",
                "filters": ["context", *extra_filters],
            }
        },
        "root": {"handlers": ["console"], "level": level},
    }
