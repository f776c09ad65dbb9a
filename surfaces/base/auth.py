"""API-key authentication: `Authorization: Bearer <key>`. Sessions (browsers) use DRF's own."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.translation import gettext as _
from rest_framework.authentication import (
    BaseAuthentication,
    SessionAuthentication,
    get_authorization_header,
)
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from surfaces.base.security import client_ip
from surfaces.base.throttling import charge_address
from tenants.models import ApiKey
from tenants.services import apikey_authenticate


class ApiKeyPrincipal:
    """`request.user` of a request made with an API key: authenticated, but nobody's account."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    def __init__(self, key: ApiKey) -> None:
        self.key = key
        self.username = f"apikey:{key.pk}"

    def get_username(self) -> str:
        return self.username

    def __str__(self) -> str:
        return self.username


class ApiKeyAuthentication(BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request: Request) -> tuple[ApiKeyPrincipal, ApiKey] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None  # not ours: the session (or nothing) decides
        if len(parts) != 2:
            charge_address(request)
            raise AuthenticationFailed(_("send one key: Authorization: Bearer <API key>"))
        try:
            token = parts[1].decode("ascii")
        except UnicodeDecodeError:
            token = ""
        # Verifies, counts the request, and limits it to the key's scope (docs/api/index.md).
        key = apikey_authenticate(token=token, address=client_ip(request)) if token else None
        if key is None:
            # Guessing keys costs the address its anonymous rate (429 past it).
            charge_address(request)
            # One answer for unknown, wrong, expired and revoked keys: nothing to learn.
            raise AuthenticationFailed(_("the API key is unknown, expired or revoked"))
        return ApiKeyPrincipal(key), key

    def authenticate_header(self, request: HttpRequest) -> str:
        # Makes DRF answer 401 (not 403) when credentials are missing or wrong.
        return 'Bearer realm="mnemosyne"'


class SessionOrAddressAuthentication(SessionAuthentication):
    """A signed-in browser's session; a request with no credentials at all is counted against
    its address here (429 past MNEMOSYNE_API_RATE_ANON), before it is refused with 401."""

    def authenticate(self, request: Request) -> tuple[object, None] | None:
        found = super().authenticate(request)
        if found is None:
            charge_address(request)
        return found
