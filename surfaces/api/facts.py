"""REST endpoints of facts and their import."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from facts import inputs, services
from facts.models import Category, EntityType, Fact, Kind, Status
from facts.selectors.facts import fact_entities, fact_get, fact_history, fact_list
from facts.selectors.paging import MAX_CURSOR_CHARS, MAX_PAGE
from surfaces.api.examples import _CURSOR, _FACT
from surfaces.base.parsers import JSONLinesParser, JSONLParser
from surfaces.base.strict import ScopeText, StrictSerializer, validated
from surfaces.base.viewsets import Need, TenantViewSet, page
from tenants.inputs import scope_checked

_ALL = "all"
# Named choice sets, so the schema's enums get names that say what they are.
STATUS_FILTER = [*Status.values, _ALL]
ADD_STATUSES = ["added", "exists", "restored", "joined"]
IMPORT_STATUSES = [*ADD_STATUSES, "error"]


# -- serializers ------------------------------------------------------------------------------


class FactOut(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=Kind.choices)
    content = serializers.CharField()
    scope = serializers.CharField(help_text="a path of type:name segments, e.g. user:alice")
    session_id = serializers.CharField()
    position = serializers.IntegerField(allow_null=True, help_text="a turn's place in its session")
    speaker = serializers.CharField()
    category = serializers.ChoiceField(choices=Category.choices)
    tags = serializers.ListField(child=serializers.CharField())
    metadata = serializers.DictField(child=serializers.JSONField())
    trust_score = serializers.FloatField()
    helpful_count = serializers.IntegerField()
    unhelpful_count = serializers.IntegerField()
    retrieval_count = serializers.IntegerField()
    last_retrieved_at = serializers.DateTimeField(allow_null=True)
    importance = serializers.FloatField(
        help_text="0-1 from feedback, retrievals, recency of use and trust; 1 when pinned"
    )
    pinned = serializers.BooleanField(help_text="always remember: never archived by retention")
    mention_count = serializers.IntegerField(
        help_text="how often it was stated: near-duplicates that joined it count too"
    )
    status = serializers.ChoiceField(choices=Status.choices)
    superseded_by = serializers.IntegerField(source="superseded_by_id", allow_null=True)
    embedded = serializers.SerializerMethodField(
        help_text="has a vector: the vector channel sees it"
    )
    created_by = serializers.CharField(
        help_text="user:<id>:<name>, apikey:<id>:<name> or job:<name>"
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_embedded(self, fact: Fact) -> bool:
        return bool(fact.embedding_model)


_STAMP = serializers.DateTimeField()


def _stamp(value: Any) -> str | None:
    return None if value is None else _STAMP.to_representation(value)


def fact_out(fact: Fact) -> dict[str, Any]:
    """What `FactOut(fact).data` gives, without building a serializer: recall answers with many
    facts, and DRF's work per field was about a tenth of a recall's CPU in the web process.
    tests/test_fact_out.py keeps the two equal."""
    return {
        "id": fact.pk,
        "kind": str(fact.kind),
        "content": str(fact.content),
        "scope": str(fact.scope),
        "session_id": str(fact.session_id),
        "position": fact.position,
        "speaker": str(fact.speaker),
        "category": str(fact.category),
        "tags": [str(tag) for tag in fact.tags],
        "metadata": {str(key): value for key, value in fact.metadata.items()},
        "trust_score": float(fact.trust_score),
        "helpful_count": fact.helpful_count,
        "unhelpful_count": fact.unhelpful_count,
        "retrieval_count": fact.retrieval_count,
        "last_retrieved_at": _stamp(fact.last_retrieved_at),
        "importance": float(fact.importance),
        "pinned": bool(fact.pinned),
        "mention_count": fact.mention_count,
        "status": str(fact.status),
        "superseded_by": fact.superseded_by_id,
        "embedded": bool(fact.embedding_model),
        "created_by": str(fact.created_by),
        "created_at": _stamp(fact.created_at),
        "updated_at": _stamp(fact.updated_at),
    }


class EntityRefOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    type = serializers.ChoiceField(choices=EntityType.choices)


class FactDetailOut(FactOut):
    entities = EntityRefOut(many=True, help_text="the people, places and names it mentions")


class FactPageOut(serializers.Serializer):
    results = FactOut(many=True)
    next_cursor = serializers.CharField(
        allow_null=True, help_text="pass as `cursor` for the next page; null on the last page"
    )


class FactListQuery(StrictSerializer):
    scope = ScopeText(required=False, help_text="this scope and everything under it")
    kind = serializers.ChoiceField(choices=Kind.choices, required=False)
    category = serializers.ChoiceField(choices=Category.choices, required=False)
    status = serializers.ChoiceField(
        choices=STATUS_FILTER, default=Status.ACTIVE, help_text="`all` for every status"
    )
    trust_min = serializers.FloatField(required=False, min_value=0, max_value=1)
    trust_max = serializers.FloatField(required=False, min_value=0, max_value=1)
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    limit = serializers.IntegerField(default=50, min_value=1, max_value=MAX_PAGE)
    cursor = serializers.CharField(required=False, max_length=MAX_CURSOR_CHARS)
    order = serializers.ChoiceField(
        choices=list(inputs.FACT_ORDERS.items()),
        default="newest",
    )


class PageQuery(StrictSerializer):
    status = serializers.ChoiceField(choices=STATUS_FILTER, default=Status.ACTIVE)
    limit = serializers.IntegerField(default=50, min_value=1, max_value=MAX_PAGE)
    cursor = serializers.CharField(required=False, max_length=MAX_CURSOR_CHARS)


class FactCreateIn(StrictSerializer):
    content = serializers.CharField(max_length=inputs.MAX_CONTENT_CHARS, trim_whitespace=True)
    kind = serializers.ChoiceField(choices=Kind.choices, default=Kind.FACT)
    scope = ScopeText(required=False, allow_blank=True)
    category = serializers.ChoiceField(choices=Category.choices, required=False)
    tags = serializers.ListField(
        child=serializers.CharField(max_length=inputs.MAX_TAG_CHARS),
        required=False,
        max_length=inputs.MAX_TAGS,
    )
    session_id = serializers.CharField(
        required=False, allow_blank=True, max_length=inputs.MAX_SESSION_ID_CHARS
    )
    position = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=inputs.MAX_POSITION,
        help_text="a turn's place in its session; omitted: after the last one",
    )  # fmt: skip
    speaker = serializers.CharField(
        required=False, allow_blank=True, max_length=inputs.MAX_SPEAKER_CHARS
    )
    metadata = serializers.DictField(child=serializers.JSONField(), required=False)
    trust = serializers.FloatField(
        required=False, allow_null=True, min_value=0, max_value=1,
        help_text="starting trust; omitted: the tenant's default_trust",
    )  # fmt: skip
    created_at = serializers.DateTimeField(required=False, help_text="when it was said or learnt")
    pin = serializers.BooleanField(
        required=False, source="pinned",
        help_text="always remember: first among the known facts, never archived by retention",
    )  # fmt: skip


class FactCreatedOut(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=ADD_STATUSES,
        help_text="added; exists (the same fact was there: nothing changed); restored (a "
        "removed or archived copy came back); joined (a fact of the same scope already said "
        "this: it is returned, counted once more, with the new tags and entities)",
    )
    fact = FactOut()
    similarity = serializers.FloatField(
        required=False, help_text="joined: the cosine of the new text to the fact it joined"
    )


class FactUpdateIn(StrictSerializer):
    content = serializers.CharField(required=False, max_length=inputs.MAX_CONTENT_CHARS)
    category = serializers.ChoiceField(choices=Category.choices, required=False)
    tags = serializers.ListField(
        child=serializers.CharField(max_length=inputs.MAX_TAG_CHARS),
        required=False,
        max_length=inputs.MAX_TAGS,
    )
    scope = ScopeText(required=False, allow_blank=True)
    trust_delta = serializers.FloatField(
        required=False, min_value=-1, max_value=1, help_text="added to trust, clamped to [0, 1]"
    )
    pin = serializers.BooleanField(
        required=False, source="pinned",
        help_text="true: always remember (importance 1, never archived); false: unpin",
    )  # fmt: skip


class FeedbackIn(StrictSerializer):
    helpful = serializers.BooleanField(help_text="true: trust +0.05; false: trust -0.10")


class FeedbackOut(serializers.Serializer):
    fact_id = serializers.IntegerField()
    old_trust = serializers.FloatField()
    new_trust = serializers.FloatField()
    helpful_count = serializers.IntegerField()
    unhelpful_count = serializers.IntegerField()


class PurgeIn(StrictSerializer):
    reason = serializers.CharField(
        max_length=inputs.MAX_PURGE_REASON_CHARS, help_text="kept in the audit trail"
    )


class PurgeOut(serializers.Serializer):
    purged = serializers.IntegerField(help_text="the id of the fact deleted for good")


class EventOut(serializers.Serializer):
    id = serializers.IntegerField()
    action = serializers.CharField()
    actor = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    at = serializers.DateTimeField()


class ImportLineOut(serializers.Serializer):
    line = serializers.IntegerField(help_text="1-based line number in the body")
    status = serializers.ChoiceField(choices=IMPORT_STATUSES)
    fact_id = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField(allow_null=True)


class ImportReportOut(serializers.Serializer):
    counts = serializers.DictField(child=serializers.IntegerField())
    lines = ImportLineOut(many=True)


def _status(value: str) -> str | None:
    return None if value == _ALL else value


# -- facts ------------------------------------------------------------------------------------


class FactViewSet(TenantViewSet):
    within_scope_limit = True
    needs = {"purge": Need.MANAGE}

    @extend_schema(
        summary="List facts, newest first, with filters",
        description="Keyset pages: pass `next_cursor` back as `cursor` (stays fast however "
        "deep). Only active facts unless `status` says otherwise.",
        parameters=[FactListQuery],
        responses={200: FactPageOut},
        examples=[
            OpenApiExample(
                "a page", value={"results": [_FACT], "next_cursor": _CURSOR}, response_only=True
            )
        ],
        tags=["facts"],
    )
    def list(self, request: Request, tenant: str | None = None) -> Response:
        query = validated(FactListQuery, request.query_params)
        result = fact_list(
            tenant=self.tenant,
            scope_prefix=scope_checked(query.get("scope")) or None,
            category=query.get("category"),
            kind=query.get("kind"),
            status=_status(query["status"]),
            trust_min=query.get("trust_min"),
            trust_max=query.get("trust_max"),
            created_after=query.get("created_after"),
            created_before=query.get("created_before"),
            limit=query["limit"],
            cursor=query.get("cursor"),
            order=query["order"],
        )
        return page(FactOut(result.facts, many=True).data, result.next_cursor)

    @extend_schema(
        summary="Store a fact or a conversation turn",
        description="The same fact again (same scope, same text up to case and spacing) "
        "returns the stored one (200, `exists`); a removed or archived copy comes back (200, "
        "`restored`); a fact whose meaning the scope holds already (its vector at least the "
        "tenant's `duplicate_threshold` close, nothing disagreeing) joins it (200, `joined`, "
        "with the fact joined). A fact that disagrees with a near one of its scope is stored "
        "(201) and the conflict recorded at once. Turns are never joined. Full text finds it "
        "at once; the vector channel once a worker embedded it.",
        request=FactCreateIn,
        responses={201: FactCreatedOut, 200: FactCreatedOut},
        examples=[
            OpenApiExample(
                "a preference",
                value={"content": "Alice prefers green tea over coffee in the morning",
                       "scope": "user:alice", "category": "user_pref", "tags": ["drinks"]},
                request_only=True,
            ),
            OpenApiExample(
                "a turn",
                value={"content": "Can we move the demo to Friday?", "kind": "turn",
                       "session_id": "2026-12-02-standup", "speaker": "Bob"},
                request_only=True,
            ),
            OpenApiExample("added", value={"status": "added", "fact": _FACT}, response_only=True),
        ],
        tags=["facts"],
    )  # fmt: skip
    def create(self, request: Request, tenant: str | None = None) -> Response:
        draft = inputs.fact_draft(validated(FactCreateIn, request.data))
        result = services.fact_add(tenant=self.tenant, draft=draft, actor=self.actor)
        code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        body: dict[str, Any] = {"status": result.status, "fact": FactOut(result.fact).data}
        if result.similarity is not None:
            body["similarity"] = result.similarity
        return Response(body, status=code)

    @extend_schema(
        summary="Read a fact, with the entities it mentions",
        responses={200: FactDetailOut},
        examples=[
            OpenApiExample(
                "a fact",
                value=_FACT | {"entities": [{"id": 5, "name": "Alice", "type": "person"}]},
                response_only=True,
            )
        ],
        tags=["facts"],
    )
    def retrieve(self, request: Request, fact_id: int, tenant: str | None = None) -> Response:
        fact = fact_get(tenant=self.tenant, fact_id=fact_id)
        entities = fact_entities(tenant=self.tenant, fact_id=fact.pk)
        return Response(FactOut(fact).data | {"entities": EntityRefOut(entities, many=True).data})

    @extend_schema(
        summary="Change a fact",
        description="Only the fields given change; the audit trail records exactly those. A "
        "new text is re-embedded.",
        request=FactUpdateIn,
        responses={200: FactOut},
        examples=[
            OpenApiExample(
                "correct it",
                value={"content": "Alice prefers jasmine tea in the morning"},
                request_only=True,
            ),
            OpenApiExample("trust less", value={"trust_delta": -0.2}, request_only=True),
            OpenApiExample("always remember", value={"pin": True}, request_only=True),
            OpenApiExample("changed", value=_FACT, response_only=True),
        ],
        tags=["facts"],
    )
    def partial_update(self, request: Request, fact_id: int, tenant: str | None = None) -> Response:
        changes = inputs.fact_changes(validated(FactUpdateIn, request.data))
        fact = services.fact_update(
            tenant=self.tenant, fact_id=fact_id, changes=changes, actor=self.actor
        )
        return Response(FactOut(fact).data)

    @extend_schema(
        summary="Remove a fact (soft: it leaves recall, its history stays)",
        responses={200: FactOut},
        examples=[
            OpenApiExample("removed", value=_FACT | {"status": "removed"}, response_only=True)
        ],
        tags=["facts"],
    )
    def destroy(self, request: Request, fact_id: int, tenant: str | None = None) -> Response:
        fact = services.fact_remove(tenant=self.tenant, fact_id=fact_id, actor=self.actor)
        return Response(FactOut(fact).data)

    @extend_schema(
        summary="Restore a removed or archived fact",
        request=None,
        responses={200: FactOut},
        examples=[OpenApiExample("restored", value=_FACT, response_only=True)],
        tags=["facts"],
    )
    def restore(self, request: Request, fact_id: int, tenant: str | None = None) -> Response:
        fact = services.fact_restore(tenant=self.tenant, fact_id=fact_id, actor=self.actor)
        return Response(FactOut(fact).data)

    @extend_schema(
        summary="Delete a fact for good (signed-in admins)",
        description="Its links and feedback go too. The audit trail keeps that it existed, "
        "who purged it and why, not its text.",
        request=PurgeIn,
        responses={200: PurgeOut},
        examples=[
            OpenApiExample("a request", value={"reason": "GDPR erasure request #1182"},
                           request_only=True),
            OpenApiExample("purged", value={"purged": 42}, response_only=True),
        ],
        tags=["facts"],
    )  # fmt: skip
    def purge(self, request: Request, fact_id: int, tenant: str | None = None) -> Response:
        reason = inputs.purge_reason(validated(PurgeIn, request.data)["reason"])
        purged = services.fact_purge(
            tenant=self.tenant, fact_id=fact_id, actor=self.actor, reason=reason
        )
        return Response({"purged": purged})

    @extend_schema(
        summary="Rate a fact: helpful or not",
        request=FeedbackIn,
        responses={200: FeedbackOut},
        examples=[
            OpenApiExample("helpful", value={"helpful": True}, request_only=True),
            OpenApiExample(
                "rated",
                value={"fact_id": 42, "old_trust": 0.5, "new_trust": 0.55, "helpful_count": 1,
                       "unhelpful_count": 0},
                response_only=True,
            ),
        ],
        tags=["facts"],
    )  # fmt: skip
    def feedback(self, request: Request, fact_id: int, tenant: str | None = None) -> Response:
        helpful = inputs.helpful(validated(FeedbackIn, request.data)["helpful"])
        result = services.fact_feedback(
            tenant=self.tenant, fact_id=fact_id, helpful=helpful, actor=self.actor
        )
        return Response(vars(result))

    @extend_schema(
        summary="A fact's history: every change, oldest first",
        description="Also after the fact was purged.",
        responses={200: EventOut(many=True)},
        examples=[
            OpenApiExample(
                "history",
                value=[{"id": 900, "action": "create", "actor": "apikey:7:hermes-research",
                        "before": None, "after": {"content": "Alice prefers green tea"},
                        "at": "2026-12-01T09:30:00Z"}],
                response_only=True,
            )
        ],
        tags=["facts"],
    )  # fmt: skip
    def history(self, request: Request, fact_id: int, tenant: str | None = None) -> Response:
        events = fact_history(tenant=self.tenant, fact_id=fact_id)
        return Response(EventOut(events, many=True).data)


class FactImportViewSet(TenantViewSet):
    within_scope_limit = True
    parser_classes = [JSONLinesParser, JSONLParser]

    @property
    def max_body_bytes(self) -> int:  # type: ignore[override]
        return settings.MNEMOSYNE_API_MAX_IMPORT_BYTES

    @extend_schema(
        summary="Import facts from JSON Lines, with a report per line",
        description="One JSON object per line, with the fields of `POST facts` (`content` "
        "required). A bad line is reported with its field and skipped; the others are "
        f"stored; blank lines are ignored. At most {services.MAX_IMPORT_LINES} lines.",
        request={
            "application/x-ndjson": OpenApiTypes.STR,
            "application/jsonl": OpenApiTypes.STR,
        },
        responses={200: ImportReportOut},
        examples=[
            OpenApiExample(
                "two lines",
                value='{"content": "Bob is allergic to peanuts", "scope": "user:bob"}\n'
                '{"content": "", "scope": "user:bob"}\n',
                request_only=True,
                media_type="application/x-ndjson",
            ),
            OpenApiExample(
                "report",
                value={
                    "counts": {"added": 1, "exists": 0, "restored": 0, "error": 1},
                    "lines": [
                        {"line": 1, "status": "added", "fact_id": 43, "field": None,
                         "message": None},
                        {"line": 2, "status": "error", "fact_id": None, "field": "content",
                         "message": "must not be empty"},
                    ],
                },
                response_only=True,
            ),
        ],
        tags=["facts"],
    )  # fmt: skip
    def create(self, request: Request, tenant: str | None = None) -> Response:
        body = request.data if isinstance(request.data, str) else ""
        # JSON Lines ends lines with \n only: splitlines() would also cut at U+2028 and
        # friends, which JSON allows unescaped inside a string.
        lines = body.split("\n")
        report = services.fact_import(tenant=self.tenant, lines=lines, actor=self.actor)
        return Response({"counts": report.counts, "lines": [vars(line) for line in report.lines]})
