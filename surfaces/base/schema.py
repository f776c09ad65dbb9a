"""OpenAPI additions: the API-key security scheme and the error answers every operation has."""

from __future__ import annotations

from typing import Any

from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import is_list_serializer
from rest_framework import serializers


class ApiSchema(AutoSchema):
    """Our `list` actions answer a page object ({results, next_cursor}) or say `many=True`
    themselves: never let the generator wrap a response in an array on its own."""

    def _is_list_view(self, serializer: Any = None) -> bool:
        return serializer is not None and is_list_serializer(serializer)

    def get_operation_id(self) -> str:
        operation_id = super().get_operation_id()
        if getattr(self.view, "action", None) == "list" and operation_id.endswith("_retrieve"):
            operation_id = operation_id.removesuffix("_retrieve") + "_list"
        return operation_id


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "surfaces.base.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key of one tenant: `Authorization: Bearer mnm_...`. "
            "Keys are created (and shown once) under /api/v1/tenants/{tenant}/api-keys.",
        }


class SessionOrAddressScheme(SessionScheme):
    """A signed-in session (cookie), as DRF's own session authentication."""

    target_class = "surfaces.base.auth.SessionOrAddressAuthentication"
    priority = 0


class ErrorItemSerializer(serializers.Serializer):
    field = serializers.CharField(allow_null=True, help_text="the offending field, if one")
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    message = serializers.CharField(help_text="what went wrong, for a person")
    field = serializers.CharField(
        allow_null=True, help_text="the offending field (a path like `tags[2]`), or null"
    )
    code = serializers.CharField(help_text="a stable word: invalid, not_found, ...")
    errors = ErrorItemSerializer(  # type: ignore[assignment]  # a field named like the property
        many=True, help_text="every problem found, the first one above"
    )


_ERROR_SCHEMA = {
    "type": "object",
    "required": ["message", "field", "code", "errors"],
    "properties": {
        "message": {"type": "string"},
        "field": {"type": "string", "nullable": True},
        "code": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["field", "message"],
                "properties": {
                    "field": {"type": "string", "nullable": True},
                    "message": {"type": "string"},
                },
            },
        },
    },
}

_ERRORS = {
    "400": "Bad input: `field` names the offending field.",
    "401": "No credentials, or an unknown or revoked API key.",
    "403": "Authenticated, but this role or key scope may not do this.",
    "404": "No such object in this tenant (another tenant's is exactly as missing).",
    "413": "The request body is larger than the limit.",
    "415": "The body's Content-Type is not one this endpoint reads.",
    "429": "Too many requests for this key or user; `Retry-After` says when to retry.",
}


def _example(message: str, code: str, field: str | None = None) -> dict[str, Any]:
    full = f"{field}: {message}" if field else message
    return {
        "message": full,
        "field": field,
        "code": code,
        "errors": [{"field": field, "message": message}],
    }


_EXAMPLES = {
    "400": _example("must be a whole number from 1 to 200", "invalid", "limit"),
    "401": _example("the API key is unknown or revoked", "authentication_failed"),
    "403": _example("this API key has no 'write' scope", "permission_denied"),
    "404": _example("fact not found", "not_found"),
    "413": _example("the request body is larger than 1048576 bytes", "too_large"),
    "415": _example('Unsupported media type "text/html" in request.', "unsupported_media_type"),
    "429": _example("Request was throttled. Expected available in 12 seconds.", "throttled"),
}
_PUBLIC = ("/api/schema",)


def add_error_responses(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every operation answers errors in one shape."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["Error"] = _ERROR_SCHEMA
    reference = {"$ref": "#/components/schemas/Error"}
    for path, operations in result.get("paths", {}).items():
        if path.startswith(_PUBLIC):
            continue
        for method, operation in operations.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            for status, description in _ERRORS.items():
                if status in ("413", "415") and method in ("get", "delete"):
                    continue
                responses.setdefault(
                    status,
                    {
                        "description": description,
                        "content": {
                            "application/json": {"schema": reference, "example": _EXAMPLES[status]}
                        },
                    },
                )
    return result


def doc_excludes() -> list[type]:
    """drf-spectacular's classes whose docstrings a subclass does not inherit as its own
    description, and our own base classes (the schema describes each input, not its base)."""
    from drf_spectacular.plumbing import get_lib_doc_excludes

    from surfaces.base.strict import StrictSerializer
    from surfaces.base.viewsets import TenantViewSet

    return [*get_lib_doc_excludes(), StrictSerializer, TenantViewSet]
