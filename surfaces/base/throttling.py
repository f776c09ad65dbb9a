"""Request rates per API key, per signed-in user and per address (MNEMOSYNE_API_RATE_*).

A request with no credentials, or with a key that is wrong, is counted against its address by
the authentication itself (`charge_address`), before it is refused with 401: trying keys, or
asking without one, runs into the same per-address rate as any anonymous request."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.exceptions import Throttled
from rest_framework.throttling import SimpleRateThrottle

from surfaces.base.security import client_ip
from tenants.models import ApiKey


class ApiRateThrottle(SimpleRateThrottle):
    """One bucket per API key (programs), per user (browsers) or per address (the rest).

    Rates are read from settings on each request, so a deployment (or a test) changes them
    without a restart of DRF's class attributes."""

    def __init__(self) -> None:  # the rate depends on who asks, so it is set per request
        self.rate = None

    def _who(self, request: Any) -> tuple[str, str]:
        if isinstance(request.auth, ApiKey):
            # The tenant id leads, like every cache key of tenant data.
            return "key", f"{request.auth.tenant_id}:{request.auth.pk}"
        if request.user is not None and request.user.is_authenticated:
            return "user", str(request.user.pk)
        return "anon", client_ip(request)

    def allow_request(self, request: Any, view: Any) -> bool:
        kind, ident = self._who(request)
        if kind == "anon" and getattr(request._request, "_mnemosyne_address_charged", False):
            return True  # counted once already, by the authentication
        self.rate = settings.MNEMOSYNE_API_RATES.get(kind)
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self._cache_key = f"mnemosyne:throttle:{kind}:{ident}"
        return super().allow_request(request, view)

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self._cache_key


def charge_address(request: Any) -> None:
    """Count one request without valid credentials against its address; Throttled (429) when
    the address is over MNEMOSYNE_API_RATE_ANON."""
    django_request = getattr(request, "_request", request)
    if getattr(django_request, "_mnemosyne_address_charged", False):
        return
    django_request._mnemosyne_address_charged = True
    throttle = ApiRateThrottle()
    throttle.rate = settings.MNEMOSYNE_API_RATES.get("anon")
    if throttle.rate is None:
        return
    throttle.num_requests, throttle.duration = throttle.parse_rate(throttle.rate)
    throttle._cache_key = f"mnemosyne:throttle:anon:{client_ip(django_request)}"
    if not SimpleRateThrottle.allow_request(throttle, django_request, None):  # type: ignore[arg-type]
        raise Throttled(wait=throttle.wait())
