"""REST endpoints of bundles: a whole tenant out and in."""

from __future__ import annotations

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from surfaces.base.downloads import bundle_download
from surfaces.base.parsers import TarParser
from surfaces.base.strict import ScopeText, StrictSerializer, validated
from surfaces.base.viewsets import Need, TenantViewSet
from tenants.errors import InvalidInput
from tenants.inputs import scope_checked

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

        from facts.bundle_tar import bundle_from_tar
        from facts.bundles import BundleError
        from facts.transfer import tenant_import

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
