"""Export a tenant (or one scope of it) into a bundle, and import a bundle into a tenant.

A bundle carries entities, facts (with their entity links), feedback, each fact's audit history
and, when the fact has one, its vector of the model the exporting deployment serves. Importing:
- verifies the whole bundle first (every checksum), then adds everything in one transaction: it
  lands completely or not at all;
- is idempotent: a fact already there (same kind, scope and text; a turn: same session and
  position) is not added again, so importing twice adds nothing; an archived fact whose bundle
  record is active is restored (how an archive bundle brings its facts back);
- keeps vectors when the bundle's model is the one this deployment serves; otherwise the facts
  are embedded again by the workers (one message for the tenant).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from facts.archive import fact_body
from facts.bundle_checks import bundle_record_check
from facts.bundles import BundleReader, BundleRecord, bundle_open, bundle_write
from facts.embedding import tables_analyze_own_changes
from facts.entities import entity_normalize as normalize_name
from facts.models import (
    Entity,
    EventAction,
    Fact,
    FactEntity,
    FactEvent,
    FactVector,
    Feedback,
    Kind,
    Status,
)
from indexing.vectors import configured_embedder
from tenants.actors import Actor
from tenants.models import Tenant
from tenants.scope import tenant_scope

Progress = Callable[[int, int], None]
CHUNK = 2000


def _quiet(done: int, total: int) -> None:
    pass


def _stamp(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


# -- export -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportSummary:
    path: Path
    counts: dict[str, int]
    bytes: int
    model: str


def _facts_query(tenant: Tenant, scope: str | None, since: datetime | None) -> Any:
    facts = Fact.objects.for_tenant(tenant)
    if scope:
        prefix = scope.strip().strip("/")
        facts = facts.filter(Q(scope=prefix) | Q(scope__startswith=f"{prefix}/"))
    if since is not None:
        facts = facts.filter(updated_at__gte=since)
    return facts


def _export_records(
    tenant: Tenant, facts: Any, model: str, progress: Progress
) -> Iterator[BundleRecord]:
    total = facts.count()
    ids = facts.values("pk")
    links = FactEntity.objects.for_tenant(tenant).filter(fact_id__in=ids)
    used = set(links.values_list("entity_id", flat=True).distinct())
    for entity in Entity.objects.for_tenant(tenant).filter(pk__in=used).order_by("pk"):
        yield BundleRecord(
            "entity", entity.pk,
            {"name": entity.name, "type": entity.type, "aliases": entity.aliases},
        )  # fmt: skip
    done = 0
    last = 0
    while True:
        chunk = list(facts.filter(pk__gt=last).defer("search_vector").order_by("pk")[:CHUNK])
        if not chunk:
            break
        chunk_ids = [f.pk for f in chunk]
        linked: dict[int, list[list[Any]]] = {}
        for fact_id, entity_id, role in links.filter(fact_id__in=chunk_ids).values_list(
            "fact_id", "entity_id", "role"
        ):
            linked.setdefault(fact_id, []).append([entity_id, role])
        vectors = dict(
            FactVector.objects.for_tenant(tenant)
            .filter(fact_id__in=chunk_ids, model=model)
            .values_list("fact_id", "embedding")
        )
        feedback: dict[int, list[dict[str, Any]]] = {}
        for row in Feedback.objects.for_tenant(tenant).filter(fact_id__in=chunk_ids).order_by("pk"):
            feedback.setdefault(row.fact_id, []).append(
                {"helpful": row.helpful, "actor": row.actor, "at": _stamp(row.at)}
            )
        events: dict[int | None, list[dict[str, Any]]] = {}
        rows = FactEvent.objects.for_tenant(tenant).filter(fact_id__in=chunk_ids).order_by("pk")
        for event in rows:
            events.setdefault(event.fact_id, []).append(
                {"action": event.action, "actor": event.actor, "before": event.before,
                 "after": event.after, "at": _stamp(event.at)}
            )  # fmt: skip
        for fact in chunk:
            body = fact_body(fact) | {
                "entities": linked.get(fact.pk, []),
                "feedback": feedback.get(fact.pk, []),
                "history": events.get(fact.pk, []),
            }
            yield BundleRecord("fact", fact.pk, body, {"scope": fact.scope, "status": fact.status})
            if fact.pk in vectors:
                vector = [float(x) for x in vectors[fact.pk]]
                yield BundleRecord("vector", fact.pk, {"model": model, "embedding": vector})
        done += len(chunk)
        last = chunk[-1].pk
        progress(done, total)


@contextmanager
def _one_snapshot() -> Iterator[None]:
    """A transaction that reads one snapshot from its first query to its end (REPEATABLE READ),
    when it is the outermost; inside a caller's transaction, the caller's."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ WRITE")
        yield


def tenant_export(
    *,
    tenant: Tenant,
    out: Path,
    actor: Actor,
    scope: str | None = None,
    since: datetime | None = None,
    progress: Progress = _quiet,
) -> ExportSummary:
    """Write the tenant's facts (under `scope`, changed since `since`) into a bundle at `out`
    (a stem: out.dat, out.idx, out.manifest.json). One consistent snapshot (a fact changed while
    it reads, in chunks, is exported as it was when the export began); audited."""
    model = configured_embedder().name
    with _one_snapshot(), tenant_scope(tenant):
        facts = _facts_query(tenant, scope, since)
        manifest = bundle_write(
            stem=out,
            records=_export_records(tenant, facts, model, progress),
            tenant=tenant.slug,
            scope=scope or "",
            model=model,
            purpose="export",
            extra={"since": _stamp(since)},
        )
    # Recorded after the snapshot's transaction: an audit event written in a REPEATABLE READ
    # transaction could not follow events others added to the chain meanwhile.
    with tenant_scope(tenant):
        FactEvent.objects.create(
            tenant=tenant, fact_id=None, action=EventAction.EXPORT, actor=str(actor),
            after={"bundle": out.name, "scope": scope or "", "since": _stamp(since),
                   "counts": manifest.counts},
            at=timezone.now(),
        )  # fmt: skip
    size = sum(f["size"] for f in manifest.files.values())
    return ExportSummary(path=out, counts=manifest.counts, bytes=size, model=model)


# -- import -----------------------------------------------------------------------------------


@dataclass
class ImportSummary:
    added: int = 0
    exists: int = 0
    restored: int = 0
    entities_added: int = 0
    vectors_kept: int = 0
    to_embed: int = 0
    model: str = ""
    counts: dict[str, int] = field(default_factory=dict)


def _entity_map(tenant: Tenant, reader: BundleReader, summary: ImportSummary) -> dict[Any, int]:
    wanted = {}
    for record in reader.records(["entity"]):
        wanted[record.id] = record.body
    found = {
        e.normalized: e
        for e in Entity.objects.for_tenant(tenant).filter(
            normalized__in=[normalize_name(b["name"]) for b in wanted.values()]
        )
    }
    mapping: dict[Any, int] = {}
    for old_id, body in wanted.items():
        key = normalize_name(body["name"])
        entity = found.get(key)
        if entity is None:
            entity = Entity.objects.create(
                tenant=tenant, name=body["name"], normalized=key,
                type=body.get("type") or "other", aliases=list(body.get("aliases") or []),
            )  # fmt: skip
            found[key] = entity
            summary.entities_added += 1
        mapping[old_id] = entity.pk
    return mapping


IMPORT_BATCH = 500  # facts written per round of bulk inserts


def _key(body: dict[str, Any]) -> tuple[Any, ...]:
    """What makes a memory the same one: a fact's scope and text, a turn's session and place."""
    if body["kind"] == Kind.TURN:
        return (Kind.TURN, body["session_id"], body["position"])
    return (Kind.FACT, body["scope"], body["content_hash"])


def _existing(tenant: Tenant, bodies: list[dict[str, Any]]) -> dict[tuple[Any, ...], Fact]:
    """The tenant's memories that are already there, by `_key`, in two queries."""
    facts = Fact.objects.for_tenant(tenant).defer("search_vector")
    hashes = {b["content_hash"] for b in bodies if b["kind"] != Kind.TURN}
    sessions = {b["session_id"] for b in bodies if b["kind"] == Kind.TURN}
    found: dict[tuple[Any, ...], Fact] = {}
    if hashes:
        for fact in facts.filter(kind=Kind.FACT, content_hash__in=hashes):
            found[(Kind.FACT, fact.scope, fact.content_hash)] = fact
    if sessions:
        for fact in facts.filter(kind=Kind.TURN, session_id__in=sessions):
            found[(Kind.TURN, fact.session_id, fact.position)] = fact
    return found


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


@dataclass
class _Batch:
    """Fact records waiting to be written, and vectors waiting for their facts."""

    facts: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    vectors: list[tuple[Any, list[float]]] = field(default_factory=list)
    created: dict[Any, int] = field(default_factory=dict)  # bundle's fact id -> new fact's id
    written: set[Any] = field(default_factory=set)  # bundle's fact ids already handled


def _write_facts(
    tenant: Tenant,
    batch: _Batch,
    *,
    entities: dict[Any, int],
    actor: Actor,
    reader: BundleReader,
    summary: ImportSummary,
    now: datetime,
) -> None:
    """Write the waiting fact records: the new ones in bulk, with their links, feedback and
    history; the ones already there counted, or restored when archived here and active there."""
    from facts.services.rows import _facts_insert

    existing = _existing(tenant, [body for _, body in batch.facts])
    new: list[tuple[Any, dict[str, Any], Fact]] = []
    for record_id, body in batch.facts:
        batch.written.add(record_id)
        there = existing.get(_key(body))
        if there is not None:
            if there.status == Status.ARCHIVED and body["status"] == Status.ACTIVE:
                there.status = Status.ACTIVE
                there.save(update_fields=["status", "updated_at"])
                FactEvent.objects.create(
                    tenant=tenant, fact_id=there.pk, action=EventAction.RESTORE,
                    actor=str(actor), before={"status": "archived"},
                    after={"status": "active", "from_bundle": reader.stem.name}, at=now,
                )  # fmt: skip
                summary.restored += 1
            else:
                summary.exists += 1
            continue
        fact = Fact(
            tenant=tenant, kind=body["kind"], content=body["content"],
            content_hash=body["content_hash"], scope=body["scope"],
            session_id=body["session_id"], position=body["position"],
            speaker=body["speaker"], category=body["category"], tags=body["tags"],
            metadata=body["metadata"], trust_score=body["trust_score"],
            helpful_count=body["helpful_count"], unhelpful_count=body["unhelpful_count"],
            retrieval_count=body["retrieval_count"],
            last_retrieved_at=_when(body["last_retrieved_at"]),
            importance=body["importance"], pinned=body.get("pinned", False),
            mention_count=body["mention_count"],
            status=body["status"] if body["status"] in Status.values else Status.ACTIVE,
            archived_at=_when(body.get("archived_at")), created_by=body["created_by"],
            created_at=_when(body["created_at"]) or now, updated_at=now,
        )  # fmt: skip
        existing[_key(body)] = fact  # the same memory twice in one bundle is added once
        new.append((record_id, body, fact))
    batch.facts.clear()
    if not new:
        return
    _facts_insert([fact for _, _, fact in new])  # search vectors made as they go in
    _write_related(tenant, batch, new, entities=entities, actor=actor, reader=reader, now=now)
    summary.added += len(new)


def _write_related(
    tenant: Tenant,
    batch: _Batch,
    new: list[tuple[Any, dict[str, Any], Fact]],
    *,
    entities: dict[Any, int],
    actor: Actor,
    reader: BundleReader,
    now: datetime,
) -> None:
    """For `_write_facts`, once the new facts have their ids: their entity links, feedback and
    history (each event's actor marked as imported), and an import event for each."""
    links, feedback, history = [], [], []
    for record_id, body, fact in new:
        batch.created[record_id] = fact.pk
        links += [
            FactEntity(tenant=tenant, fact_id=fact.pk, entity_id=entities[old], role=role)
            for old, role in body.get("entities", [])
            if old in entities
        ]
        feedback += [
            Feedback(tenant=tenant, fact_id=fact.pk, helpful=f["helpful"], actor=f["actor"])
            for f in body.get("feedback", [])
        ]
        history += [
            FactEvent(
                tenant=tenant, fact_id=fact.pk, action=e["action"], actor=imported(e["actor"]),
                before=e["before"], after=e["after"], at=_when(e["at"]) or now,
            )
            for e in body.get("history", [])
        ]  # fmt: skip
        history.append(
            FactEvent(
                tenant=tenant,
                fact_id=fact.pk,
                action=EventAction.IMPORT,
                actor=str(actor),
                after={
                    "bundle": reader.stem.name,
                    "from_tenant": reader.manifest.tenant,
                    "from_id": record_id,
                },
                at=now,
            )  # fmt: skip
        )
    FactEntity.objects.bulk_create(links, ignore_conflicts=True, batch_size=2000)
    Feedback.objects.bulk_create(feedback, batch_size=2000)
    FactEvent.objects.bulk_create(history, batch_size=2000)


def imported(actor: str) -> str:
    """A copied event's actor, marked as history from a bundle: who acted there is no member,
    key or job of this tenant, and the database accepts only those, or this mark."""
    return actor if actor.startswith("imported:") else f"imported:{actor}"


def _write_vectors(tenant: Tenant, batch: _Batch, *, model: str, summary: ImportSummary) -> None:
    """Store the waiting vectors whose facts this import added; drop those of facts that were
    already there; keep waiting those whose facts are still to come."""
    ready: list[FactVector] = []
    waiting: list[tuple[Any, list[float]]] = []
    for record_id, embedding in batch.vectors:
        fact_id = batch.created.get(record_id)
        if fact_id is not None:
            ready.append(
                FactVector(tenant=tenant, fact_id=fact_id, model=model,
                           dimension=len(embedding), embedding=embedding)
            )  # fmt: skip
        elif record_id not in batch.written:
            waiting.append((record_id, embedding))
    batch.vectors = waiting
    if ready:
        FactVector.objects.bulk_create(ready, batch_size=2000)
        Fact.objects.for_tenant(tenant).filter(pk__in=[v.fact_id for v in ready]).update(
            embedding_model=model
        )
        summary.vectors_kept += len(ready)


def tenant_import(
    *, tenant: Tenant, path: Path | str, actor: Actor, progress: Progress = _quiet
) -> ImportSummary:
    """Import a bundle into `tenant` (the same or another one): all or nothing, idempotent.
    Facts are written in rounds of IMPORT_BATCH, each a few bulk inserts."""
    from facts.services.rows import _schedule_embedding, content_hash

    embedder = configured_embedder()
    model = embedder.name
    served = (model, embedder.dimension)

    def check(record: BundleRecord) -> None:
        bundle_record_check(record, served=served)

    # Verifies every checksum and every record's fields before anything is added.
    reader = bundle_open(path, check=check)
    manifest = reader.manifest
    same_model = manifest.model == model
    summary = ImportSummary(model=manifest.model, counts=manifest.counts)
    total = manifest.counts.get("fact", 0)
    now = timezone.now()
    batch = _Batch()
    with tenant_scope(tenant), transaction.atomic():
        entities = _entity_map(tenant, reader, summary)
        done = 0

        def write() -> None:
            _write_facts(tenant, batch, entities=entities, actor=actor, reader=reader,
                         summary=summary, now=now)  # fmt: skip
            _write_vectors(tenant, batch, model=model, summary=summary)
            progress(done, total)

        for record in reader.records(["fact", "vector"]):
            if record.type == "vector":
                if same_model and record.body.get("model") == model:
                    batch.vectors.append((record.id, record.body["embedding"]))
                continue
            body = record.body
            body["content_hash"] = content_hash(body["content"])
            if len(batch.facts) >= IMPORT_BATCH:
                write()
            batch.facts.append((record.id, body))
            done += 1
        write()
        summary.to_embed = summary.added - summary.vectors_kept
        FactEvent.objects.create(
            tenant=tenant, fact_id=None, action=EventAction.IMPORT, actor=str(actor),
            after={"bundle": reader.stem.name, "from_tenant": manifest.tenant,
                   "added": summary.added, "exists": summary.exists,
                   "restored": summary.restored},
            at=now,
        )  # fmt: skip
        if summary.to_embed:
            _schedule_embedding(tenant)  # one message for the tenant, after the commit
    # With its vectors kept, no embedding task runs after it to have the tables it changed
    # analysed (facts.tasks): the import does, as fact_import does.
    tables_analyze_own_changes()
    return summary
