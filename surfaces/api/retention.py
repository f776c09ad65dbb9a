"""REST endpoints of a tenant's retention policy: read and change it, preview it, run it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from surfaces.base.strict import StrictSerializer, validated
from surfaces.base.viewsets import Need, TenantViewSet
from tenants import selectors, services
from tenants.inputs import retention_changes, retention_range
from tenants.models import RetentionPolicy

# -- serializers ------------------------------------------------------------------------------

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


# -- views ------------------------------------------------------------------------------------

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


__all__ = ["RetentionViewSet"]
