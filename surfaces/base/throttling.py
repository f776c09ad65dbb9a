"""Request rates per API key, per signed-in user and per address (MNEMOSYNE_API_RATE_*),
counted in the database (operations.rates), so every web process shares them.

A request with no credentials, or with a key that is wrong, is counted against its address by
the authentication itself (`charge_address`), before it is refused with 401: trying keys, or
asking without one, runs into the same per-address rate as any anonymous request."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.exceptions import Throttled
from rest_framework.throttling import BaseThrottle

from operations.rates import rate_hit
from surfaces.base.security import client_ip
from tenants.models import ApiKey

_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """'1200/minute' -> (1200, 60), as DRF reads a rate."""
    count, period = rate.split("/")
    return int(count), _SECONDS[period[0]]


class ApiRateThrottle(BaseThrottle):
    """One bucket per API key (programs), per user (browsers) or per address (the rest).

    Rates are read from settings on each request, so a deployment (or a test) changes them
    without a restart."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def _who(self, request: Any) -> tuple[str, str]:
        if isinstance(request.auth, ApiKey):
            # The tenant id leads, like every key of tenant data.
            return "key", f"{request.auth.tenant_id}:{request.auth.pk}"
        if request.user is not None and request.user.is_authenticated:
            return "user", str(request.user.pk)
        return "anon", client_ip(request)

    def allow_request(self, request: Any, view: Any) -> bool:
        kind, ident = self._who(request)
        if kind == "anon" and getattr(request._request, "_mnemosyne_address_charged", False):
            return True  # counted once already, by the authentication
        allowed, self._wait = _hit(kind, ident)
        return allowed

    def wait(self) -> float | None:
        return self._wait


def _hit(kind: str, ident: str) -> tuple[bool, float | None]:
    rate = settings.MNEMOSYNE_API_RATES.get(kind)
    if rate is None:
        return True, None
    limit, duration = parse_rate(rate)
    answer = rate_hit(f"{kind}:{ident}", limit=limit, duration=duration)
    return answer.allowed, answer.wait_s if not answer.allowed else None


def charge_address(request: Any) -> None:
    """Count one request without valid credentials against its address; Throttled (429) when
    the address is over MNEMOSYNE_API_RATE_ANON."""
    django_request = getattr(request, "_request", request)
    if getattr(django_request, "_mnemosyne_address_charged", False):
        return
    django_request._mnemosyne_address_charged = True
    allowed, wait = _hit("anon", client_ip(django_request))
    if not allowed:
        raise Throttled(wait=wait)
