"""/api/v1/agent/: the endpoints a Hermes profile uses, shaped for its loop.

One request per step of a turn: who the key is (`whoami`, checked by `mnemosyne hermes install`),
the system prompt's block, the prefetch before each turn (with the resumed session's last turns
on its first), the buffered writes in batches with their idempotency keys, the `fact_store` and
`fact_feedback` tool calls, and the end of a session (auto-extraction). API keys only; the
tenant is the key's, and the profile's `scope` stays inside the key's scope limit.

A database that does not answer is a 503 with a reason and Retry-After (the API's exception
handler; the profile keeps its writes and sends them again), never a 500.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agentspec.limits import MAX_SCOPES
from agenttools import hermes as agent_tools
from agenttools import writes as agent_writes
from agenttools.core import Binding, Refused, read_scopes_of
from facts import inputs as fact_inputs
from facts.inputs import clean_scope
from facts.selectors.facts import fact_count
from retrieval.context import IMPORTANT_SHARE, context_cached
from retrieval.inputs import MAX_QUERY_CHARS
from surfaces.base.auth import ApiKeyAuthentication
from surfaces.base.errors import error_body
from surfaces.base.strict import ScopeText, StrictSerializer
from surfaces.base.viewsets import Need, TenantViewSet
from tenants.errors import InvalidInput
from tenants.inputs import SETTING_BOUNDS

MAX_BATCH = 100
_TAGS = ["agent"]


def _setting(name: str) -> serializers.Field:
    """A tenant setting a profile may override, in the range the tenant's settings allow."""
    low, high, whole = SETTING_BOUNDS[name]
    if whole:
        return serializers.IntegerField(required=False, min_value=int(low), max_value=int(high))
    # Whole bounds written as such (0, not 0.0), as the API's schema has always stated them.
    low, high = (int(b) if float(b).is_integer() else b for b in (low, high))
    return serializers.FloatField(required=False, min_value=low, max_value=high)


class ProfileSettingsIn(StrictSerializer):
    """The profile's view of the tenant's recall settings (config.yaml); never saved."""

    token_budget = _setting("token_budget")
    min_trust = _setting("min_trust")
    half_life_days = _setting("half_life_days")
    weight_fts = _setting("weight_fts")
    weight_vec = _setting("weight_vec")
    weight_entity = _setting("weight_entity")


class ProfileIn(StrictSerializer):
    scope = ScopeText(
        required=False, allow_blank=True,
        help_text="the profile's scope (inside the key's scope limit); empty: the key's",
    )  # fmt: skip
    read_scopes = serializers.ListField(
        child=serializers.CharField(max_length=fact_inputs.MAX_SCOPE_CHARS), required=False,
        max_length=MAX_SCOPES,
        help_text="scopes the profile reads together (each inside the key's scope limit); "
        "omitted: its scope",
    )  # fmt: skip
    session_id = serializers.CharField(
        required=False, allow_blank=True, max_length=fact_inputs.MAX_SESSION_ID_CHARS
    )
    settings = ProfileSettingsIn(required=False)


class WhoAmIKeyOut(serializers.Serializer):
    prefix = serializers.CharField()
    name = serializers.CharField()


class KeyTenantOut(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()


class WhoAmIOut(serializers.Serializer):
    tenant = KeyTenantOut()
    key = WhoAmIKeyOut()
    scopes = serializers.ListField(child=serializers.CharField(), help_text="read, write")
    scope_prefix = serializers.CharField(help_text="the key's scope limit; empty: whole tenant")


class PromptOut(serializers.Serializer):
    text = serializers.CharField(help_text="the system prompt's memory block")
    tokens = serializers.IntegerField(help_text="tokens of its important facts")
    fact_ids = serializers.ListField(child=serializers.IntegerField())


class PrefetchIn(ProfileIn):
    query = serializers.CharField(max_length=MAX_QUERY_CHARS, help_text="the user's message")
    hot_restore = serializers.BooleanField(
        default=False, help_text="first turn of a resumed session: its last turns come first"
    )
    exclude = serializers.ListField(
        child=serializers.IntegerField(min_value=1), required=False, max_length=500,
        help_text="fact ids already in the system prompt",
    )  # fmt: skip
    prompt_tokens = serializers.IntegerField(
        required=False, default=0, min_value=0, max_value=32000,
        help_text="tokens the system prompt's block used; the rest of the budget is this block's",
    )  # fmt: skip


class PrefetchOut(serializers.Serializer):
    text = serializers.CharField(help_text="the <memory-context> block; empty when none")
    tokens = serializers.IntegerField()
    fact_ids = serializers.ListField(child=serializers.IntegerField())


class WriteIn(StrictSerializer):
    key = serializers.CharField(
        min_length=8, max_length=64, help_text="idempotency key: a re-sent key stores nothing new"
    )
    op = serializers.ChoiceField(choices=agent_writes.WRITE_OPS)
    payload = serializers.DictField(
        help_text="what the op stores: a turn, a fact, a Hermes memory-tool entry, a session end"
    )


class WritesIn(ProfileIn):
    writes = WriteIn(many=True, max_length=MAX_BATCH, allow_empty=False)  # type: ignore[call-arg]


class WriteResultOut(serializers.Serializer):
    key = serializers.CharField()
    status = serializers.ChoiceField(choices=["stored", "rejected"])
    error = serializers.CharField(required=False, help_text="why it was rejected")


class WritesOut(serializers.Serializer):
    results = WriteResultOut(many=True)


class ToolIn(ProfileIn):
    arguments = serializers.DictField(help_text="the tool call's arguments, as the model sent them")


class SessionEndIn(ProfileIn):
    key = serializers.CharField(min_length=8, max_length=64, help_text="idempotency key")
    said = serializers.ListField(
        child=serializers.CharField(allow_blank=True, max_length=100_000), max_length=1000,
        help_text="what the user said in the session",
    )  # fmt: skip


class SessionEndOut(serializers.Serializer):
    candidates = serializers.IntegerField(help_text="candidate facts found (stored once each)")


class AgentViewSet(TenantViewSet):
    """API keys only: an agent's requests, for the key's tenant."""

    authentication_classes = [ApiKeyAuthentication]
    within_scope_limit = True
    needs = {
        "whoami": Need.READ,
        "prompt": Need.READ,
        "prefetch": Need.READ,
        "writes": Need.WRITE,
        "session_end": Need.WRITE,
        "tool": Need.READ,
        "profile_import": Need.WRITE,
    }

    def _read(self, serializer_class: type[serializers.Serializer]) -> dict[str, Any]:
        data = serializer_class(data=self.request.data)
        data.is_valid(raise_exception=True)
        return dict(data.validated_data)

    def _binding(self, data: dict[str, Any]) -> Binding:
        key = self.access.key
        assert key is not None  # noqa: S101 - authentication_classes admit keys only
        # Under a key's scope limit, "" is the limit and a scope outside it is refused.
        scope = clean_scope(data.get("scope") or "")
        tenant = copy.copy(self.tenant)
        # The profile's overrides, seen by recall and context assembly; never saved.
        tenant.settings = {**tenant.settings, **(data.get("settings") or {})}
        binding = Binding.of_key(
            key,
            tenant=tenant,
            rights=frozenset(self.access.rights & {"read", "write"}),
            scope=scope,
            session_id=data.get("session_id") or "",
        )
        # Checked where they are read (recall, the blocks), so that a profile whose read_scopes
        # the key refuses still stores its turns.
        read = tuple(dict.fromkeys(data.get("read_scopes") or ()))
        return dataclasses.replace(binding, read_scopes=read) if read else binding

    @extend_schema(
        summary="Who this API key is: its tenant, name, rights and scope limit",
        description="`mnemosyne hermes install` checks a key with this before it writes "
        "anything into a profile.",
        request=None,
        responses={200: WhoAmIOut},
        examples=[
            OpenApiExample(
                "a write key",
                value={
                    "tenant": {"slug": "acme", "name": "Acme"},
                    "key": {"prefix": "28e558758b19", "name": "coder"},
                    "scopes": ["read", "write"],
                    "scope_prefix": "",
                },
                response_only=True,
            )
        ],  # fmt: skip
        tags=_TAGS,
    )
    def whoami(self, request: Request) -> Response:
        key = self.access.key
        assert key is not None  # noqa: S101
        return Response(
            {
                "tenant": {"slug": self.tenant.slug, "name": self.tenant.name},
                "key": {"prefix": key.prefix, "name": key.name},
                "scopes": sorted(self.access.rights & {"read", "write"}),
                "scope_prefix": key.scope_prefix or "",
            }
        )

    @extend_schema(
        summary="The system prompt's memory block: the team's most important facts",
        request=ProfileIn,
        responses={200: PromptOut},
        examples=[
            OpenApiExample(
                "the block",
                value={
                    "text": "# Mnemosyne memory\nLong-term memory of team Acme: 42 memories, "
                    "shared by its profiles. ...\n## Known facts\n- Alice prefers tea",
                    "tokens": 61,
                    "fact_ids": {"important": [7]},
                },
                response_only=True,
            )
        ],  # fmt: skip
        tags=_TAGS,
    )
    def prompt(self, request: Request) -> Response:
        binding = self._binding(self._read(ProfileIn))
        budget = int(binding.tenant.setting("token_budget"))
        lines = [
            "# Mnemosyne memory",
            f"Long-term memory of team {binding.tenant.name}"
            + (f" (scope {binding.scope})" if binding.scope else "")
            + f": {fact_count(tenant=binding.tenant)} memories, shared by its profiles. "
            "Relevant ones appear with each message. Use fact_store to search, probe entities, "
            "reason across them or add facts the team would expect you to remember; "
            "fact_feedback to rate a fact after using it.",
        ]
        block = context_cached(
            tenant=binding.tenant,
            scope=binding.scope,
            scopes=read_scopes_of(binding),
            important=True,
            budget=max(50, int(budget * IMPORTANT_SHARE)),
        )
        if block.text:
            lines.append(block.text)
        return Response(
            {"text": "\n".join(lines), "tokens": block.tokens, "fact_ids": block.fact_ids}
        )

    @extend_schema(
        summary="Prefetch: the memories for the user's message, before the turn",
        description="The query's hybrid recall as a context block within the token budget "
        "(less what the system prompt's block used); with `hot_restore`, the session's last "
        "turns first. Cached per tenant, scope and query until the tenant's next write.",
        request=PrefetchIn,
        responses={200: PrefetchOut},
        examples=[
            OpenApiExample(
                "first turn of a resumed session",
                value={"query": "where were we?", "session_id": "chat-1", "hot_restore": True},
                request_only=True,
            ),
            OpenApiExample(
                "the context block",
                value={
                    "text": "## Relevant memories\n- Alice prefers green tea over coffee",
                    "tokens": 14,
                    "fact_ids": {"relevant": [7]},
                },
                response_only=True,
            ),
        ],  # fmt: skip
        tags=_TAGS,
    )
    def prefetch(self, request: Request) -> Response:
        data = self._read(PrefetchIn)
        binding = self._binding(data)
        restore = data["hot_restore"] and bool(binding.session_id)
        budget = int(binding.tenant.setting("token_budget"))
        block = context_cached(
            tenant=binding.tenant,
            query=data["query"],
            scope=binding.scope,
            scopes=read_scopes_of(binding),
            session_id=binding.session_id if restore else None,
            hot_restore=restore,
            important=False,  # level 2 is in the system prompt already
            budget=max(50, budget - data["prompt_tokens"]),
            exclude=data.get("exclude") or (),
        )
        return Response({"text": block.text, "tokens": block.tokens, "fact_ids": block.fact_ids})

    @extend_schema(
        summary="Store a batch of buffered writes, in order, each exactly once",
        description="Ops: `turn` ({session_id, said: [[speaker, text], ...], at, scope, "
        "metadata}), `fact` ({content, category, tags, scope, metadata}), `memory` (a write of "
        "Hermes' built-in memory tool: {action, target, content, old_text}) and `session_end` "
        "({said: [texts], session_id}: auto-extraction). Each write's `key` goes with what it "
        "stores: sending it again stores nothing new. A write refused for its content is "
        "`rejected` with the reason; the others are stored.",
        request=WritesIn,
        responses={200: WritesOut},
        examples=[
            OpenApiExample(
                "one stored, one refused for its content",
                value={
                    "results": [
                        {"key": "t-1", "status": "stored"},
                        {"key": "f-2", "status": "rejected", "error": "content: must not be empty"},
                    ]
                },
                response_only=True,
            )
        ],  # fmt: skip
        tags=_TAGS,
    )
    def writes(self, request: Request) -> Response:
        data = self._read(WritesIn)
        binding = self._binding(data)
        results = []
        for write in data["writes"]:
            try:
                agent_writes.agent_write(
                    binding, op=write["op"], key=write["key"], payload=write["payload"]
                )
            except InvalidInput as problem:
                results.append({"key": write["key"], "status": "rejected", "error": str(problem)})
                continue
            results.append({"key": write["key"], "status": "stored"})
        return Response({"results": results})

    @extend_schema(
        summary="End of a session: store the candidate facts in what the user said",
        request=SessionEndIn,
        responses={200: SessionEndOut},
        examples=[OpenApiExample("two facts found", value={"candidates": 2}, response_only=True)],
        tags=_TAGS,
    )
    def session_end(self, request: Request) -> Response:
        data = self._read(SessionEndIn)
        binding = self._binding(data)
        found = agent_writes.session_end(binding, data["key"], data["said"], binding.session_id)
        return Response({"candidates": found})

    @extend_schema(
        summary="A tool call: fact_store or fact_feedback (the holographic provider's shapes)",
        description="The answer is the tool's result, as the model reads it. A bad argument is "
        "a 400 whose `error` names it (`limit: must be from 1 to 100`); a call the key may not "
        "make is a 403 with an `error`.",
        parameters=[
            OpenApiParameter("tool", str, OpenApiParameter.PATH, enum=sorted(agent_tools.HANDLERS))
        ],
        request=ToolIn,
        responses={200: OpenApiTypes.OBJECT},
        examples=[
            OpenApiExample(
                "fact_store add",
                value={"fact_id": 42, "status": "added"},
                response_only=True,
            )
        ],
        tags=_TAGS,
    )
    def tool(self, request: Request, tool: str) -> Response:
        data = self._read(ToolIn)
        binding = self._binding(data)
        handler = agent_tools.HANDLERS[tool]
        try:
            return Response(handler(binding, data["arguments"]))
        except InvalidInput as problem:
            message = f"{problem.field}: {problem.message}"
            body = error_body(message, code="invalid", field=problem.field)
            return Response({**body, "error": message}, status=400)
        except Refused as refusal:
            body = error_body(str(refusal), code="permission_denied")
            return Response({**body, "error": str(refusal)}, status=403)
