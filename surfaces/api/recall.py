"""REST endpoints of retrieval: hybrid recall and the assembled context block."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agentspec.limits import (
    MAX_BUDGET,
    MAX_METADATA_FILTERS,
    MAX_SCOPE_CHARS,
    MAX_SCOPES,
    MAX_TIME_CHARS,
    MIN_BUDGET,
)
from facts.models import Category, Kind
from retrieval.context import context_cached, retrievals_record
from retrieval.floor import FLOOR
from retrieval.inputs import CHANNELS, MAX_K, MAX_QUERY_CHARS, recall_query, scopes_checked
from retrieval.latency import recall_latency_note
from retrieval.search import recall_search
from surfaces.api.facts import FactOut, fact_out
from surfaces.base.strict import ScopeText, StrictSerializer
from surfaces.base.viewsets import Need, TenantViewSet
from tenants.errors import InvalidInput
from tenants.inputs import scope_checked


class RecallIn(StrictSerializer):
    query = serializers.CharField(max_length=MAX_QUERY_CHARS, help_text="what to remember")
    k = serializers.IntegerField(default=10, min_value=1, max_value=MAX_K)
    scope = ScopeText(required=False, allow_blank=True, help_text="only this scope and below")
    kind = serializers.ChoiceField(choices=Kind.choices, required=False, allow_null=True)
    category = serializers.ChoiceField(choices=Category.choices, required=False, allow_null=True)
    min_trust = serializers.FloatField(
        required=False, allow_null=True, min_value=0, max_value=1,
        help_text="leave out facts trusted less; omitted: the tenant's min_trust",
    )  # fmt: skip
    channels = serializers.ListField(
        child=serializers.ChoiceField(choices=CHANNELS), required=False, allow_null=True,
        min_length=1, max_length=len(CHANNELS),
        help_text="fts (full text), vec (vector), entity; omitted: the tenant's weighted ones",
    )  # fmt: skip
    scopes = serializers.ListField(
        child=serializers.CharField(allow_blank=True, max_length=MAX_SCOPE_CHARS),
        required=False, max_length=MAX_SCOPES,
        help_text="instead of scope: any of these scopes (each with what lies under it), "
        "e.g. [\"user:alice\", \"team:infra\"]",
    )  # fmt: skip
    scope_exact = serializers.BooleanField(
        required=False, help_text="only the scope(s) themselves, not the scopes under them"
    )
    metadata = serializers.DictField(
        required=False,
        help_text="only facts whose metadata has these top-level fields with these values "
        f"(text, numbers, true, false or null; at most {MAX_METADATA_FILTERS} fields)",
    )
    since = serializers.CharField(
        required=False, max_length=MAX_TIME_CHARS,
        help_text="only facts created at or after this time: ISO 8601, or a span back from "
        "now (30m, 24h, 7d, 2w)",
    )  # fmt: skip
    until = serializers.CharField(
        required=False, max_length=MAX_TIME_CHARS,
        help_text="only facts created before this time (the same forms as since)",
    )  # fmt: skip
    explain = serializers.BooleanField(
        default=False, help_text="add each hit's per-channel scores and factors"
    )


SCORE_HELP = (
    "The hit's rank score among this query's hits, 0 or more (usually below 2): each channel's "
    "score min-max normalised over the query's candidates, weighted by the tenant, plus the "
    "lifts of turns, times trust and decay. It orders one query's hits; it does not say whether "
    "a hit is relevant (the best hit of any query scores high): `relevance` does."
)
RELEVANCE_HELP = (
    "The relevance floor's probability (0 to 1) that the hit is a memory the query asks about, "
    "from absolute evidence: vector similarity, the share and rarity of the query's words it "
    "matches, the entities, and whether the query names someone no memory mentions "
    "(docs/relevance-floor.md)."
)
WEAK_HELP = (
    f"true when `relevance` is below the floor ({FLOOR}), or when the query names someone or "
    "something no memory of the tenant mentions: the context block, prefetch and MCP's "
    "memory_context leave such a hit out; recall returns it, marked."
)


class ExplainOut(serializers.Serializer):
    score = serializers.FloatField(help_text=SCORE_HELP)
    channels = serializers.DictField(
        child=serializers.FloatField(), help_text="each channel's normalised score"
    )
    factors = serializers.DictField(
        child=serializers.FloatField(), help_text="trust, decay, and lifts of turns"
    )
    relevance = serializers.FloatField(help_text=RELEVANCE_HELP)
    signals = serializers.DictField(
        child=serializers.FloatField(),
        help_text="the relevance floor's inputs: vec, fts_cover, fts_mass, entity, fused, "
        "query_mass, unknown_name",
    )


class RecallHitOut(serializers.Serializer):
    score = serializers.FloatField(help_text=SCORE_HELP)
    relevance = serializers.FloatField(min_value=0, max_value=1, help_text=RELEVANCE_HELP)
    weak = serializers.BooleanField(help_text=WEAK_HELP)
    fact = FactOut()
    explain = ExplainOut(required=False, help_text="present when asked for")


class RecallOut(serializers.Serializer):
    results = RecallHitOut(many=True)
    timings_ms = serializers.DictField(child=serializers.FloatField())


class ContextIn(StrictSerializer):
    query = serializers.CharField(
        required=False, allow_blank=True, max_length=MAX_QUERY_CHARS,
        help_text="the user's message; its recall results fill the last level",
    )  # fmt: skip
    scope = ScopeText(required=False, allow_blank=True, help_text="only this scope and below")
    scopes = serializers.ListField(
        child=serializers.CharField(allow_blank=True, max_length=MAX_SCOPE_CHARS),
        required=False, max_length=MAX_SCOPES,
        help_text="instead of scope: any of these scopes (each with what lies under it)",
    )  # fmt: skip
    session_id = serializers.CharField(required=False, allow_blank=True, max_length=128)
    hot_restore = serializers.BooleanField(
        default=False, help_text="first turn of a resumed session: start with its last turns"
    )
    important = serializers.BooleanField(default=True, help_text="include the key facts level")
    budget = serializers.IntegerField(
        required=False, allow_null=True, min_value=MIN_BUDGET, max_value=MAX_BUDGET,
        help_text="tokens; omitted: the tenant's token_budget",
    )  # fmt: skip


class ContextOut(serializers.Serializer):
    text = serializers.CharField(help_text="the block an agent reads before its turn")
    tokens = serializers.IntegerField()
    levels = serializers.DictField(
        child=serializers.ListField(child=serializers.IntegerField()),
        help_text="fact ids per level: recent, important, relevant",
    )


_HIT = {
    "score": 0.41,
    "relevance": 0.87,
    "weak": False,
    "fact": {
        "id": 42, "kind": "fact", "content": "Alice prefers green tea over coffee in the morning",
        "scope": "user:alice", "session_id": "", "position": None, "speaker": "",
        "category": "user_pref", "tags": [], "metadata": {}, "trust_score": 0.55,
        "helpful_count": 1, "unhelpful_count": 0, "retrieval_count": 3,
        "last_retrieved_at": None, "importance": 0.4, "status": "active", "superseded_by": None,
        "embedded": True, "created_by": "apikey:7:hermes-research",
        "created_at": "2026-12-01T09:30:00Z", "updated_at": "2026-12-02T10:00:00Z",
    },
    "explain": {
        "score": 0.41, "channels": {"fts": 1.0, "vec": 0.74},
        "factors": {"trust": 0.55, "decay": 1.0}, "relevance": 0.87,
        "signals": {"vec": 0.31, "fts_cover": 0.62, "fts_mass": 0.41, "entity": 0.0,
                    "fused": 1.0, "query_mass": 0.93, "unknown_name": 0.0},
    },
}  # fmt: skip


class RecallViewSet(TenantViewSet):
    within_scope_limit = True
    reads_replica = True
    needs = {"create": Need.READ}  # a POST that reads: the query does not fit in a URL

    @extend_schema(
        summary="Recall: the k best memories for a query (hybrid search)",
        description="Full text (BM25), vectors and entities, fused with the tenant's weights, "
        "times trust (and decay, where the tenant set a half-life). Only active facts; "
        "every hit has its `relevance` and is `weak` below the relevance floor (the context "
        "block leaves weak hits out; recall returns them); "
        f"queries up to {MAX_QUERY_CHARS} characters. With an API key, the facts returned "
        "count as retrieved (retention's 'not retrieved for N days').",
        request=RecallIn,
        responses={200: RecallOut},
        examples=[
            OpenApiExample(
                "a question",
                value={"query": "what does Alice drink?", "k": 5, "scope": "user:alice",
                       "explain": True},
                request_only=True,
            ),
            OpenApiExample(
                "hits",
                value={"results": [_HIT], "timings_ms": {"embed_query": 6.4, "total": 31.0}},
                response_only=True,
            ),
        ],
        tags=["recall"],
    )  # fmt: skip
    def create(self, request: Request, tenant: str | None = None) -> Response:
        data = RecallIn(data=request.data)
        data.is_valid(raise_exception=True)
        options = dict(data.validated_data)
        explain = options.pop("explain")
        result = recall_search(tenant=self.tenant, query=recall_query({**options}))
        hits = []
        for hit in result.hits:
            row = {
                "score": round(hit.score, 6),
                "relevance": round(hit.relevance, 6),
                "weak": hit.weak,
                "fact": fact_out(hit.fact),
            }
            if explain:
                row["explain"] = hit.explain()
            hits.append(row)
        if self.access.is_key:  # an agent was shown these; a person looking is not a retrieval
            retrievals_record(tenant=self.tenant, fact_ids=[h.fact.pk for h in result.hits])
            recall_latency_note(tenant=self.tenant, ms=result.timings_ms["total"])
        timings = {name: round(ms, 3) for name, ms in result.timings_ms.items()}
        return Response({"results": hits, "timings_ms": timings})


class ContextViewSet(TenantViewSet):
    within_scope_limit = True
    reads_replica = True
    needs = {"create": Need.READ}

    @extend_schema(
        summary="The context block an agent reads before a turn",
        description="Three levels within the token budget: the last turns of a resumed "
        "session (`hot_restore`), the tenant's most important facts, the query's recall "
        "results above the relevance floor (small talk gets none); deduplicated. Cached per "
        "(tenant, scope, query) for the tenant's prefetch "
        "TTL; any write to the tenant refreshes it.",
        request=ContextIn,
        responses={200: ContextOut},
        examples=[
            OpenApiExample(
                "before a turn",
                value={"query": "what does Alice drink?", "session_id": "2026-12-02-standup"},
                request_only=True,
            ),
            OpenApiExample(
                "block",
                value={
                    "text": "## Known facts\n- Alice prefers green tea over coffee in the "
                    "morning (user_pref)",
                    "tokens": 21,
                    "levels": {"important": [42], "relevant": []},
                },
                response_only=True,
            ),
        ],
        tags=["recall"],
    )
    def create(self, request: Request, tenant: str | None = None) -> Response:
        data = ContextIn(data=request.data)
        data.is_valid(raise_exception=True)
        options = dict(data.validated_data)
        scopes = scopes_checked(options.get("scopes"))
        if scopes and options.get("scope"):
            raise InvalidInput("scopes", "give scope or scopes, not both")
        block = context_cached(
            tenant=self.tenant,
            query=options.get("query") or None,
            scope=scope_checked(options.get("scope")) or None,
            scopes=scopes,
            session_id=options.get("session_id") or None,
            hot_restore=options["hot_restore"],
            important=options["important"],
            budget=options.get("budget"),
        )
        return Response({"text": block.text, "tokens": block.tokens, "levels": block.levels})
