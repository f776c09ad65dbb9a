"""Archiving facts into bundles and purging them for good, out of the database and the bundles.

Both run inside the caller's tenant scope and transaction, with the facts locked. An archive
writes the bundle first (fsynced) and then marks the facts; a purge first rewrites every bundle
that holds one of the facts without it (found by the bundles' indexes, not only the bundle a
fact names), then deletes the rows (their vectors, entity links, feedback and conflicts go with
them, and the entities no other fact names and nobody curated), replaces the text in their
audit events with "[purged]", and records a purge event that keeps that the fact existed, who
purged it and why. Purges of one tenant rewrite its bundles one at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from facts.bundles import (
    BundleError,
    BundleRecord,
    bundle_index_ids,
    bundle_open,
    bundle_remove,
    bundle_write,
)
from facts.models import Entity, EntityEvent, EventAction, Fact, FactEntity, FactEvent, Status
from tenants.actors import Actor
from tenants.models import Tenant

# What a fact record of a bundle carries (everything but the search vector, rebuilt on import).
FACT_FIELDS = (
    "kind", "content", "content_hash", "scope", "session_id", "position", "speaker", "category",
    "tags", "metadata", "trust_score", "helpful_count", "unhelpful_count", "retrieval_count",
    "last_retrieved_at", "importance", "pinned", "mention_count", "status", "created_by",
    "created_at", "updated_at", "archived_at",
)  # fmt: skip


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def fact_body(fact: Fact) -> dict[str, Any]:
    return {"id": fact.pk, **{name: _plain(getattr(fact, name)) for name in FACT_FIELDS}}


def archive_root(tenant: Tenant) -> Path:
    return Path(settings.MNEMOSYNE_ARCHIVE_DIR) / str(tenant.pk)


def archive_stem(tenant: Tenant, name: str) -> Path:
    """The path of an archive bundle by the name facts keep (`archive_bundle`)."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"not an archive bundle name: {name!r}")
    return archive_root(tenant) / name


def facts_archive(
    *,
    tenant: Tenant,
    facts: list[Fact],
    reasons: dict[int, str],
    actor: Actor,
    bundle_name: str,
    model: str = "",
    extra: dict[str, Any] | None = None,
) -> int:
    """Write `facts` (locked, active) into the bundle `bundle_name`, then mark them archived,
    each with an archive event naming its reason. Returns how many."""
    stem = archive_stem(tenant, bundle_name)
    if not facts:
        bundle_remove(stem)  # a bundle left by an attempt that did not commit
        return 0
    bundle_write(
        stem=stem,
        records=(
            BundleRecord("fact", f.pk, fact_body(f), {"scope": f.scope, "reason": reasons[f.pk]})
            for f in facts
        ),
        tenant=tenant.slug,
        model=model,
        purpose="archive",
        extra=extra,
    )
    now = timezone.now()
    ids = [f.pk for f in facts]
    Fact.objects.for_tenant(tenant).filter(pk__in=ids).update(
        status=Status.ARCHIVED, archived_at=now, archive_bundle=bundle_name, updated_at=now
    )
    FactEvent.objects.bulk_create(
        FactEvent(
            tenant=tenant, fact_id=f.pk, action=EventAction.ARCHIVE, actor=str(actor),
            before={"status": f.status},
            after={"status": Status.ARCHIVED, "reason": reasons[f.pk], "bundle": bundle_name,
                   **(extra or {})},
            at=now,
        )
        for f in facts
    )  # fmt: skip
    return len(facts)


MANIFEST_SUFFIX = ".manifest.json"


def _bundles_holding(tenant: Tenant, ids: set[int]) -> dict[str, set[int]]:
    """Every archive bundle of the tenant that holds any of `ids`, by its index alone. Not only
    the bundle a fact names: a fact archived, restored and archived again is in two, and a run
    that failed after writing its bundle left one its facts never named. A damaged bundle
    stops the purge (BundleError names it): its text cannot be shown gone."""
    root = archive_root(tenant)
    holding: dict[str, set[int]] = {}
    if not root.is_dir():
        return holding
    for manifest in sorted(root.glob("*" + MANIFEST_SUFFIX)):
        name = manifest.name[: -len(MANIFEST_SUFFIX)]
        try:
            found = ids & set(bundle_index_ids(root / name, "fact"))
        except BundleError as error:
            raise BundleError(f"archive bundle {name}: {error}", error.record) from None
        if found:
            holding[name] = found
    return holding


def _bundles_forget(tenant: Tenant, by_bundle: dict[str, set[int]]) -> None:
    """Rewrite each bundle without the given fact ids (removed when nothing is left). The
    bundles are the ones `_bundles_holding` just found, under the tenant's bundle lock."""
    for name, ids in by_bundle.items():
        stem = archive_stem(tenant, name)
        reader = bundle_open(stem)
        kept = [r for r in reader.records() if not (r.type == "fact" and r.id in ids)]
        if not any(r.type == "fact" for r in kept):
            bundle_remove(stem)
            continue
        manifest = reader.manifest
        bundle_write(
            stem=stem, records=kept, tenant=manifest.tenant, scope=manifest.scope,
            model=manifest.model, purpose=manifest.purpose, extra=manifest.extra,
        )  # fmt: skip


def facts_purge(
    *, tenant: Tenant, facts: Iterable[Fact], actor: Actor, reason: str, extra: dict | None = None
) -> list[int]:
    """Delete `facts` (locked) for good: out of their archive bundle, the database and the
    text of their audit trail. Returns the purged ids."""
    facts = list(facts)
    if not facts:
        return []
    ids = [f.pk for f in facts]
    with connection.cursor() as cursor:
        # One bundle rewrite at a time per tenant: a manual purge and a retention run that
        # rewrote the same bundle at once could each put back what the other took out.
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"{tenant.pk}/bundles"]
        )
    _bundles_forget(tenant, _bundles_holding(tenant, set(ids)))
    named = set(
        FactEntity.objects.for_tenant(tenant)
        .filter(fact_id__in=ids)
        .values_list("entity_id", flat=True)
    )
    Fact.objects.for_tenant(tenant).filter(pk__in=ids).delete()
    # The entities only these facts named go too: their names are the facts' words. An entity
    # that someone curated (it has history) stays.
    Entity.objects.for_tenant(tenant).filter(pk__in=named).exclude(
        pk__in=FactEntity.objects.for_tenant(tenant).values("entity_id")
    ).exclude(pk__in=EntityEvent.objects.for_tenant(tenant).values("entity_id")).delete()
    with connection.cursor() as cursor:
        # The owner's function: the runtime role may not change the audit trail itself.
        cursor.execute("SELECT mnemosyne_factevent_redact(%s)", [ids])
    now = timezone.now()
    FactEvent.objects.bulk_create(
        FactEvent(
            tenant=tenant, fact_id=f.pk, action=EventAction.PURGE, actor=str(actor),
            # No hash of the text either: a hash confirms a guessed text.
            before={"kind": f.kind, "scope": f.scope, "status": f.status,
                    "content_length": len(f.content)},
            after={"reason": reason, **(extra or {})},
            at=now,
        )
        for f in facts
    )  # fmt: skip
    return ids
