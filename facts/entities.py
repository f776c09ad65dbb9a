"""Linking facts to the entities they name.

The extractor is replaceable: MNEMOSYNE_ENTITY_EXTRACTOR names a function
`(text: str) -> list[FoundEntity]` by dotted path; empty means no extraction.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.utils.module_loading import import_string

from facts.models import Entity, EntityRole, EntityType, Fact, FactEntity
from tenants.models import Tenant


@dataclass(frozen=True)
class FoundEntity:
    name: str
    type: str = EntityType.OTHER
    role: str = EntityRole.CONTEXT


Extractor = Callable[[str], list[FoundEntity]]


def entity_normalize(name: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


@cache
def _load_extractor(path: str) -> Extractor | None:
    return import_string(path) if path else None


def entity_extractor() -> Extractor | None:
    return _load_extractor(getattr(settings, "MNEMOSYNE_ENTITY_EXTRACTOR", ""))


def entity_resolve(*, tenant: Tenant, name: str, type: str = EntityType.OTHER) -> Entity:
    """The tenant's entity called `name` (by name or alias), created when there is none."""
    key = entity_normalize(name)
    existing = (
        Entity.objects.for_tenant(tenant).filter(normalized=key).first()
        or Entity.objects.for_tenant(tenant).filter(aliases__contains=[key]).first()
    )
    if existing is not None:
        return existing
    entity, _ = Entity.objects.for_tenant(tenant).get_or_create(
        normalized=key,
        defaults={"tenant": tenant, "name": name.strip()[:200], "type": type},
    )
    return entity


def fact_link_entities(*, tenant: Tenant, fact: Fact) -> list[Entity]:
    """Link `fact` to the entities the extractor finds in it. Caller holds the tenant scope."""
    extractor = entity_extractor()
    if extractor is None:
        return []
    linked: list[Entity] = []
    for found in extractor(fact.content):
        if not entity_normalize(found.name):
            continue
        entity = entity_resolve(tenant=tenant, name=found.name, type=found.type)
        FactEntity.objects.for_tenant(tenant).get_or_create(
            fact=fact, entity=entity, defaults={"tenant": tenant, "role": found.role}
        )
        linked.append(entity)
    return linked
