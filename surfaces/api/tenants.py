"""REST endpoints of the tenants themselves: the list, creating one, reading and changing its
settings. Members, API keys and retention have modules of their own."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from surfaces.base.parsers import FirstRenderer
from surfaces.base.strict import StrictSerializer, validated
from surfaces.base.viewsets import Need, TenantViewSet, check_body_size
from tenants import selectors, services
from tenants.actors import Actor
from tenants.inputs import settings_changes, tenant_draft
from tenants.models import DEFAULT_TENANT_SETTINGS, ApiKey, Tenant

# -- serializers ------------------------------------------------------------------------------


class TenantOut(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()
    settings = serializers.DictField(
        child=serializers.FloatField(),
        source="effective_settings",
        help_text="every setting with its value (the defaults where the tenant changed none)",
    )
    role = serializers.CharField(
        allow_null=True, help_text="the caller's role here (admin, auditor), null for an API key"
    )


def _tenant_data(tenant: Tenant, role: str | None) -> dict[str, Any]:
    data = TenantOut(tenant).data | {"role": role}
    return data


class TenantCreateIn(StrictSerializer):
    slug = serializers.CharField(max_length=63)
    name = serializers.CharField(max_length=200)
    settings = serializers.DictField(child=serializers.FloatField(), required=False)


class TenantUpdateIn(StrictSerializer):
    settings = serializers.DictField(
        child=serializers.FloatField(),
        help_text=f"settings to change; known: {', '.join(sorted(DEFAULT_TENANT_SETTINGS))}",
    )


# -- tenants ----------------------------------------------------------------------------------

_TENANT_EXAMPLE = {
    "slug": "acme",
    "name": "Acme",
    "created_at": "2026-12-02T09:30:00Z",
    "settings": dict(DEFAULT_TENANT_SETTINGS),
    "role": "admin",
}


class TenantListView(APIView):
    """The tenants the caller may open; superusers create tenants."""

    content_negotiation_class = FirstRenderer

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        from django.conf import settings

        check_body_size(request, settings.MNEMOSYNE_API_MAX_BODY_BYTES)
        super().initial(request, *args, **kwargs)

    @extend_schema(
        operation_id="tenants_list",
        summary="List the tenants you can open",
        description="Signed in: your tenants with your role (superusers: every tenant, as "
        "admin). With an API key: the key's own tenant.",
        responses={200: TenantOut(many=True)},
        examples=[OpenApiExample("your tenants", value=[_TENANT_EXAMPLE], response_only=True)],
        tags=["tenants"],
    )
    def get(self, request: Request) -> Response:
        if isinstance(request.auth, ApiKey):
            return Response([_tenant_data(request.auth.tenant, None)])
        # Signed in (IsAuthenticated): a user, not the anonymous one.
        rows = selectors.tenants_for_user(user=cast(User, request.user))
        return Response([_tenant_data(tenant, role) for tenant, role in rows])

    @extend_schema(
        operation_id="tenants_create",
        summary="Create a tenant (superusers)",
        request=TenantCreateIn,
        responses={201: TenantOut},
        examples=[
            OpenApiExample(
                "a team",
                value={"slug": "research", "name": "Research", "settings": {"token_budget": 2000}},
                request_only=True,
            ),
            OpenApiExample("created", value=_TENANT_EXAMPLE, response_only=True),
        ],
        tags=["tenants"],
    )
    def post(self, request: Request) -> Response:
        if isinstance(request.auth, ApiKey) or not request.user.is_superuser:
            raise exceptions.PermissionDenied("only superusers create tenants")
        data = validated(TenantCreateIn, request.data)
        tenant = services.tenant_create(
            actor=Actor.user(request.user), draft=tenant_draft({**data})
        )
        return Response(_tenant_data(tenant, "admin"), status=status.HTTP_201_CREATED)


class TenantDetailViewSet(TenantViewSet):
    needs = {"partial_update": Need.MANAGE}

    @extend_schema(
        summary="Read a tenant and its settings",
        responses={200: TenantOut},
        examples=[OpenApiExample("acme", value=_TENANT_EXAMPLE, response_only=True)],
        tags=["tenants"],
    )
    def retrieve(self, request: Request, tenant: str | None = None) -> Response:
        return Response(_tenant_data(self.tenant, self.access.role))

    @extend_schema(
        summary="Change a tenant's settings (admins)",
        description="Fusion weights, trust floor and default, decay half-life, token budget, "
        "prefetch cache TTL. Only the settings named change; each is range-checked.",
        request=TenantUpdateIn,
        responses={200: TenantOut},
        examples=[
            OpenApiExample(
                "turn on decay",
                value={"settings": {"half_life_days": 180, "min_trust": 0.2}},
                request_only=True,
            ),
            OpenApiExample("changed", value=_TENANT_EXAMPLE, response_only=True),
        ],
        tags=["tenants"],
    )
    def partial_update(self, request: Request, tenant: str | None = None) -> Response:
        data = validated(TenantUpdateIn, request.data)
        updated = services.tenant_update_settings(
            tenant=self.tenant, changes=settings_changes(data["settings"]), actor=self.actor
        )
        return Response(_tenant_data(updated, self.access.role))


__all__ = ["TenantDetailViewSet", "TenantListView"]
