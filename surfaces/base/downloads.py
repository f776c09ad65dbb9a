"""Files the API and the pages hand out: one way to name and stream them."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from django.http import StreamingHttpResponse
from django.utils import timezone

from facts.bundle_tar import bundle_tar_stream
from facts.transfer import tenant_export
from tenants.actors import Actor
from tenants.models import Tenant


def download(
    chunks: Iterable[bytes | str], *, tenant: Tenant, what: str, extension: str, content_type: str
) -> StreamingHttpResponse:
    """A streamed attachment named mnemosyne-<tenant>[-<what>]-<UTC time>.<extension>."""
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    name = "-".join(part for part in ("mnemosyne", tenant.slug, what, stamp) if part)
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}.{extension}"'
    return response


def bundle_download(
    *, tenant: Tenant, actor: Actor, scope: str | None = None, since: datetime | None = None
) -> StreamingHttpResponse:
    """The tenant's facts as a bundle (a tar of its two files), written to a temporary folder
    that goes once the last byte is sent."""
    folder = Path(tempfile.mkdtemp(prefix="mnemosyne-export-"))
    tenant_export(tenant=tenant, out=folder / "bundle", actor=actor, scope=scope, since=since)
    chunks = bundle_tar_stream(folder / "bundle", cleanup=folder)
    return download(
        chunks, tenant=tenant, what="", extension="bundle.tar", content_type="application/x-tar"
    )
