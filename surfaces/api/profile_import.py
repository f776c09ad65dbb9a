"""/api/v1/agent/profile-import: what a Hermes profile already remembers, brought along.

`mnemosyne hermes import` uploads the profile's memory files (the holographic provider's
memory_store.db, MEMORY.md, USER.md) as one multipart request; they are imported all or nothing
into the key's tenant, within the key's scope limit. The agent's other endpoints are in
`surfaces.api.agent`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, cast

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from facts.importers import hermes_profile_import
from surfaces.api.agent import _TAGS, AgentViewSet
from surfaces.base.strict import StrictSerializer
from tenants.errors import InvalidInput

# What a profile already remembers, as `mnemosyne hermes import` sends it: field -> where the
# file lives in a Hermes home.
PROFILE_FILES = {
    "memory_store": "memory_store.db",
    "memory_md": "memories/MEMORY.md",
    "user_md": "memories/USER.md",
}
MAX_PROFILE_FILE_BYTES = 256 * 1024 * 1024


class ProfileImportIn(StrictSerializer):
    """A Hermes profile's memories to import (at least one of the files)."""

    memory_store = serializers.FileField(
        required=False, help_text="the holographic provider's memory_store.db (SQLite)"
    )
    memory_md = serializers.FileField(required=False, help_text="Hermes' memories/MEMORY.md")
    user_md = serializers.FileField(required=False, help_text="Hermes' memories/USER.md")
    scope = serializers.CharField(required=False, help_text="where the memories go")


class ProfileImportOut(serializers.Serializer):
    added = serializers.IntegerField()
    exists = serializers.IntegerField(help_text="already stored (same scope and text)")
    entities_linked = serializers.IntegerField()
    sources = serializers.ListField(child=serializers.CharField())
    scope = serializers.CharField(
        help_text="the scope the memories landed in ('' is the whole tenant): the one asked for, "
        "else the key's scope limit"
    )


class ProfileImportViewSet(AgentViewSet):
    """`mnemosyne hermes import`: a profile's memory files, as a multipart upload."""

    parser_classes = [MultiPartParser]

    @extend_schema(
        summary="Bring along what a Hermes profile remembers (holographic store, memory files)",
        description="Multipart upload of any of `memory_store` (the holographic provider's "
        "memory_store.db: facts with trust, tags, counts and entities), `memory_md` and "
        "`user_md` (Hermes' MEMORY.md and USER.md, entries separated by a line holding only "
        "§). All or nothing; importing the same again adds nothing.",
        request={"multipart/form-data": ProfileImportIn},
        responses={200: ProfileImportOut},
        examples=[
            OpenApiExample(
                "a holographic store and the memory files",
                value={
                    "added": 6,
                    "exists": 0,
                    "entities_linked": 2,
                    "sources": ["memory_store.db", "MEMORY.md", "USER.md"],
                    "scope": "team:hermes",
                },
                response_only=True,
            )
        ],  # fmt: skip
        tags=_TAGS,
    )
    def profile_import(self, request: Request) -> Response:
        unknown = sorted((set(request.FILES) | set(request.data)) - set(PROFILE_FILES) - {"scope"})
        if unknown:
            raise InvalidInput(unknown[0], "is not a field of this import")
        if not any(field in request.FILES for field in PROFILE_FILES):
            raise InvalidInput("memory_store", "send memory_store, memory_md or user_md")
        form = cast(dict[str, Any], request.data)
        binding = self._binding({"scope": str(form.get("scope") or "")})
        with tempfile.TemporaryDirectory(prefix="mnemosyne-profile-") as folder:
            home = Path(folder)
            for field, name in PROFILE_FILES.items():
                upload = request.FILES.get(field)
                if upload is None:
                    continue
                if upload.size > MAX_PROFILE_FILE_BYTES:
                    limit = MAX_PROFILE_FILE_BYTES // 2**20
                    raise InvalidInput(field, f"is larger than {limit} MiB")
                target = home / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as out:
                    for chunk in upload.chunks():
                        out.write(chunk)
            try:
                result = hermes_profile_import(
                    tenant=binding.tenant, hermes_home=home, actor=binding.actor,
                    scope=binding.scope,
                )  # fmt: skip
            except InvalidInput as problem:
                if problem.field == "path":  # names a file of ours, not the caller's
                    raise InvalidInput(
                        "memory_store", "is not a holographic memory_store.db"
                    ) from None
                raise
        return Response(
            {
                "added": result.added,
                "exists": result.exists,
                "entities_linked": result.entities_linked,
                "sources": [Path(source).name for source in result.sources],
                "scope": binding.scope,
            }
        )
