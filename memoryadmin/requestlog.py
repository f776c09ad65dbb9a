"""Each request's id, its timing in /metrics, and (with JSON logs) one line when it ends.

The request id is the incoming `X-Request-ID` when it is well formed (a proxy's), else a new
one; it is returned in the response's `X-Request-ID` and written on every log line the request
writes, with its tenant's slug once the request has one (observability.context).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from observability.context import log_context_pop, log_context_push, new_request_id
from observability.metrics import http_request_observe

logger = logging.getLogger("mnemosyne.request")
HEADER = "X-Request-ID"


class RequestContextMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        # gunicorn's own access lines are plain text: with JSON logs, this line stands for them.
        self.log_requests = settings.MNEMOSYNE_LOG_FORMAT == "json"

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = new_request_id(request.headers.get(HEADER))
        token = log_context_push(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            seconds = time.perf_counter() - started
            match = getattr(request, "resolver_match", None)
            route = match.view_name if match is not None else None
            http_request_observe(
                route=route, method=request.method, status=response.status_code, seconds=seconds
            )
            response[HEADER] = request_id
            if self.log_requests:
                logger.info(
                    "%s %s %s %.1f ms",
                    request.method,
                    request.path,
                    response.status_code,
                    seconds * 1000,
                    extra={
                        "method": request.method,
                        "path": request.path,
                        "route": route or "",
                        "status": response.status_code,
                        "duration_ms": round(seconds * 1000, 1),
                    },
                )
            return response
        finally:
            log_context_pop(token)
