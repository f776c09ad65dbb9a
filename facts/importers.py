"""Bringing along what a Hermes profile already remembers.

- the holographic provider's `memory_store.db` (SQLite): facts with their category, tags, trust,
  helpful and retrieval counts and time, and its entities (with type and aliases) and links;
- Hermes' built-in memory files `memories/MEMORY.md` (the agent's notes) and `memories/USER.md`
  (what it knows about the user), entries separated by a line holding only "§".

Each import is one transaction (all or nothing) and idempotent: a fact already stored (same
scope and text) is counted as there, not added twice. Facts are added with the importing actor;
their metadata names where they came from.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import transaction

from facts.entities import entity_resolve
from facts.importance import importance_recompute
from facts.models import Category, EntityType, Fact, FactEntity
from tenants.actors import Actor
from tenants.errors import InvalidInput
from tenants.models import Tenant
from tenants.scope import tenant_scope

MEMORY_FILES = {"MEMORY.md": Category.GENERAL, "USER.md": Category.USER_PREF}
ENTRY_DELIMITER = "\n§\n"  # Hermes' tools/memory_tool.py


@dataclass
class HermesImport:
    added: int = 0
    exists: int = 0
    entities_linked: int = 0
    sources: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return self.added + self.exists


def _when(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _trust(value: Any) -> float:
    try:
        return min(1.0, max(0.0, float(value)))
    except (TypeError, ValueError):
        return 0.5


def _add(tenant: Tenant, actor: Actor, summary: HermesImport, **values: Any) -> Fact | None:
    from facts.inputs import fact_draft
    from facts.services import fact_add

    with transaction.atomic():  # a savepoint: a refused entry leaves nothing behind
        try:
            result = fact_add(
                tenant=tenant, actor=actor, join_similar=False, draft=fact_draft({**values})
            )
        except InvalidInput:
            return None
    if result.status == "added":
        summary.added += 1
        return result.fact
    summary.exists += 1
    return None


def holographic_read(path: Path) -> tuple[list[dict], dict[int, dict], list[tuple[int, int]]]:
    """Facts, entities by id and fact-entity links of a holographic memory_store.db (read-only)."""
    if not path.is_file():
        raise InvalidInput("path", f"no holographic store at {path}")
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            db.row_factory = sqlite3.Row
            facts = [dict(row) for row in db.execute("SELECT * FROM facts ORDER BY fact_id")]
            entities = {row["entity_id"]: dict(row) for row in db.execute("SELECT * FROM entities")}
            links = [
                tuple(row) for row in db.execute("SELECT fact_id, entity_id FROM fact_entities")
            ]
    except sqlite3.Error as error:
        raise InvalidInput("path", f"{path} is not a holographic store ({error})") from None
    return facts, entities, links


def holographic_import(
    *, tenant: Tenant, path: Path, actor: Actor, scope: str = ""
) -> HermesImport:
    """Import a holographic memory_store.db: facts with trust, tags, counts and entities."""
    facts, entities, links = holographic_read(path)
    summary = HermesImport(sources=(str(path),))
    linked: dict[int, list[int]] = {}
    for fact_id, entity_id in links:
        linked.setdefault(fact_id, []).append(entity_id)
    added: list[int] = []
    with tenant_scope(tenant), transaction.atomic():
        for row in facts:
            category = row.get("category") if row.get("category") in Category.values else None
            tags = [t for t in str(row.get("tags") or "").split(",") if t.strip()]
            fact = _add(
                tenant, actor, summary, content=row["content"], scope=scope, category=category,
                tags=tags[:20], trust=_trust(row.get("trust_score")),
                created_at=_when(row.get("created_at")),
                metadata={"imported_from": "holographic", "holographic_id": row["fact_id"]},
            )  # fmt: skip
            if fact is None:
                continue
            Fact.objects.for_tenant(tenant).filter(pk=fact.pk).update(
                helpful_count=max(0, int(row.get("helpful_count") or 0)),
                retrieval_count=max(0, int(row.get("retrieval_count") or 0)),
            )
            added.append(fact.pk)
            for entity_id in linked.get(row["fact_id"], []):
                source = entities.get(entity_id)
                if source is None or not str(source.get("name") or "").strip():
                    continue
                kind = source.get("entity_type")
                entity = entity_resolve(
                    tenant=tenant, name=str(source["name"]).strip()[:200],
                    type=kind if kind in EntityType.values else EntityType.OTHER,
                )  # fmt: skip
                aliases = [a.strip() for a in str(source.get("aliases") or "").split(",")]
                new = [a for a in aliases if a and a not in entity.aliases]
                if new:
                    entity.aliases = [*entity.aliases, *new][:50]
                    entity.save(update_fields=["aliases"])
                # The store's link, whether our own extraction made it already or not.
                FactEntity.objects.for_tenant(tenant).get_or_create(
                    tenant=tenant, fact=fact, entity=entity, defaults={"role": "subject"}
                )
                summary.entities_linked += 1
        # The counts that came along count at once, not at the next scheduled recompute.
        importance_recompute(tenant=tenant, fact_ids=added)
    return summary


def memory_file_entries(path: Path) -> list[str]:
    if not path.is_file():
        return []
    raw = path.read_text(encoding="utf-8")
    return [entry.strip() for entry in raw.split(ENTRY_DELIMITER) if entry.strip()]


def memory_files_import(
    *, tenant: Tenant, memories_dir: Path, actor: Actor, scope: str = ""
) -> HermesImport:
    """Import Hermes' MEMORY.md (general facts) and USER.md (user preferences)."""
    summary = HermesImport()
    sources = []
    with tenant_scope(tenant), transaction.atomic():
        for name, category in MEMORY_FILES.items():
            entries = memory_file_entries(memories_dir / name)
            if entries:
                sources.append(str(memories_dir / name))
            for entry in entries:
                _add(
                    tenant, actor, summary, content=entry, scope=scope, category=category,
                    tags=[name.lower().removesuffix(".md")],
                    metadata={"imported_from": f"hermes {name}"},
                )  # fmt: skip
    summary.sources = tuple(sources)
    return summary


def hermes_profile_memories(hermes_home: Path) -> dict[str, int]:
    """What a profile holds that could come along: entries per source (for the installer)."""
    found: dict[str, int] = {}
    store = hermes_home / "memory_store.db"
    if store.is_file():
        try:
            found["memory_store.db"] = len(holographic_read(store)[0])
        except InvalidInput:
            pass
    for name in MEMORY_FILES:
        if count := len(memory_file_entries(hermes_home / "memories" / name)):
            found[name] = count
    return found


def hermes_profile_import(
    *, tenant: Tenant, hermes_home: Path, actor: Actor, scope: str = ""
) -> HermesImport:
    """Everything a profile holds: its holographic store and its memory files, in one go."""
    total = HermesImport()
    with tenant_scope(tenant), transaction.atomic():
        parts = []
        store = hermes_home / "memory_store.db"
        if store.is_file():
            parts.append(holographic_import(tenant=tenant, path=store, actor=actor, scope=scope))
        parts.append(
            memory_files_import(
                tenant=tenant, memories_dir=hermes_home / "memories", actor=actor, scope=scope
            )
        )
    for part in parts:
        total.added += part.added
        total.exists += part.exists
        total.entities_linked += part.entities_linked
        total.sources += part.sources
    return total
