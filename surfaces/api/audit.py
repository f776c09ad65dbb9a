"""REST endpoints of the audit log: its pages, its export and the check of its chain."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from facts import inputs
from facts.audit_chain import audit_chain_verify, audit_digest_take, chain_report_data, digest_parse
from facts.audit_export import audit_csv_rows, audit_jsonl_rows
from facts.inputs import MAX_ID
from facts.selectors.audit import AUDIT_SOURCES, audit_actions, audit_event_iter, audit_event_list
from facts.selectors.paging import MAX_CURSOR_CHARS, MAX_PAGE
from surfaces.api.examples import _AUDIT
from surfaces.base.downloads import download
from surfaces.base.strict import StrictSerializer, validated
from surfaces.base.viewsets import Need, TenantViewSet, page
from tenants.services import audit_export_record


class AuditOut(serializers.Serializer):
    source = serializers.ChoiceField(  # type: ignore[assignment]  # a field, not Field.source
        choices=AUDIT_SOURCES, help_text="fact: a change of a fact; tenant: of the tenant itself"
    )
    id = serializers.IntegerField()
    action = serializers.CharField()
    actor = serializers.CharField()
    fact_id = serializers.IntegerField(allow_null=True)
    target = serializers.CharField(help_text="what a tenant event changed (a member, a key...)")
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    at = serializers.DateTimeField()


class AuditPageOut(serializers.Serializer):
    results = AuditOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class AuditQuery(StrictSerializer):
    source = serializers.ChoiceField(choices=AUDIT_SOURCES, required=False)  # type: ignore[assignment]
    action = serializers.ChoiceField(choices=audit_actions(), required=False)
    actor = serializers.CharField(
        required=False,
        max_length=inputs.MAX_ACTOR_CHARS,
        help_text="e.g. user:3, apikey:7 or job:retention",
    )
    fact_id = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)


class AuditListQuery(AuditQuery):
    limit = serializers.IntegerField(default=50, min_value=1, max_value=MAX_PAGE)
    cursor = serializers.CharField(required=False, max_length=MAX_CURSOR_CHARS)


class AuditExportQuery(AuditQuery):
    format = serializers.ChoiceField(choices=["csv", "jsonl"], default="csv")


class AuditVerifyQuery(StrictSerializer):
    digest = serializers.CharField(
        required=False, max_length=100, help_text="a digest kept from before, COUNT:HEAD"
    )


class ChainBreakOut(serializers.Serializer):
    position = serializers.IntegerField()
    source = serializers.CharField(  # type: ignore[assignment]  # a field, not Field.source
        allow_null=True, help_text="fact, entity or tenant"
    )
    id = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField()


class DigestCheckOut(serializers.Serializer):
    digest = serializers.CharField()
    holds = serializers.BooleanField()
    problem = serializers.CharField(allow_null=True)


class AuditVerifyOut(serializers.Serializer):
    tenant = serializers.CharField()
    ok = serializers.BooleanField()
    verified_events = serializers.IntegerField()
    head = serializers.CharField(help_text="COUNT:HEAD of the chain as verified")
    first_bad = ChainBreakOut(allow_null=True)
    digest = DigestCheckOut(allow_null=True)


# -- audit ------------------------------------------------------------------------------------


def _audit_filters(query: dict[str, Any]) -> dict[str, Any]:
    return {k: query.get(k) for k in ("source", "action", "actor", "fact_id", "since", "until")}


class AuditViewSet(TenantViewSet):
    needs = {"verify": Need.PEOPLE}  # auditors and admins, signed in

    @extend_schema(
        summary="The audit log: every change to facts and to the tenant, newest first",
        description="Filter by source, action, actor (`user:3`, `apikey:7`, `job:...`: a "
        "prefix of whole parts), fact and time. Keyset pages.",
        parameters=[AuditListQuery],
        responses={200: AuditPageOut},
        examples=[
            OpenApiExample("a page", value={"results": [_AUDIT], "next_cursor": None},
                           response_only=True)
        ],
        tags=["audit"],
    )  # fmt: skip
    def list(self, request: Request, tenant: str | None = None) -> Response:
        query = validated(AuditListQuery, request.query_params)
        result = audit_event_list(
            tenant=self.tenant, limit=query["limit"], cursor=query.get("cursor"),
            **_audit_filters(query),
        )  # fmt: skip
        return page(AuditOut(result.events, many=True).data, result.next_cursor)

    @extend_schema(
        summary="Export the audit log as CSV or JSON Lines",
        description="The same filters as the list, every matching event, streamed newest "
        "first. The export is itself recorded in the audit log. The last row is the audit "
        "chain's digest when the export began (source `digest`, target COUNT:HEAD). CSV cells "
        "that a spreadsheet would take for a formula start with a quote.",
        parameters=[AuditExportQuery],
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV with a header"),
            (200, "application/x-ndjson"): OpenApiResponse(
                OpenApiTypes.STR, description="one JSON object per line"
            ),
        },
        examples=[
            OpenApiExample(
                "csv",
                value="source,id,at,action,actor,fact_id,target,before,after\r\n"
                "fact,901,2026-12-02T10:00:00+00:00,feedback,apikey:7:hermes-research,42,,"
                '"{""trust_score"": 0.5}","{""trust_score"": 0.55, ""helpful"": true}"\r\n',
                response_only=True,
                media_type="text/csv",
            ),
        ],
        tags=["audit"],
    )
    def export(self, request: Request, tenant: str | None = None) -> StreamingHttpResponse:
        query = validated(AuditExportQuery, request.query_params)
        filters = _audit_filters(query)
        fmt = query["format"]
        audit_export_record(
            tenant=self.tenant,
            actor=self.actor,
            format=fmt,
            filters={k: str(v) for k, v in filters.items() if v is not None},
        )
        digest = audit_digest_take(tenant=self.tenant, reason="export")
        events = audit_event_iter(tenant=self.tenant, **filters)
        rows = audit_csv_rows(events, digest) if fmt == "csv" else audit_jsonl_rows(events, digest)
        content_type = "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson"
        return download(
            rows, tenant=self.tenant, what="audit", extension=fmt, content_type=content_type
        )

    @extend_schema(
        summary="Verify the tenant's audit chain (and a digest kept from before)",
        description="Walks the tamper-evident chain of every audit event of the tenant and "
        "names the first that does not verify; with `digest`, also says whether the chain "
        "still holds it. For signed-in auditors and admins.",
        parameters=[AuditVerifyQuery],
        responses={200: AuditVerifyOut},
        examples=[
            OpenApiExample("a chain rewritten after a digest was kept", response_only=True, value={
                "tenant": "acme", "ok": False, "verified_events": 5,
                "head": "5:357424568a8dcf8203ecdefada5b1bc1110ae06611015397d4152207f52cd826",
                "first_bad": None,
                "digest": {
                    "digest": "5:abd00d5c425080768cbda4311912e0cf9819a3291ad4ed296d7e38b49e8fc33b",
                    "holds": False,
                    "problem": "event 5 no longer has the digest's hash: the chain was rewritten",
                },
            }),
            OpenApiExample("an event changed", response_only=True, value={
                "tenant": "acme", "ok": False, "verified_events": 1,
                "head": "1:2f5c749bafa7df71c4affcd1cafd1633eec62f3a3f8446809b0ec818158a6ab9",
                "first_bad": {"position": 2, "source": "fact", "id": 1, "reason":
                              "it does not match its hash: it was changed, or one before it was"},
                "digest": None,
            }),
        ],
        tags=["audit"],
    )  # fmt: skip
    def verify(self, request: Request, tenant: str | None = None) -> Response:
        query = validated(AuditVerifyQuery, request.query_params)
        digest = digest_parse(query["digest"]) if query.get("digest") else None
        report = audit_chain_verify(tenant=self.tenant, digest=digest)
        return Response(AuditVerifyOut(chain_report_data(report)).data)
