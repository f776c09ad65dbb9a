"""REST endpoints of a tenant's members: list, add or invite, change a role, remove."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from surfaces.base.strict import StrictSerializer, validated
from surfaces.base.viewsets import Need, TenantViewSet
from tenants import invitations, selectors, services
from tenants.models import Membership, Role

# -- serializers ------------------------------------------------------------------------------


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


# -- views ------------------------------------------------------------------------------------

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


__all__ = ["MemberViewSet"]
