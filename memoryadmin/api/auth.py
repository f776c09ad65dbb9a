"""API-key authentication: `Authorization: Bearer <key>`. Sessions (browsers) use DRF's own."""

from __future__ import annotations

from django.http import HttpRequest
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

from tenants.models import ApiKey
from tenants.services import apikey_verify


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

    def authenticate(self, request: HttpRequest) -> tuple[ApiKeyPrincipal, ApiKey] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None  # not ours: the session (or nothing) decides
        if len(parts) != 2:
            raise AuthenticationFailed("send one key: Authorization: Bearer <API key>")
        try:
            token = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed("the API key is unknown or revoked") from None
        key = apikey_verify(token=token)
        if key is None:
            # One answer for unknown, wrong and revoked keys: nothing to learn by trying.
            raise AuthenticationFailed("the API key is unknown or revoked")
        return ApiKeyPrincipal(key), key

    def authenticate_header(self, request: HttpRequest) -> str:
        # Makes DRF answer 401 (not 403) when credentials are missing or wrong.
        return 'Bearer realm="mnemosyne"'
