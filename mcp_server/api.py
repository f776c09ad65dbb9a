"""`/mcp`: the MCP server over Streamable HTTP, for programs holding an API key.

Authentication (`Authorization: Bearer <key>`), the request rate and the body limit are the REST
API's own (DRF classes and settings): a missing, unknown or revoked key is 401, a key over its
rate 429 with Retry-After, the same as at /api/v1/. Only POST: the server is stateless and
answers each JSON-RPC message in the response's body, so there is no stream to GET and no
session to DELETE (405).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.views import APIView

from agenttools.mcp import Binding
from mcp_server.bridge import AsgiBridge, BridgeTimeout
from mcp_server.server import serving
from surfaces.base.auth import ApiKeyAuthentication
from surfaces.base.throttling import ApiRateThrottle
from surfaces.base.viewsets import check_body_size

logger = logging.getLogger(__name__)

# Seconds one MCP request may take; a tool call takes milliseconds, this is a safety net.
TIMEOUT_SECONDS = 30.0
BRIDGE = AsgiBridge(serving)
# Headers Django sets itself from the body it sends.
_OWN_HEADERS = {b"content-length"}


def _asgi_scope(request: Request) -> dict[str, object]:
    django_request = request._request
    port = django_request.META.get("SERVER_PORT") or "80"
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": django_request.scheme,
        "path": django_request.path,
        "raw_path": django_request.path.encode(),
        "query_string": django_request.META.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": "",
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in django_request.headers.items()
        ],
        "client": (django_request.META.get("REMOTE_ADDR", ""), 0),
        "server": (django_request.META.get("SERVER_NAME", ""), int(port) if port.isdigit() else 80),
    }


class McpView(APIView):
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = [ApiRateThrottle]
    schema = None  # a protocol of its own, not a REST operation: not in the OpenAPI schema
    _outage = False

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        check_body_size(request, settings.MNEMOSYNE_API_MAX_BODY_BYTES)
        try:
            super().initial(request, *args, **kwargs)  # the key (401), its rate (429)
        except (OperationalError, InterfaceError):
            # The key cannot be checked while the database is down. The request is answered
            # all the same, with no key bound: every tool call gets a tool error saying the
            # memory store is unavailable, which an agent can read (a 5xx it could not).
            logger.warning("MCP request while the database is unreachable", exc_info=True)
            self._outage = True

    def post(self, request: Request) -> HttpResponse:
        binding = None if self._outage else Binding.of_key(request.auth)
        try:
            answer = BRIDGE.call(
                _asgi_scope(request), request.body, context=binding, timeout=TIMEOUT_SECONDS
            )
        except BridgeTimeout as late:
            logger.warning("MCP request unanswered: %s", late)
            return JsonResponse(
                {"message": f"the MCP server did not answer in time ({late})"}, status=503
            )
        response = HttpResponse(bytes(answer.body), status=answer.status)
        for name, value in answer.headers:
            if name.lower() not in _OWN_HEADERS:
                response.headers[name.decode("latin-1")] = value.decode("latin-1")
        return response
