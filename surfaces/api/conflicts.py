"""REST endpoints of conflicts between facts."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from facts import conflicts, inputs
from facts.inputs import MAX_ID
from facts.models import ConflictResolution, ConflictStatus
from facts.selectors.conflicts import conflict_get, conflict_list
from facts.selectors.paging import MAX_PAGE
from surfaces.api.examples import _CONFLICT, _answer
from surfaces.api.facts import _ALL, FactOut, _status
from surfaces.base.strict import StrictSerializer, validated
from surfaces.base.viewsets import Need, TenantViewSet, page

# -- conflicts --------------------------------------------------------------------------------


class ConflictOut(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=ConflictStatus.choices)
    reason = serializers.CharField(help_text="negation, opposite, number, date or value")
    score = serializers.FloatField(help_text="how sure the detector was, 0 to 1")
    fact_a = FactOut()
    fact_b = FactOut()
    resolution = serializers.CharField(help_text="keep_both, supersede or dismiss, once decided")
    note = serializers.CharField()
    detected_by = serializers.CharField()
    detected_at = serializers.DateTimeField()
    resolved_by = serializers.CharField()
    resolved_at = serializers.DateTimeField(allow_null=True)


class ConflictPageOut(serializers.Serializer):
    results = ConflictOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class ConflictListQuery(StrictSerializer):
    """Which conflicts to list."""

    status = serializers.ChoiceField(choices=[*ConflictStatus.values, _ALL], default="open")
    fact_id = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    limit = serializers.IntegerField(default=50, min_value=1, max_value=MAX_PAGE)
    cursor = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)


class ConflictResolveIn(StrictSerializer):
    """How a conflict is resolved."""

    decision = serializers.ChoiceField(
        choices=ConflictResolution.values,
        help_text="keep_both: both stay; supersede: the older leaves recall (its history "
        "stays, its trust drops by 0.2); dismiss: not a conflict",
    )
    note = serializers.CharField(required=False, allow_blank=True, max_length=inputs.MAX_NOTE_CHARS)


class ConflictViewSet(TenantViewSet):
    needs = {"resolve": Need.MANAGE}

    @extend_schema(
        summary="The conflict review queue: pairs of facts that disagree",
        description="Found by the worker when a fact is stored and by a background sweep "
        "(negation, a different value, number or date for the same thing). Open ones by "
        "default, newest first.",
        parameters=[ConflictListQuery],
        responses={200: ConflictPageOut},
        tags=["conflicts"],
        examples=_answer("a page", {"results": [_CONFLICT], "next_cursor": None}),
    )
    def list(self, request: Request, tenant: str | None = None) -> Response:
        query = validated(ConflictListQuery, request.query_params)
        result = conflict_list(
            tenant=self.tenant, status=_status(query["status"]), fact_id=query.get("fact_id"),
            limit=query["limit"], cursor=query.get("cursor"),
        )  # fmt: skip
        cursor = str(result.next_cursor) if result.next_cursor is not None else None
        return page(ConflictOut(result.conflicts, many=True).data, cursor)

    @extend_schema(
        summary="Read a conflict",
        responses={200: ConflictOut},
        tags=["conflicts"],
        examples=_answer("a conflict", _CONFLICT),
    )
    def retrieve(self, request: Request, conflict_id: int, tenant: str | None = None) -> Response:
        conflict = conflict_get(tenant=self.tenant, conflict_id=conflict_id)
        return Response(ConflictOut(conflict).data)

    @extend_schema(
        summary="Decide a conflict (admins)",
        description="Audited on both facts. A conflict is decided once.",
        request=ConflictResolveIn,
        responses={200: ConflictOut},
        tags=["conflicts"],
        examples=[
            *_answer(
                "decided",
                _CONFLICT
                | {
                    "status": "resolved",
                    "resolution": "supersede",
                    "resolved_by": "user:1:olivia",
                    "resolved_at": "2026-12-02T11:00:00Z",
                },
            ),
            OpenApiExample(
                "supersede",
                value={"decision": "supersede", "note": "she switched to coffee in May"},
                request_only=True,
            ),
        ],
    )
    def resolve(self, request: Request, conflict_id: int, tenant: str | None = None) -> Response:
        data = validated(ConflictResolveIn, request.data)
        conflict = conflicts.conflict_resolve(
            tenant=self.tenant, conflict_id=conflict_id,
            decision=inputs.conflict_decision(data["decision"]),
            note=inputs.conflict_note(data.get("note")), actor=self.actor,
        )  # fmt: skip
        fresh = conflict_get(tenant=self.tenant, conflict_id=conflict.pk)
        return Response(ConflictOut(fresh).data)
