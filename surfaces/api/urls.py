"""/api/v1/: tenant endpoints under /api/v1/tenants/<slug>/ (people, and keys of that tenant)
and the same endpoints at /api/v1/ for API keys, whose tenant is the key's."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from csp.constants import NONCE, UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver, include, path, re_path
from django.views.decorators.cache import cache_control
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from agentspec import hermes as hermes_spec
from surfaces.api.agent import AgentViewSet
from surfaces.api.audit import AuditViewSet
from surfaces.api.bundles import BundleViewSet
from surfaces.api.conflicts import ConflictViewSet
from surfaces.api.dictionary import DictionaryViewSet
from surfaces.api.entities import EntityCurationViewSet, EntityViewSet
from surfaces.api.facts import FactImportViewSet, FactViewSet
from surfaces.api.keys import ApiKeyViewSet
from surfaces.api.members import MemberViewSet
from surfaces.api.profile_import import ProfileImportViewSet
from surfaces.api.recall import ContextViewSet, RecallViewSet
from surfaces.api.retention import RetentionViewSet
from surfaces.api.tenants import TenantDetailViewSet, TenantListView
from surfaces.base import converters as _converters  # noqa: F401 - registers id and username
from surfaces.base import schema as _schema  # noqa: F401 - registers the API-key scheme


def _fact_routes() -> list[URLPattern]:
    """Facts, their import and bundles."""
    fact = FactViewSet.as_view
    return [
        path("facts", fact({"get": "list", "post": "create"}), name="facts"),
        path("facts/import", FactImportViewSet.as_view({"post": "create"}), name="facts-import"),
        path("bundle/export", BundleViewSet.as_view({"get": "export"}), name="bundle-export"),
        path("bundle/import", BundleViewSet.as_view({"post": "create"}), name="bundle-import"),
        path(
            "facts/<id:fact_id>",
            fact({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
            name="fact",
        ),
        path("facts/<id:fact_id>/feedback", fact({"post": "feedback"}), name="fact-feedback"),
        path("facts/<id:fact_id>/history", fact({"get": "history"}), name="fact-history"),
        path("facts/<id:fact_id>/restore", fact({"post": "restore"}), name="fact-restore"),
        path("facts/<id:fact_id>/purge", fact({"post": "purge"}), name="fact-purge"),
    ]


def _entity_routes() -> list[URLPattern]:
    """Entities: the graph, curation and the dictionary."""
    curate = EntityCurationViewSet.as_view
    dictionary = DictionaryViewSet.as_view
    return [
        path("entities", EntityViewSet.as_view({"get": "list"}), name="entities"),
        path(
            "entities/<id:entity_id>",
            curate({"get": "retrieve", "patch": "partial_update"}),
            name="entity",
        ),
        path(
            "entities/<id:entity_id>/facts",
            EntityViewSet.as_view({"get": "facts"}),
            name="entity-facts",
        ),
        path(
            "entities/<id:entity_id>/aliases",
            curate({"post": "alias_add", "delete": "alias_remove"}),
            name="entity-aliases",
        ),
        path("entities/<id:entity_id>/merge", curate({"post": "merge"}), name="entity-merge"),
        path("entities/<id:entity_id>/split", curate({"post": "split"}), name="entity-split"),
        path("entities/<id:entity_id>/history", curate({"get": "history"}), name="entity-history"),
        path("entities/<id:entity_id>/related", curate({"get": "related"}), name="entity-related"),
        path("entities/reason", curate({"get": "reason"}), name="entities-reason"),
        path(
            "entities/dictionary",
            dictionary({"get": "list", "post": "create", "delete": "destroy"}),
            name="entity-dictionary",
        ),
        path(
            "entities/relink",
            dictionary({"get": "relink_state", "post": "relink"}),
            name="entity-relink",
        ),
    ]


def _people_routes() -> list[URLPattern]:
    """The tenant's members and API keys."""
    return [
        path("members", MemberViewSet.as_view({"get": "list", "post": "create"}), name="members"),
        path(
            "members/<username:username>",
            MemberViewSet.as_view(
                {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
            ),
            name="member",
        ),
        path("api-keys", ApiKeyViewSet.as_view({"get": "list", "post": "create"}), name="api-keys"),
        path(
            "api-keys/<id:key_id>",
            ApiKeyViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
            name="api-key",
        ),
        path(
            "api-keys/<id:key_id>/rotate",
            ApiKeyViewSet.as_view({"post": "rotate"}),
            name="api-key-rotate",
        ),
    ]


def _lifecycle_routes() -> list[URLPattern]:
    """Conflicts, retention and the audit log."""
    return [
        path("conflicts", ConflictViewSet.as_view({"get": "list"}), name="conflicts"),
        path(
            "conflicts/<id:conflict_id>",
            ConflictViewSet.as_view({"get": "retrieve"}),
            name="conflict",
        ),
        path(
            "conflicts/<id:conflict_id>/resolve",
            ConflictViewSet.as_view({"post": "resolve"}),
            name="conflict-resolve",
        ),
        path(
            "retention",
            RetentionViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
            name="retention",
        ),
        path("retention/runs", RetentionViewSet.as_view({"get": "runs"}), name="retention-runs"),
        path("retention/run", RetentionViewSet.as_view({"post": "run"}), name="retention-run"),
        path(
            "retention/preview",
            RetentionViewSet.as_view({"get": "preview"}),
            name="retention-preview",
        ),
        path("audit", AuditViewSet.as_view({"get": "list"}), name="audit"),
        path("audit/export", AuditViewSet.as_view({"get": "export"}), name="audit-export"),
        path("audit/verify", AuditViewSet.as_view({"get": "verify"}), name="audit-verify"),
    ]


def _tenant_routes() -> list[URLPattern]:
    """Everything that happens inside one tenant."""
    recall = [
        path("recall", RecallViewSet.as_view({"post": "create"}), name="recall"),
        path("context", ContextViewSet.as_view({"post": "create"}), name="context"),
    ]
    return [
        *_fact_routes(),
        *recall,
        *_entity_routes(),
        *_people_routes(),
        *_lifecycle_routes(),
    ]


_REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@lru_cache(maxsize=1)
def _redoc_script() -> bytes:
    """Redoc's bundle from the sidecar package, without the one image it fetches from its
    makers' CDN (the "API docs by Redocly" logo): nothing on the page comes from another host."""
    found = finders.find("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js")
    if not isinstance(found, str):
        raise RuntimeError("drf-spectacular-sidecar's Redoc bundle is missing")
    text = Path(found).read_text(encoding="utf-8")
    return text.replace(_REDOC_LOGO, "data:,").encode()


@cache_control(max_age=86400, public=True)
def redoc_script(request: HttpRequest) -> HttpResponse:
    return HttpResponse(_redoc_script(), content_type="text/javascript; charset=utf-8")


def _agent_routes() -> list[URLPattern]:
    """A Hermes profile's requests (API keys only)."""
    agent = AgentViewSet.as_view
    return [
        path("whoami", agent({"get": "whoami"}), name="agent-whoami"),
        path("prompt", agent({"post": "prompt"}), name="agent-prompt"),
        path("prefetch", agent({"post": "prefetch"}), name="agent-prefetch"),
        path("writes", agent({"post": "writes"}), name="agent-writes"),
        path("session-end", agent({"post": "session_end"}), name="agent-session-end"),
        path(
            "profile-import",
            ProfileImportViewSet.as_view({"post": "profile_import"}),
            name="agent-profile-import",
        ),
        re_path(
            rf"^tools/(?P<tool>{'|'.join(sorted(hermes_spec.TOOL_NAMES))})$",
            agent({"post": "tool"}),
            name="agent-tool",
        ),
    ]


_tenant_detail = TenantDetailViewSet.as_view({"get": "retrieve", "patch": "partial_update"})

urlpatterns: list[URLPattern | URLResolver] = [
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/schema/redoc-dist/bundles/redoc.standalone.js", redoc_script, name="api-redoc-js"),
    # Swagger UI and Redoc draw their pages with inline styles (Redoc's are made at run time), so
    # these two pages alone allow inline styles; their scripts are files of ours, or carry the
    # request's nonce (Redoc's start-up), and nothing comes from another host.
    path(
        "api/schema/ui/",
        csp_update({"style-src": [UNSAFE_INLINE]})(
            SpectacularSwaggerSplitView.as_view(url_name="api-schema")
        ),
        name="api-ui",
    ),
    path(
        "api/schema/redoc/",
        csp_update({"style-src": [UNSAFE_INLINE], "script-src": [NONCE], "worker-src": ["blob:"]})(
            SpectacularRedocView.as_view(url_name="api-schema")
        ),
        name="api-redoc",
    ),
    path("api/v1/tenants", TenantListView.as_view(), name="api-tenants"),
    path("api/v1/tenants/<slug:tenant>", _tenant_detail, name="api-tenant"),
    path("api/v1/tenants/<slug:tenant>/", include((_tenant_routes(), "api"), namespace="api")),
    # With an API key the tenant is the key's: the same endpoints without the tenant part.
    path("api/v1/tenant", _tenant_detail, name="api-key-tenant"),
    path("api/v1/agent/", include((_agent_routes(), "agent"), namespace="agent")),
    path("api/v1/", include((_tenant_routes(), "api-key"), namespace="api-key")),
]
