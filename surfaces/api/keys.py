"""REST endpoints of a tenant's API keys: list, create, read, revoke, rotate."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from surfaces.base.strict import StrictSerializer, validated
from surfaces.base.viewsets import Need, TenantViewSet
from tenants import selectors, services
from tenants.inputs import API_KEY_SCOPES

# -- serializers ------------------------------------------------------------------------------


class ApiKeyOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="the key's public part: mnm_<prefix>_...")
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=API_KEY_SCOPES))
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    last_used_from = serializers.CharField(allow_null=True, help_text="the last request's address")
    revoked_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True, help_text="null: never")
    scope_prefix = serializers.CharField(
        help_text="the key reads and writes this scope and below only; empty: the whole tenant"
    )
    previous_valid_until = serializers.DateTimeField(
        allow_null=True, help_text="after a rotation: the old secret works until then"
    )
    active = serializers.BooleanField(source="is_active", help_text="not revoked, not expired")


class ApiKeyCreatedOut(ApiKeyOut):
    token = serializers.CharField(help_text="the secret: shown this once, never again")


class ApiKeyIn(StrictSerializer):
    name = serializers.CharField(max_length=100, help_text="e.g. the Hermes profile using it")
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=API_KEY_SCOPES),
        required=False,
        min_length=1,
        max_length=2,
        help_text="read, write or both (the default)",
    )
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="when the key stops working; null: never"
    )
    scope_prefix = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="limit the key to this scope and below (e.g. team:research); empty: none",
    )


class ApiKeyRotateIn(StrictSerializer):
    grace_hours = serializers.IntegerField(
        min_value=0,
        max_value=720,
        default=24,
        help_text="how long the old secret keeps working (hours)",
    )


# -- views ------------------------------------------------------------------------------------

_KEY = {
    "id": 7,
    "name": "hermes-research",
    "prefix": "3f9a1c0b2d4e",
    "scopes": ["read", "write"],
    "created_by": "user:1:olivia",
    "created_at": "2026-12-02T09:30:00Z",
    "last_used_at": None,
    "last_used_from": None,
    "revoked_at": None,
    "expires_at": None,
    "scope_prefix": "",
    "previous_valid_until": None,
    "active": True,
}


class ApiKeyViewSet(TenantViewSet):
    about_people = True
    needs = {"create": Need.MANAGE, "destroy": Need.MANAGE, "rotate": Need.MANAGE}

    @extend_schema(
        summary="List API keys (secrets are never shown again)",
        responses={200: ApiKeyOut(many=True)},
        examples=[OpenApiExample("keys", value=[_KEY], response_only=True)],
        tags=["api keys"],
    )
    def list(self, request: Request, tenant: str | None = None) -> Response:
        return Response(ApiKeyOut(selectors.apikey_list(tenant=self.tenant), many=True).data)

    @extend_schema(
        summary="Create an API key (admins); the secret is in this answer only",
        request=ApiKeyIn,
        responses={201: ApiKeyCreatedOut},
        examples=[
            OpenApiExample("a Hermes profile", value={"name": "hermes-research"},
                           request_only=True),
            OpenApiExample("read only", value={"name": "dashboard", "scopes": ["read"]},
                           request_only=True),
            OpenApiExample(
                "created",
                value=_KEY | {"token": "mnm_3f9a1c0b2d4e_Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0"},
                response_only=True,
            ),
        ],
        tags=["api keys"],
    )  # fmt: skip
    def create(self, request: Request, tenant: str | None = None) -> Response:
        data = validated(ApiKeyIn, request.data)
        created = services.apikey_create(tenant=self.tenant, actor=self.actor, **data)
        body = ApiKeyOut(created.key).data | {"token": created.token}
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Read one API key",
        responses={200: ApiKeyOut},
        examples=[OpenApiExample("a key", value=_KEY, response_only=True)],
        tags=["api keys"],
    )
    def retrieve(self, request: Request, key_id: int, tenant: str | None = None) -> Response:
        return Response(ApiKeyOut(selectors.apikey_get(tenant=self.tenant, key_id=key_id)).data)

    @extend_schema(
        summary="Revoke an API key (admins); it stops working at once",
        responses={200: ApiKeyOut},
        examples=[
            OpenApiExample(
                "revoked",
                value=_KEY | {"revoked_at": "2026-12-03T10:00:00Z", "active": False},
                response_only=True,
            )
        ],
        tags=["api keys"],
    )
    def destroy(self, request: Request, key_id: int, tenant: str | None = None) -> Response:
        key = services.apikey_revoke(tenant=self.tenant, key_id=key_id, actor=self.actor)
        return Response(ApiKeyOut(key).data)

    @extend_schema(
        summary="Rotate an API key (admins): a new secret, the old one valid for a while",
        request=ApiKeyRotateIn,
        responses={200: ApiKeyCreatedOut},
        examples=[
            OpenApiExample("a day of grace", value={"grace_hours": 24}, request_only=True),
            OpenApiExample(
                "rotated",
                value=_KEY
                | {
                    "previous_valid_until": "2026-12-04T09:30:00Z",
                    "token": "mnm_3f9a1c0b2d4e_bmV3c2VjcmV0bmV3c2VjcmV0bmV3c2VjcmV0",
                },
                response_only=True,
            ),
        ],
        tags=["api keys"],
    )
    def rotate(self, request: Request, key_id: int, tenant: str | None = None) -> Response:
        from datetime import timedelta

        data = validated(ApiKeyRotateIn, request.data)
        rotated = services.apikey_rotate(
            tenant=self.tenant,
            key_id=key_id,
            actor=self.actor,
            grace=timedelta(hours=data["grace_hours"]),
        )
        return Response(ApiKeyOut(rotated.key).data | {"token": rotated.token})


__all__ = ["ApiKeyViewSet"]
