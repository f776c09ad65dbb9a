"""REST endpoints of the tenant's user dictionary and the relink of its facts."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from facts import curation, inputs, relink
from facts.models import EntityType, RelinkStatus
from facts.selectors.entities import dictionary_entries
from surfaces.api.examples import _JOB, _TERM, _answer
from surfaces.base.strict import StrictSerializer, validated
from surfaces.base.viewsets import Need, TenantViewSet


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
