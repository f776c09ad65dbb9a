"""Every API error is JSON: {"message", "field", "code", "errors": [{"field", "message"}]}.

Never a traceback: an unexpected exception is logged and answered with a plain 500.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from facts.bundles import BundleError
from tenants.errors import InvalidInput, NotFound

logger = logging.getLogger(__name__)

# What a NotFound names, in the caller's language (the API answers in the Accept-Language's).
_NOT_FOUND = {
    "API key": _lazy("API key"),
    "entity": _lazy("entity"),
    "fact": _lazy("fact"),
    "invitation": _lazy("invitation"),
    "member": _lazy("member"),
    "membership": _lazy("member"),
    "tenant": _lazy("tenant"),
    "user": _lazy("user"),
}


def error_body(
    message: str, *, code: str, field: str | None = None, errors: list[dict] | None = None
) -> dict[str, Any]:
    return {
        "message": message,
        "field": field,
        "code": code,
        "errors": errors if errors is not None else [{"field": field, "message": message}],
    }


def _flatten(detail: Any, prefix: str = "") -> list[dict[str, Any]]:
    """DRF's nested validation errors as a flat list of (field path, message)."""
    if isinstance(detail, dict):
        found = []
        for key, value in detail.items():
            name = "" if key == "non_field_errors" else str(key)
            if isinstance(key, int):
                path = f"{prefix}[{key}]"
            else:
                path = f"{prefix}.{name}" if prefix and name else (name or prefix)
            found += _flatten(value, path)
        return found
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return [{"field": prefix or None, "message": str(item)} for item in detail]
        found = []
        for index, item in enumerate(detail):
            found += _flatten(
                item, f"{prefix}[{index}]" if isinstance(item, dict | list) else prefix
            )
        return found
    return [{"field": prefix or None, "message": str(detail)}]


# A database that cannot be reached answers 503 with this pause, on every surface.
DATABASE_RETRY_AFTER_S = 5


def database_unavailable(exc: BaseException | None) -> bool:
    """The exception means the database cannot be reached (down, restarting, connection lost),
    not that a query was wrong."""
    return isinstance(exc, OperationalError | InterfaceError)


def _database_unavailable_body() -> dict[str, Any]:
    return error_body(
        _("the database is unavailable; try again in a few seconds"), code="database_unavailable"
    )


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    headers: dict[str, str] = {}
    if database_unavailable(exc):
        logger.warning("database unavailable: %s", str(exc).strip()[:300])
        set_rollback()
        return Response(
            _database_unavailable_body(),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_S)},
        )
    if isinstance(exc, InvalidInput):
        body = error_body(exc.message, code="invalid", field=exc.field)
        code: int = status.HTTP_400_BAD_REQUEST
    elif isinstance(exc, BundleError):
        # One of the tenant's archive bundles is damaged (a purge must rewrite it): nothing was
        # done, and the admin must see which bundle.
        logger.warning("archive bundle damaged: %s", exc)
        body = error_body(
            _("an archive bundle is damaged, so nothing was done: %(error)s") % {"error": exc},
            code="archive_damaged",
        )
        code = status.HTTP_503_SERVICE_UNAVAILABLE
    elif isinstance(exc, NotFound):
        what = _NOT_FOUND.get(exc.what, exc.what)
        body = error_body(_("%(what)s not found") % {"what": what}, code="not_found")
        code = status.HTTP_404_NOT_FOUND
    elif isinstance(exc, Http404):
        body = error_body(_("not found"), code="not_found")
        code = status.HTTP_404_NOT_FOUND
    elif isinstance(exc, DjangoPermissionDenied):
        body = error_body(_("you may not do this"), code="permission_denied")
        code = status.HTTP_403_FORBIDDEN
    elif isinstance(exc, exceptions.ValidationError):
        errors = _flatten(exc.detail) or [{"field": None, "message": _("invalid input")}]
        first = errors[0]
        message = f"{first['field']}: {first['message']}" if first["field"] else first["message"]
        body = error_body(message, code="invalid", field=first["field"], errors=errors)
        code = status.HTTP_400_BAD_REQUEST
    elif isinstance(exc, exceptions.APIException):
        if auth := getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = auth
        if wait := getattr(exc, "wait", None):
            headers["Retry-After"] = str(int(wait))
        detail = exc.detail
        message = str(detail if not isinstance(detail, dict | list) else exc.default_detail)
        body = error_body(message, code=getattr(exc, "default_code", "error"))
        code = exc.status_code
    else:
        view = context.get("view")
        logger.exception("API error in %s", type(view).__name__ if view else "?")
        body = error_body(_("internal error; the server log has the details"), code="server_error")
        code = status.HTTP_500_INTERNAL_SERVER_ERROR
    set_rollback()
    return Response(body, status=code, headers=headers)


# Django's own error views, for requests under /api/ that no API view handled (unknown URLs).


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return JsonResponse(error_body(_("no such endpoint"), code="not_found"), status=404)
    return defaults.page_not_found(request, exception)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return JsonResponse(error_body(_("bad request"), code="bad_request"), status=400)
    return defaults.bad_request(request, exception)


def forbidden(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return JsonResponse(error_body(_("you may not do this"), code="forbidden"), status=403)
    return defaults.permission_denied(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    # Called while the exception is being handled: one that means "database down" is a 503.
    if database_unavailable(sys.exc_info()[1]):
        if _is_api(request):
            response: HttpResponse = JsonResponse(_database_unavailable_body(), status=503)
        else:
            response = HttpResponse(
                _("The database is unavailable; try again in a few seconds."),
                status=503,
                content_type="text/plain; charset=utf-8",
            )
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_S)
        return response
    if _is_api(request):
        body = error_body(_("internal error; the server log has the details"), code="server_error")
        return JsonResponse(body, status=500)
    return defaults.server_error(request)
