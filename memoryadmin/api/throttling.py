"""Request rates per API key, per signed-in user and per address (MNEMOSYNE_API_RATE_*)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

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
        return "anon", self.get_ident(request)

    def allow_request(self, request: Any, view: Any) -> bool:
        kind, ident = self._who(request)
        self.rate = settings.MNEMOSYNE_API_RATES.get(kind)
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self._cache_key = f"mnemosyne:throttle:{kind}:{ident}"
        return super().allow_request(request, view)

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self._cache_key
