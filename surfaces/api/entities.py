"""REST endpoints of entities: reads, curation and the graph."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from facts import curation, graph, inputs
from facts.inputs import MAX_ID
from facts.models import EntityType
from facts.selectors.entities import entity_fact_list, entity_get, entity_list
from facts.selectors.paging import MAX_CURSOR_CHARS, MAX_PAGE
from surfaces.api.examples import _ENTITY, _ENTITY_EVENT, _FACT, _HITS, _answer
from surfaces.api.facts import FactOut, FactPageOut, PageQuery, _status
from surfaces.base.strict import StrictSerializer, validated
from surfaces.base.viewsets import Need, TenantViewSet, page
from tenants.errors import InvalidInput


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
