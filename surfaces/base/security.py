"""HTTP hardening shared by every surface: the client's address, caching of dynamic answers,
the request-line limit, one-line logs of refused requests, the password rule on usernames."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext as _


def client_ip(request: HttpRequest) -> str:
    """The address a request came from: the connection's, or, behind MNEMOSYNE_PROXY_COUNT
    proxies, the one the outermost of them saw (X-Forwarded-For, counted from its end, where a
    client cannot forge it)."""
    remote = request.META.get("REMOTE_ADDR", "") or ""
    proxies = settings.MNEMOSYNE_PROXY_COUNT
    if proxies <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [part for part in forwarded if part]
    if not forwarded:
        return remote
    return forwarded[-min(proxies, len(forwarded))]


def is_local(request: HttpRequest) -> bool:
    """The request came from this machine (a loopback address), no proxy in between."""
    try:
        return ipaddress.ip_address(client_ip(request)).is_loopback
    except ValueError:
        return False


class ScopeLimitMiddleware:
    """No request inherits the scope limit of an API key used before it on this thread."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from tenants.scope import scope_limit_reset

        scope_limit_reset()
        try:
            return self.get_response(request)
        finally:
            scope_limit_reset()


class NoStoreMiddleware:
    """Dynamic answers are not kept by browsers or proxies (`Cache-Control: no-store`) unless
    the view said otherwise: pages show tenant data, and some show a secret once. Static files
    are answered before this middleware and keep their long cache."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Cache-Control" not in response:
            response["Cache-Control"] = "no-store"
        elif request.user.is_authenticated and "no-store" not in response["Cache-Control"]:
            response["Cache-Control"] = "no-store"
        return response


# Longer URLs than this are refused by the application with a 400 of its own (JSON under
# /api/); gunicorn, started with its largest request line (8190 bytes), lets them through.
MAX_REQUEST_LINE = 8000


class RequestLineLimitMiddleware:
    """Refuse an over-long URL (a 5,000-character cursor, say) with a clear 400."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length = len(request.META.get("PATH_INFO", "")) + len(request.META.get("QUERY_STRING", ""))
        if length > MAX_REQUEST_LINE:
            message = _("the URL is longer than %(limit)d characters") % {"limit": MAX_REQUEST_LINE}
            if request.path.startswith("/api/"):
                from surfaces.base.errors import error_body

                return JsonResponse(error_body(message, code="too_long"), status=400)
            return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class OneLineClientErrors(logging.Filter):
    """Django logs a refused request (403 and other 4xx) with the exception's traceback; a
    refusal is not a fault, so keep its one line and drop the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
        return True


class NotContainingUsernameValidator:
    """A password may not contain its account's username (or the name part of its e-mail),
    whatever is around it: `alan1234` for `alan`."""

    def validate(self, password: str, user: Any = None) -> None:
        if user is None:
            return
        names = {str(getattr(user, "username", "") or "")}
        email = str(getattr(user, "email", "") or "")
        if email:
            names.add(email.split("@", 1)[0])
        lowered = password.lower()
        for name in names:
            if len(name) >= 3 and name.lower() in lowered:
                raise ValidationError(
                    _("The password may not contain the username."),
                    code="password_contains_username",
                )

    def get_help_text(self) -> str:
        return _("Your password may not contain your username.")


TIME_ZONE_COOKIE = "mnemosyne_tz"


class ViewerTimeZoneMiddleware:
    """Pages show times in the viewer's time zone: the one the browser reports (admin.js keeps
    it in the `mnemosyne_tz` cookie); UTC until it has, or when the name is not a zone."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from zoneinfo import ZoneInfo

        from django.utils import timezone

        name = request.COOKIES.get(TIME_ZONE_COOKIE, "")
        zone = None
        if 0 < len(name) <= 64 and all(c.isalnum() or c in "/_+-" for c in name):
            try:
                zone = ZoneInfo(name)
            except (ValueError, OSError, KeyError):
                zone = None
        if zone is None:
            timezone.deactivate()
        else:
            timezone.activate(zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
