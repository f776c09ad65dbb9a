"""REST endpoints of tenant administration: tenants, members, API keys, retention policies."""

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
from tenants import invitations, selectors, services
from tenants.actors import Actor
from tenants.inputs import (
    API_KEY_SCOPES,
    retention_changes,
    retention_range,
    settings_changes,
    tenant_draft,
)
from tenants.models import (
    DEFAULT_TENANT_SETTINGS,
    ApiKey,
    Membership,
    RetentionPolicy,
    Role,
    Tenant,
)

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


class MemberOut(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    role = serializers.ChoiceField(choices=Role.choices)
    created_at = serializers.DateTimeField()


class MemberIn(StrictSerializer):
    username = serializers.CharField(max_length=150, help_text="an account's username")
    role = serializers.ChoiceField(choices=Role.choices)


class MemberInvitedOut(serializers.Serializer):
    username = serializers.CharField(help_text="the account the invitation is for")
    role = serializers.ChoiceField(choices=Role.choices)
    invited = serializers.BooleanField(help_text="always true: the account joins when it accepts")
    expires_at = serializers.DateTimeField()


class RoleIn(StrictSerializer):
    role = serializers.ChoiceField(choices=Role.choices)


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


_RETENTION_HELP = {
    "archive_after_days_unretrieved": "archive a fact not retrieved for this many days",
    "archive_below_trust": "archive a fact whose trust falls below this",
    "max_active_facts": "archive the least important facts beyond this many",
    "purge_archived_after_days": "delete archived facts for good after this many days",
}


class RetentionOut(serializers.Serializer):
    archive_after_days_unretrieved = serializers.IntegerField(allow_null=True)
    archive_below_trust = serializers.FloatField(allow_null=True)
    max_active_facts = serializers.IntegerField(allow_null=True)
    purge_archived_after_days = serializers.IntegerField(allow_null=True)
    legal_hold = serializers.BooleanField(help_text="while set, nothing is archived or purged")
    run_every_hours = serializers.IntegerField(help_text="beat runs the policy this often")
    importance_every_hours = serializers.IntegerField(
        help_text="beat recomputes the facts' importance this often"
    )
    updated_at = serializers.DateTimeField(allow_null=True)


class RetentionIn(StrictSerializer):
    archive_after_days_unretrieved = serializers.IntegerField(
        **retention_range("archive_after_days_unretrieved"),
        allow_null=True,
        required=False,
        help_text=_RETENTION_HELP["archive_after_days_unretrieved"] + "; null: never",
    )
    archive_below_trust = serializers.FloatField(
        **retention_range("archive_below_trust"),
        allow_null=True,
        required=False,
        help_text=_RETENTION_HELP["archive_below_trust"] + "; null: never",
    )
    max_active_facts = serializers.IntegerField(
        **retention_range("max_active_facts"),
        allow_null=True,
        required=False,
        help_text=_RETENTION_HELP["max_active_facts"] + "; null: no limit",
    )
    purge_archived_after_days = serializers.IntegerField(
        **retention_range("purge_archived_after_days"),
        allow_null=True,
        required=False,
        help_text=_RETENTION_HELP["purge_archived_after_days"] + "; null: never",
    )
    legal_hold = serializers.BooleanField(required=False)
    run_every_hours = serializers.IntegerField(
        **retention_range("run_every_hours"), required=False,
        help_text="how often beat runs the policy (1 to 720 hours; default 24)",
    )  # fmt: skip
    importance_every_hours = serializers.IntegerField(
        **retention_range("importance_every_hours"), required=False,
        help_text="how often beat recomputes the facts' importance (1 to 720 hours; default 1)",
    )  # fmt: skip


class RetentionPreviewOut(serializers.Serializer):
    legal_hold = serializers.BooleanField()
    active = serializers.IntegerField(help_text="active facts now")
    archived = serializers.IntegerField(help_text="archived facts now")
    archive_unretrieved = serializers.IntegerField()
    archive_low_trust = serializers.IntegerField()
    archive_over_limit = serializers.IntegerField()
    archive = serializers.IntegerField(help_text="facts the policy would archive now, in all")
    purge = serializers.IntegerField(help_text="archived facts it would delete for good now")
    policy = RetentionOut(help_text="the policy counted with (the saved one, changed by the query)")


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


# -- members ----------------------------------------------------------------------------------

_MEMBER = {"username": "arthur", "role": "auditor", "created_at": "2026-12-02T09:30:00Z"}
_INVITED = {
    "username": "arthur",
    "role": "auditor",
    "invited": True,
    "expires_at": "2026-12-09T09:30:00Z",
}


class MemberViewSet(TenantViewSet):
    about_people = True
    needs = {"create": Need.MANAGE, "partial_update": Need.MANAGE, "destroy": Need.MANAGE}

    @extend_schema(
        summary="List members and their roles",
        responses={200: MemberOut(many=True)},
        examples=[OpenApiExample("members", value=[_MEMBER], response_only=True)],
        tags=["members"],
    )
    def list(self, request: Request, tenant: str | None = None) -> Response:
        return Response(MemberOut(selectors.membership_list(tenant=self.tenant), many=True).data)

    @extend_schema(
        summary="Add a member by username, or invite them (admins)",
        description=(
            "`admin` reads and writes; `auditor` reads only. A member already gets the role "
            "(200). Any other username is invited (202): the account sees the invitation on "
            "its home page after signing in, and joins when it accepts. The 202 is the same "
            "whether or not an account has that name. A superuser adds an existing account "
            "at once (200)."
        ),
        request=MemberIn,
        responses={200: MemberOut, 202: MemberInvitedOut},
        examples=[
            OpenApiExample("an auditor", value={"username": "arthur", "role": "auditor"},
                           request_only=True),
            OpenApiExample("added", value=_MEMBER, response_only=True, status_codes=["200"]),
            OpenApiExample("invited", value=_INVITED, response_only=True, status_codes=["202"]),
        ],
        tags=["members"],
    )  # fmt: skip
    def create(self, request: Request, tenant: str | None = None) -> Response:
        data = validated(MemberIn, request.data)
        added = invitations.member_add(
            tenant=self.tenant, username=data["username"], role=data["role"], actor=self.actor
        )
        if added.invitation is not None:
            invitation = added.invitation
            return Response(
                MemberInvitedOut(
                    {
                        "username": invitation.username,
                        "role": invitation.role,
                        "invited": True,
                        "expires_at": invitation.expires_at,
                    }
                ).data,
                status=status.HTTP_202_ACCEPTED,
            )
        return Response(MemberOut(added.membership).data)

    @extend_schema(
        summary="Read one member",
        responses={200: MemberOut},
        examples=[OpenApiExample("a member", value=_MEMBER, response_only=True)],
        tags=["members"],
    )
    def retrieve(self, request: Request, username: str, tenant: str | None = None) -> Response:
        return Response(
            MemberOut(selectors.membership_get(tenant=self.tenant, username=username)).data
        )

    @extend_schema(
        summary="Change a member's role (admins)",
        request=RoleIn,
        responses={200: MemberOut},
        examples=[
            OpenApiExample("promote", value={"role": "admin"}, request_only=True),
            OpenApiExample("changed", value=_MEMBER | {"role": "admin"}, response_only=True),
        ],
        tags=["members"],
    )
    def partial_update(
        self, request: Request, username: str, tenant: str | None = None
    ) -> Response:
        data = validated(RoleIn, request.data)
        current = selectors.membership_get(tenant=self.tenant, username=username)
        membership = services.membership_set(
            tenant=self.tenant, user=current.user, role=data["role"], actor=self.actor
        )
        return Response(MemberOut(_with_user(membership, current.user)).data)

    @extend_schema(summary="Remove a member (admins)", responses={204: None}, tags=["members"])
    def destroy(self, request: Request, username: str, tenant: str | None = None) -> Response:
        current = selectors.membership_get(tenant=self.tenant, username=username)
        services.membership_remove(tenant=self.tenant, user=current.user, actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _with_user(membership: Membership, user: Any) -> Membership:
    membership.user = user  # already loaded: no second query for the username
    return membership


# -- API keys ---------------------------------------------------------------------------------

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


# -- retention --------------------------------------------------------------------------------

_POLICY = {
    "archive_after_days_unretrieved": 365,
    "archive_below_trust": 0.2,
    "max_active_facts": None,
    "purge_archived_after_days": 730,
    "legal_hold": False,
    "run_every_hours": 24,
    "importance_every_hours": 1,
    "updated_at": "2026-12-02T09:30:00Z",
}


def _policy_data(policy: RetentionPolicy) -> dict[str, Any]:
    return RetentionOut(policy).data


class RetentionRunIn(StrictSerializer):
    dry_run = serializers.BooleanField(
        default=False, help_text="true: only report what a run would do now"
    )


class RetentionRunOut(serializers.Serializer):
    id = serializers.IntegerField()
    trigger = serializers.CharField(help_text="schedule | manual")
    dry_run = serializers.BooleanField()
    status = serializers.CharField(help_text="queued | running | done | failed")
    counts = serializers.DictField(
        help_text="a run: archived per reason (unretrieved, low_trust, over_limit), purged, "
        "bundles, and what it planned; a dry run: what it would archive and purge"
    )
    policy = serializers.DictField(help_text="the policy the run worked with")
    note = serializers.CharField()
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class RetentionRunsOut(serializers.Serializer):
    next_run_at = serializers.DateTimeField(help_text="when beat starts the next scheduled run")
    runs = RetentionRunOut(many=True, help_text="the last 20, newest first")


class RetentionViewSet(TenantViewSet):
    needs = {"partial_update": Need.MANAGE, "run": Need.MANAGE}

    @extend_schema(
        summary="The last runs of the policy, and when the next one is due",
        responses={200: RetentionRunsOut},
        examples=[
            OpenApiExample(
                "a run done, the next due tomorrow",
                value={
                    "next_run_at": "2026-12-04T09:30:00Z",
                    "runs": [
                        {
                            "id": 11,
                            "trigger": "schedule",
                            "dry_run": False,
                            "status": "done",
                            "counts": {
                                "archive": 2,
                                "archive_low_trust": 2,
                                "purge": 1,
                                "bundles": 1,
                            },
                            "policy": {"archive_below_trust": 0.3, "purge_archived_after_days": 30},
                            "note": "",
                            "created_by": "job:retention",
                            "created_at": "2026-12-03T09:30:00Z",
                            "started_at": "2026-12-03T09:30:01Z",
                            "finished_at": "2026-12-03T09:30:02Z",
                        }
                    ],
                },
                response_only=True,
            )
        ],  # fmt: skip
        tags=["retention"],
    )
    def runs(self, request: Request, tenant: str | None = None) -> Response:
        from facts.retention import retention_schedule

        schedule = retention_schedule(tenant=self.tenant)
        return Response(
            {
                "next_run_at": schedule.next_at,
                "runs": RetentionRunOut(schedule.runs, many=True).data,
            }
        )

    @extend_schema(
        summary="Run the policy now (a worker does it), or a dry run (admins)",
        description="A run is queued for a worker (202) unless one is queued or running "
        "already (200, that run). A dry run changes nothing and answers what a run would "
        "archive and purge now (200).",
        request=RetentionRunIn,
        responses={200: RetentionRunOut, 202: RetentionRunOut},
        examples=[
            OpenApiExample(
                "a run queued for a worker",
                value={
                    "id": 12,
                    "trigger": "manual",
                    "dry_run": False,
                    "status": "queued",
                    "counts": {},
                    "policy": {"archive_below_trust": 0.3},
                    "note": "",
                    "created_by": "user:7:ann",
                    "created_at": "2026-12-03T09:30:00Z",
                    "started_at": None,
                    "finished_at": None,
                },
                response_only=True,
                status_codes=[200, 202],
            )
        ],  # fmt: skip
        tags=["retention"],
    )
    def run(self, request: Request, tenant: str | None = None) -> Response:
        from facts.retention import retention_dry_run, retention_run_start

        data = validated(RetentionRunIn, request.data)
        if data["dry_run"]:
            run = retention_dry_run(tenant=self.tenant, actor=self.actor)
            return Response(RetentionRunOut(run).data)
        run, created = retention_run_start(tenant=self.tenant, actor=self.actor)
        code = status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK
        return Response(RetentionRunOut(run).data, status=code)

    @extend_schema(
        summary="Read the retention policy",
        responses={200: RetentionOut},
        examples=[OpenApiExample("policy", value=_POLICY, response_only=True)],
        tags=["retention"],
    )
    def retrieve(self, request: Request, tenant: str | None = None) -> Response:
        return Response(_policy_data(selectors.retention_policy_get(tenant=self.tenant)))

    @extend_schema(
        summary="Change the retention policy (admins)",
        description="Only the fields given change; null clears a limit. `legal_hold: true` "
        "stops all archiving and purging.",
        request=RetentionIn,
        responses={200: RetentionOut},
        examples=[
            OpenApiExample(
                "archive unused facts after a year",
                value={"archive_after_days_unretrieved": 365, "purge_archived_after_days": 730},
                request_only=True,
            ),
            OpenApiExample("legal hold", value={"legal_hold": True}, request_only=True),
            OpenApiExample("changed", value=_POLICY, response_only=True),
        ],
        tags=["retention"],
    )
    def partial_update(self, request: Request, tenant: str | None = None) -> Response:
        changes = validated(RetentionIn, request.data)
        policy = services.retention_policy_update(
            tenant=self.tenant, actor=self.actor, changes=retention_changes(changes)
        )
        return Response(_policy_data(policy))

    @extend_schema(
        summary="Preview: how many facts the policy would archive or purge now",
        description="Counts with the saved policy; query parameters try other values without "
        "saving them (an empty value clears that limit). Nothing is changed.",
        parameters=[RetentionIn],
        responses={200: RetentionPreviewOut},
        examples=[
            OpenApiExample(
                "preview",
                value={
                    "legal_hold": False, "active": 1200, "archived": 40,
                    "archive_unretrieved": 85, "archive_low_trust": 12, "archive_over_limit": 0,
                    "archive": 93, "purge": 4, "policy": _POLICY,
                },
                response_only=True,
            )
        ],
        tags=["retention"],
    )  # fmt: skip
    def preview(self, request: Request, tenant: str | None = None) -> Response:
        from facts.selectors.retention import retention_preview

        valid = validated(RetentionIn, request.query_params)
        # Query strings read an absent boolean as false: keep only what the caller named.
        changes = {k: v for k, v in valid.items() if k in request.query_params}
        result = retention_preview(tenant=self.tenant, changes=changes or None)
        return Response(vars(result) | {"policy": RetentionOut(result.policy).data})


__all__ = [
    "ApiKeyViewSet",
    "MemberViewSet",
    "RetentionViewSet",
    "TenantDetailViewSet",
    "TenantListView",
]
