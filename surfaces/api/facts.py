"""REST endpoints of facts, their import, entities and the audit log."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from facts import conflicts, curation, graph, inputs, relink, services
from facts.audit_chain import audit_chain_verify, audit_digest_take, chain_report_data, digest_parse
from facts.audit_export import audit_csv_rows, audit_jsonl_rows
from facts.inputs import MAX_ID
from facts.models import (
    Category,
    ConflictResolution,
    ConflictStatus,
    EntityType,
    Fact,
    Kind,
    RelinkStatus,
    Status,
)
from facts.selectors.audit import AUDIT_SOURCES, audit_actions, audit_event_iter, audit_event_list
from facts.selectors.entities import dictionary_entries, entity_fact_list, entity_get, entity_list
from facts.selectors.facts import fact_entities, fact_get, fact_history, fact_list
from facts.selectors.paging import MAX_CURSOR_CHARS, MAX_PAGE
from surfaces.base.downloads import bundle_download, download
from surfaces.base.parsers import JSONLinesParser, JSONLParser, TarParser
from surfaces.base.strict import ScopeText, StrictSerializer, validated
from surfaces.base.viewsets import Need, TenantViewSet, page
from tenants.errors import InvalidInput
from tenants.inputs import scope_checked
from tenants.services import audit_export_record

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


class EntityOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    type = serializers.ChoiceField(choices=EntityType.choices)
    aliases = serializers.ListField(child=serializers.CharField())
    fact_count = serializers.IntegerField(help_text="active facts that mention it")
    created_at = serializers.DateTimeField()


class EntityPageOut(serializers.Serializer):
    results = EntityOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class EntityListQuery(StrictSerializer):
    q = serializers.CharField(
        required=False,
        max_length=inputs.MAX_ENTITY_NAME_CHARS,
        help_text="part of a name, or an alias",
    )
    type = serializers.ChoiceField(choices=EntityType.choices, required=False)
    limit = serializers.IntegerField(default=50, min_value=1, max_value=MAX_PAGE)
    cursor = serializers.CharField(required=False, max_length=MAX_CURSOR_CHARS)


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


def _status(value: str) -> str | None:
    return None if value == _ALL else value


# -- examples ---------------------------------------------------------------------------------

_FACT = {
    "id": 42,
    "kind": "fact",
    "content": "Alice prefers green tea over coffee in the morning",
    "scope": "user:alice",
    "session_id": "",
    "position": None,
    "speaker": "",
    "category": "user_pref",
    "tags": ["drinks"],
    "metadata": {},
    "trust_score": 0.55,
    "helpful_count": 1,
    "unhelpful_count": 0,
    "retrieval_count": 3,
    "last_retrieved_at": "2026-12-02T10:00:00Z",
    "importance": 0.4,
    "pinned": False,
    "mention_count": 1,
    "status": "active",
    "superseded_by": None,
    "embedded": True,
    "created_by": "apikey:7:hermes-research",
    "created_at": "2026-12-01T09:30:00Z",
    "updated_at": "2026-12-02T10:00:00Z",
}
_ENTITY = {
    "id": 5, "name": "Alice", "type": "person", "aliases": ["ali"], "fact_count": 12,
    "created_at": "2026-12-01T09:30:00Z",
}  # fmt: skip
_AUDIT = {
    "source": "fact", "id": 901, "action": "feedback", "actor": "apikey:7:hermes-research",
    "fact_id": 42, "target": "", "before": {"trust_score": 0.5},
    "after": {"trust_score": 0.55, "helpful": True}, "at": "2026-12-02T10:00:00Z",
}  # fmt: skip
_CURSOR = "MjAyNi0xMi0wMVQwOTozMDowMCswMDowMHw0Mg=="


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


# -- bundles: a whole tenant out and in ------------------------------------------------------


class BundleExportQuery(StrictSerializer):
    scope = ScopeText(required=False, help_text="only this scope")
    since = serializers.DateTimeField(required=False, help_text="only facts changed since")


class BundleImportOut(serializers.Serializer):
    added = serializers.IntegerField()
    exists = serializers.IntegerField(help_text="already there: not added again")
    restored = serializers.IntegerField(help_text="archived here, active in the bundle: back")
    entities_added = serializers.IntegerField()
    vectors_kept = serializers.IntegerField(help_text="the bundle's model is the one served")
    to_embed = serializers.IntegerField(help_text="facts the workers embed anew")
    model = serializers.CharField(help_text="the embedding model of the bundle's vectors")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="records by type")


class BundleViewSet(TenantViewSet):
    """Export the tenant into a bundle (a tar of its three files) and import one."""

    needs = {"export": Need.PEOPLE, "create": Need.MANAGE}
    parser_classes = [TarParser]

    @property
    def max_body_bytes(self) -> int:  # type: ignore[override]
        return settings.MNEMOSYNE_API_MAX_BUNDLE_BYTES

    @extend_schema(
        summary="Export the tenant (or a scope) as a bundle",
        description="A tar of `bundle.dat` (compressed records), `bundle.idx` (offset, length "
        "and CRC32 per record) and `bundle.manifest.json` (format, tenant, model, counts, "
        "checksums): facts, entities, feedback, history and vectors. Streamed; audited.",
        parameters=[BundleExportQuery],
        responses={(200, "application/x-tar"): OpenApiTypes.BINARY},
        examples=[
            OpenApiExample(
                "a bundle",
                value="(a tar of bundle.dat, bundle.idx and bundle.manifest.json)",
                response_only=True,
                media_type="application/x-tar",
            )
        ],
        tags=["bundles"],
    )
    def export(self, request: Request, tenant: str | None = None) -> StreamingHttpResponse:

        query = validated(BundleExportQuery, request.query_params)
        return bundle_download(
            tenant=self.tenant,
            actor=self.actor,
            scope=scope_checked(query.get("scope")) or None,
            since=query.get("since"),
        )

    @extend_schema(
        summary="Import a bundle (admins)",
        description="The tar `export` gives (or an archive bundle's three files in a tar). "
        "Verified in full first: a damaged bundle is refused (400) naming the first bad record, "
        "and nothing is imported. All or nothing; importing twice adds nothing.",
        request={"application/x-tar": OpenApiTypes.BINARY},
        responses={200: BundleImportOut},
        examples=[
            OpenApiExample(
                "imported into another tenant",
                value={
                    "added": 120,
                    "exists": 0,
                    "restored": 0,
                    "entities_added": 14,
                    "vectors_kept": 120,
                    "to_embed": 0,
                    "model": "multilingual-e5-small-int8",
                    "counts": {"fact": 120, "entity": 14, "feedback": 9, "event": 131},
                },
                response_only=True,
            )
        ],  # fmt: skip
        tags=["bundles"],
    )
    def create(self, request: Request, tenant: str | None = None) -> Response:
        import shutil
        import tempfile
        from pathlib import Path

        from facts.bundles import BundleError
        from facts.transfer import bundle_from_tar, tenant_import

        if not hasattr(request.data, "read"):
            raise InvalidInput("bundle", "send the bundle as application/x-tar")
        folder = Path(tempfile.mkdtemp(prefix="mnemosyne-import-"))
        try:
            stem = bundle_from_tar(request.data, folder)
            summary = tenant_import(tenant=self.tenant, path=stem, actor=self.actor)
        except BundleError as error:
            raise InvalidInput("bundle", f"refused, nothing imported: {error}") from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return Response(BundleImportOut(summary).data)


# -- entities ---------------------------------------------------------------------------------


class EntityViewSet(TenantViewSet):
    @extend_schema(
        summary="List entities (people, places, organisations, names) by name",
        parameters=[EntityListQuery],
        responses={200: EntityPageOut},
        examples=[
            OpenApiExample("a page", value={"results": [_ENTITY], "next_cursor": None},
                           response_only=True)
        ],
        tags=["entities"],
    )  # fmt: skip
    def list(self, request: Request, tenant: str | None = None) -> Response:
        query = validated(EntityListQuery, request.query_params)
        result = entity_list(
            tenant=self.tenant,
            query=query.get("q"),
            type=query.get("type"),
            limit=query["limit"],
            cursor=query.get("cursor"),
        )
        return page(EntityOut(result.entities, many=True).data, result.next_cursor)

    @extend_schema(
        summary="Read an entity",
        responses={200: EntityOut},
        examples=[OpenApiExample("an entity", value=_ENTITY, response_only=True)],
        tags=["entities"],
    )
    def retrieve(self, request: Request, entity_id: int, tenant: str | None = None) -> Response:
        return Response(EntityOut(entity_get(tenant=self.tenant, entity_id=entity_id)).data)

    @extend_schema(
        summary="The facts that mention an entity, newest first",
        parameters=[PageQuery],
        responses={200: FactPageOut},
        examples=[
            OpenApiExample("a page", value={"results": [_FACT], "next_cursor": None},
                           response_only=True)
        ],
        tags=["entities"],
    )  # fmt: skip
    def facts(self, request: Request, entity_id: int, tenant: str | None = None) -> Response:
        query = validated(PageQuery, request.query_params)
        result = entity_fact_list(
            tenant=self.tenant,
            entity_id=entity_id,
            status=_status(query["status"]),
            limit=query["limit"],
            cursor=query.get("cursor"),
        )
        return page(FactOut(result.facts, many=True).data, result.next_cursor)


# -- entity curation, the graph, the dictionary ------------------------------------------------


class EntityUpdateIn(StrictSerializer):
    """A new name or type for an entity."""

    name = serializers.CharField(
        required=False, max_length=inputs.MAX_ENTITY_NAME_CHARS, help_text="the new name"
    )
    type = serializers.ChoiceField(choices=EntityType.choices, required=False)


class AliasIn(StrictSerializer):
    """An alias to add to an entity."""

    alias = serializers.CharField(max_length=inputs.MAX_ENTITY_NAME_CHARS)


class AliasQuery(StrictSerializer):
    """The alias to remove."""

    alias = serializers.CharField(
        max_length=inputs.MAX_ENTITY_NAME_CHARS, help_text="the alias to remove"
    )


class MergeIn(StrictSerializer):
    """The entity to merge into this one."""

    other_id = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, help_text="the entity merged into this one (deleted)"
    )


class MergeOut(serializers.Serializer):
    entity = EntityOut()
    merged_id = serializers.IntegerField()
    relinked_facts = serializers.IntegerField()


class SplitIn(StrictSerializer):
    """The alias that becomes an entity of its own."""

    alias = serializers.CharField(
        max_length=inputs.MAX_ENTITY_NAME_CHARS, help_text="the alias that becomes an entity"
    )
    type = serializers.ChoiceField(
        choices=EntityType.choices, required=False, help_text="default: the entity's type"
    )


class SplitOut(serializers.Serializer):
    entity = EntityOut()
    split = EntityOut(help_text="the new entity")
    relinked_facts = serializers.IntegerField()


class EntityEventOut(serializers.Serializer):
    id = serializers.IntegerField()
    entity_id = serializers.IntegerField()
    action = serializers.CharField(
        help_text="rename, retype, alias_add, alias_remove, merge, merged, split, split_from"
    )
    actor = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    at = serializers.DateTimeField()


class GraphHitOut(serializers.Serializer):
    fact = FactOut()
    score = serializers.FloatField()
    entities = serializers.ListField(
        child=serializers.CharField(), help_text="the entities that tie it to the question"
    )
    hops = serializers.IntegerField(help_text="1: names the entity; 2: through a neighbour")


class GraphPageOut(serializers.Serializer):
    results = GraphHitOut(many=True)


class RelatedQuery(StrictSerializer):
    """How far to walk from the entity, and how many facts to return."""

    hops = serializers.ChoiceField(choices=list(inputs.GRAPH_HOPS), default=2)
    limit = serializers.IntegerField(default=10, min_value=1, max_value=inputs.MAX_GRAPH_LIMIT)


class ReasonQuery(StrictSerializer):
    """The entities the facts must connect."""

    name = serializers.ListField(
        child=serializers.CharField(max_length=inputs.MAX_ENTITY_NAME_CHARS), min_length=1,
        max_length=inputs.MAX_GRAPH_NAMES,
        help_text="entity names (repeat the parameter): facts that involve all of them",
    )  # fmt: skip
    limit = serializers.IntegerField(default=10, min_value=1, max_value=inputs.MAX_GRAPH_LIMIT)


class DictionaryEntryOut(serializers.Serializer):
    term = serializers.CharField()
    type = serializers.ChoiceField(choices=EntityType.choices)
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()


class DictionaryIn(StrictSerializer):
    """A term of the tenant's dictionary."""

    term = serializers.CharField(
        max_length=inputs.MAX_TERM_CHARS, help_text="a project, product or person's name"
    )
    type = serializers.ChoiceField(choices=EntityType.choices, default=EntityType.OTHER)


class DictionaryQuery(StrictSerializer):
    """The term to remove from the dictionary."""

    term = serializers.CharField(max_length=inputs.MAX_TERM_CHARS)


class RelinkJobOut(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=RelinkStatus.choices)
    reason = serializers.CharField()
    total = serializers.IntegerField(help_text="facts to link")
    done = serializers.IntegerField(help_text="facts linked so far")
    percent = serializers.IntegerField()
    error = serializers.CharField()
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class DictionaryAddedOut(serializers.Serializer):
    entry = DictionaryEntryOut()
    relink = RelinkJobOut(help_text="the job that re-links the existing facts")


class RelinkStateOut(serializers.Serializer):
    job = RelinkJobOut(allow_null=True, help_text="the newest relink job; null: none yet")


_JOB = {
    "id": 3, "status": "running", "reason": "dictionary: Northstar", "total": 12000,
    "done": 4800, "percent": 40, "error": "", "created_by": "user:1:olivia",
    "created_at": "2026-12-02T10:00:00Z", "started_at": "2026-12-02T10:00:01Z",
    "finished_at": None,
}  # fmt: skip


_ENTITY_EVENT = {
    "id": 12, "entity_id": 5, "action": "merge", "actor": "user:1:olivia",
    "before": {"name": "老王", "aliases": []},
    "after": {"aliases": ["王总"], "merged": {"id": 9, "name": "王总", "type": "person",
              "aliases": []}, "relinked_facts": 4},
    "at": "2026-12-02T10:00:00Z",
}  # fmt: skip
_HITS = {"results": [{"fact": _FACT, "score": 0.55, "entities": ["Northstar"], "hops": 1}]}
_TERM = {"term": "北极星计划", "type": "product", "created_by": "user:1:olivia",
         "created_at": "2026-12-02T10:00:00Z"}  # fmt: skip
_CONFLICT = {
    "id": 7, "status": "open", "reason": "value", "score": 0.9,
    "fact_a": _FACT, "fact_b": _FACT | {"id": 43, "content": "Alice prefers coffee now"},
    "resolution": "", "note": "", "detected_by": "job:conflicts",
    "detected_at": "2026-12-02T10:00:00Z", "resolved_by": "", "resolved_at": None,
}  # fmt: skip


def _answer(name: str, value: Any) -> list[OpenApiExample]:
    return [OpenApiExample(name, value=value, response_only=True)]


def _entity_out(tenant: Any, entity_id: int) -> dict[str, Any]:
    return EntityOut(entity_get(tenant=tenant, entity_id=entity_id)).data


def _hits(hits: list[Any]) -> Response:
    return Response({"results": [
        {"fact": FactOut(h.fact).data, "score": round(h.score, 6), "entities": h.entities,
         "hops": h.hops}
        for h in hits
    ]})  # fmt: skip


class EntityCurationViewSet(EntityViewSet):
    """Reads of entities, and their curation: admins curate, every reader sees the results
    and the history."""

    needs = {
        "partial_update": Need.MANAGE, "alias_add": Need.MANAGE, "alias_remove": Need.MANAGE,
        "merge": Need.MANAGE, "split": Need.MANAGE,
    }  # fmt: skip

    @extend_schema(
        summary="Rename an entity or change its type (admins)",
        description="A new name keeps the old one as an alias, so facts that say it still "
        "link here. A name another entity answers to is refused: merge the two instead.",
        request=EntityUpdateIn,
        responses={200: EntityOut},
        tags=["entities"],
        examples=[
            *_answer("renamed", _ENTITY),
            OpenApiExample("rename", value={"name": "Wang Jianguo"}, request_only=True),
        ],
    )
    def partial_update(
        self, request: Request, entity_id: int, tenant: str | None = None
    ) -> Response:
        data = validated(EntityUpdateIn, request.data)
        if not data:
            raise InvalidInput("entity", "nothing to change: give name or type")
        if "name" in data:
            name = inputs.clean_entity_name("name", data["name"])
            curation.entity_rename(tenant=self.tenant, entity_id=entity_id, name=name,
                                   actor=self.actor)  # fmt: skip
        if "type" in data:
            kind = inputs.clean_entity_type(data["type"])
            curation.entity_set_type(tenant=self.tenant, entity_id=entity_id, type=kind,
                                     actor=self.actor)  # fmt: skip
        return Response(_entity_out(self.tenant, entity_id))

    @extend_schema(
        summary="Add an alias (admins)",
        description="Facts that say the alias link to this entity from now on. A name another "
        "entity already has is refused: merge the two entities instead.",
        request=AliasIn,
        responses={200: EntityOut},
        tags=["entities"],
        examples=[
            *_answer("the entity", _ENTITY),
            OpenApiExample("an alias", value={"alias": "王总"}, request_only=True),
        ],
    )
    def alias_add(self, request: Request, entity_id: int, tenant: str | None = None) -> Response:
        data = validated(AliasIn, request.data)
        alias = inputs.clean_entity_name("alias", data["alias"])
        curation.entity_alias_add(tenant=self.tenant, entity_id=entity_id, alias=alias,
                                  actor=self.actor)  # fmt: skip
        return Response(_entity_out(self.tenant, entity_id))

    @extend_schema(
        summary="Remove an alias (admins)",
        parameters=[AliasQuery],
        responses={200: EntityOut},
        tags=["entities"],
        examples=_answer("the entity", _ENTITY),
    )
    def alias_remove(self, request: Request, entity_id: int, tenant: str | None = None) -> Response:
        data = validated(AliasQuery, request.query_params)
        alias = inputs.clean_entity_name("alias", data["alias"])
        curation.entity_alias_remove(tenant=self.tenant, entity_id=entity_id, alias=alias,
                                     actor=self.actor)  # fmt: skip
        return Response(_entity_out(self.tenant, entity_id))

    @extend_schema(
        summary="Merge another entity into this one (admins)",
        description="The other entity's facts are linked to this one, its name and aliases "
        "become aliases here, and it is deleted. Both entities' histories record the merge.",
        request=MergeIn,
        responses={200: MergeOut},
        tags=["entities"],
        examples=[
            *_answer("merged", {"entity": _ENTITY, "merged_id": 9, "relinked_facts": 4}),
            OpenApiExample("merge", value={"other_id": 9}, request_only=True),
        ],
    )
    def merge(self, request: Request, entity_id: int, tenant: str | None = None) -> Response:
        data = validated(MergeIn, request.data)
        result = curation.entity_merge(tenant=self.tenant, entity_id=entity_id,
                                       other_id=data["other_id"], actor=self.actor)  # fmt: skip
        entity = _entity_out(self.tenant, result.entity.pk)
        return Response(
            {"entity": entity, "merged_id": result.merged_id, "relinked_facts": result.relinked}
        )

    @extend_schema(
        summary="Split an alias off into an entity of its own (admins)",
        description="Undoes a wrong merge: the facts whose text says the alias (and not the "
        "entity's other names) move to the new entity.",
        request=SplitIn,
        responses={200: SplitOut},
        tags=["entities"],
        examples=_answer(
            "split",
            {"entity": _ENTITY, "split": _ENTITY | {"id": 10, "name": "ali"}, "relinked_facts": 2},
        ),
    )
    def split(self, request: Request, entity_id: int, tenant: str | None = None) -> Response:
        data = validated(SplitIn, request.data)
        alias = inputs.clean_entity_name("alias", data["alias"])
        kind = inputs.optional_entity_type(data.get("type"))
        result = curation.entity_split(tenant=self.tenant, entity_id=entity_id, alias=alias,
                                       type=kind, actor=self.actor)  # fmt: skip
        return Response({"entity": _entity_out(self.tenant, result.entity.pk),
                         "split": _entity_out(self.tenant, result.split.pk),
                         "relinked_facts": result.relinked})  # fmt: skip

    @extend_schema(
        summary="An entity's curation history, newest first",
        description="Renames, types, aliases, merges and splits, with who and when; an "
        "entity merged away keeps its history under its old id.",
        responses={200: EntityEventOut(many=True)},
        tags=["entities"],
        examples=_answer("a merge", [_ENTITY_EVENT]),
    )
    def history(self, request: Request, entity_id: int, tenant: str | None = None) -> Response:
        events = curation.entity_history(tenant=self.tenant, entity_id=entity_id)
        return Response(EntityEventOut(events, many=True).data)

    @extend_schema(
        summary="What connects to an entity (one or two hops)",
        description="hops=1: the facts that name it together with other entities; hops=2 "
        "also the facts about those entities, weighted by how often each is named with it.",
        parameters=[RelatedQuery],
        responses={200: GraphPageOut},
        tags=["entities"],
        examples=_answer("hits", _HITS),
    )
    def related(self, request: Request, entity_id: int, tenant: str | None = None) -> Response:
        query = validated(RelatedQuery, request.query_params)
        return _hits(graph.entity_related(tenant=self.tenant, entity_id=entity_id,
                                          hops=inputs.graph_hops(query["hops"]),
                                          limit=inputs.graph_limit(query["limit"])))  # fmt: skip

    @extend_schema(
        summary="The facts that involve all of several entities",
        description="Facts linked to every entity named; when none links all, those linking "
        "the most, each saying which it links.",
        parameters=[ReasonQuery],
        responses={200: GraphPageOut},
        tags=["entities"],
        examples=_answer("hits", _HITS),
    )
    def reason(self, request: Request, tenant: str | None = None) -> Response:
        query = validated(ReasonQuery, {"name": request.query_params.getlist("name"),
                                     "limit": request.query_params.get("limit", 10)})  # fmt: skip
        return _hits(graph.entities_reason(tenant=self.tenant,
                                           names=inputs.entity_names("name", query["name"]),
                                           limit=inputs.graph_limit(query["limit"])))  # fmt: skip


class DictionaryViewSet(TenantViewSet):
    """The tenant's user dictionary: admins change it, every reader sees it."""

    needs = {"create": Need.MANAGE, "destroy": Need.MANAGE, "relink": Need.MANAGE}

    @extend_schema(
        summary="The user dictionary: names extraction takes as one entity",
        responses={200: DictionaryEntryOut(many=True)},
        tags=["entities"],
        examples=_answer("terms", [_TERM]),
    )
    def list(self, request: Request, tenant: str | None = None) -> Response:
        entries = dictionary_entries(tenant=self.tenant)
        return Response(DictionaryEntryOut(entries, many=True).data)

    @extend_schema(
        summary="Add a term to the user dictionary, or change its type (admins)",
        description="jieba and the English rules take the term as one name of this type from "
        "now on; a background job re-links the existing facts (see `relink`).",
        request=DictionaryIn,
        responses={200: DictionaryAddedOut},
        tags=["entities"],
        examples=[
            *_answer("added", {"entry": _TERM, "relink": _JOB | {"status": "queued", "done": 0}}),
            OpenApiExample(
                "a project", value={"term": "北极星计划", "type": "product"}, request_only=True
            ),
        ],
    )
    def create(self, request: Request, tenant: str | None = None) -> Response:
        data = validated(DictionaryIn, request.data)
        term, kind = inputs.clean_term(data["term"]), inputs.clean_entity_type(data["type"])
        entry, job = curation.dictionary_add(tenant=self.tenant, term=term, type=kind,
                                             actor=self.actor)  # fmt: skip
        return Response({"entry": DictionaryEntryOut(entry).data, "relink": RelinkJobOut(job).data})

    @extend_schema(
        summary="Remove a term from the user dictionary (admins)",
        parameters=[DictionaryQuery],
        responses={200: RelinkStateOut},
        tags=["entities"],
        examples=_answer("removed", {"job": _JOB | {"status": "queued", "done": 0}}),
    )
    def destroy(self, request: Request, tenant: str | None = None) -> Response:
        data = validated(DictionaryQuery, request.query_params)
        term = inputs.clean_term(data["term"])
        job = curation.dictionary_remove(tenant=self.tenant, term=term, actor=self.actor)
        return Response({"job": RelinkJobOut(job).data})

    @extend_schema(
        summary="Progress of re-linking facts to entities",
        description="The newest relink job: after a dictionary change, after the extractor "
        "changed, or started by an admin. `done` of `total` facts are linked anew.",
        responses={200: RelinkStateOut},
        tags=["entities"],
        examples=[OpenApiExample("running", value={"job": _JOB}, response_only=True)],
    )
    def relink_state(self, request: Request, tenant: str | None = None) -> Response:
        job = relink.relink_latest(tenant=self.tenant)
        return Response({"job": RelinkJobOut(job).data if job is not None else None})

    @extend_schema(
        summary="Re-link every fact to its entities now (admins)",
        request=None,
        responses={200: RelinkStateOut},
        tags=["entities"],
        examples=_answer("queued", {"job": _JOB | {"status": "queued", "done": 0}}),
    )
    def relink(self, request: Request, tenant: str | None = None) -> Response:
        job = relink.relink_start(tenant=self.tenant, actor=self.actor, reason="requested")
        return Response({"job": RelinkJobOut(job).data})


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
        result = conflicts.conflict_list(
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
        conflict = conflicts.conflict_get(tenant=self.tenant, conflict_id=conflict_id)
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
        fresh = conflicts.conflict_get(tenant=self.tenant, conflict_id=conflict.pk)
        return Response(ConflictOut(fresh).data)


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
