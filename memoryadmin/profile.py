"""The production profile (MNEMOSYNE_PROFILE=production): what changes when Mnemosyne is served
over HTTPS behind a proxy. Kept apart so that the settings and the tests apply the same."""

from __future__ import annotations

from typing import Any

from memoryadmin.env import env_bool, env_int


def production_settings() -> dict[str, Any]:
    """Django settings of the production profile, read from the environment."""
    return {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "LANGUAGE_COOKIE_SECURE": True,
        "LANGUAGE_COOKIE_HTTPONLY": True,
        # The proxy in front says the request came over HTTPS (it must set or strip the header).
        "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https"),
        "SECURE_HSTS_SECONDS": env_int("MNEMOSYNE_HSTS_SECONDS", 365 * 86400, minimum=0),
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": env_bool("MNEMOSYNE_HSTS_SUBDOMAINS", False),
        # A plain-HTTP request is sent to HTTPS, except the load balancer's health check.
        "SECURE_SSL_REDIRECT": env_bool("MNEMOSYNE_SSL_REDIRECT", True),
        "SECURE_REDIRECT_EXEMPT": [r"^healthz$"],
    }
