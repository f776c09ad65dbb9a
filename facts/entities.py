"""Linking facts to the entities they name.

The extractor is replaceable: MNEMOSYNE_ENTITY_EXTRACTOR names a function
`(text: str) -> list[FoundEntity]` by dotted path; empty means no extraction. An extractor that
also takes a keyword `dictionary` (as the default one does) gets the tenant's user dictionary
and uses it inside its own rules; for one that does not, the dictionary's terms are found in the
text here and take precedence over what the extractor found at the same place.
"""

from __future__ import annotations

import inspect
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from facts.models import DictionaryEntry, Entity, EntityRole, EntityType, Fact, FactEntity
from tenants.models import Tenant


@dataclass(frozen=True)
class FoundEntity:
    name: str
    type: str = EntityType.OTHER
    role: str = EntityRole.CONTEXT


Extractor = Callable[..., list[FoundEntity]]


def entity_normalize(name: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class DictionaryMatch:
    start: int
    end: int
    name: str  # the term as the dictionary spells it
    type: str


@dataclass(frozen=True)
class Dictionary:
    """A tenant's user dictionary: terms (project, product, people's names) that extraction
    takes as one name each, of the given type. Matched case-insensitively; a Latin term only as
    whole words ("Atlas" is not found in "Atlassian")."""

    terms: tuple[tuple[str, str], ...] = ()  # (term, type), longest first

    @property
    def pattern(self) -> re.Pattern[str] | None:
        return _dictionary_pattern(self.terms)

    def matches(self, text: str) -> list[DictionaryMatch]:
        """Leftmost-longest, non-overlapping occurrences of the terms in `text`."""
        pattern = self.pattern
        if pattern is None or not text:
            return []
        by_key = {entity_normalize(term): (term, kind) for term, kind in self.terms}
        found = []
        for match in pattern.finditer(text):
            term, kind = by_key.get(entity_normalize(match.group()), (match.group(), "other"))
            found.append(DictionaryMatch(match.start(), match.end(), term, kind))
        return found

    def __bool__(self) -> bool:
        return bool(self.terms)


@cache
def _dictionary_pattern(terms: tuple[tuple[str, str], ...]) -> re.Pattern[str] | None:
    if not terms:
        return None
    parts = []
    for term, _ in terms:
        key = r"\s+".join(re.escape(word) for word in unicodedata.normalize("NFKC", term).split())
        # Whole words for Latin terms; Chinese has no spaces to bound a word.
        left = "" if _HAN.match(term[0]) else r"(?<![\w])"
        right = "" if _HAN.match(term[-1]) else r"(?![\w])"
        parts.append(f"{left}{key}{right}")
    return re.compile("|".join(parts), re.IGNORECASE)


EMPTY_DICTIONARY = Dictionary()


def entity_dictionary(*, tenant: Tenant | int) -> Dictionary:
    """The tenant's user dictionary. Caller holds the tenant scope."""
    rows = DictionaryEntry.objects.for_tenant(tenant).values_list("term", "type")
    terms = sorted(rows, key=lambda row: (-len(row[0]), row[0]))
    return Dictionary(terms=tuple(terms)) if terms else EMPTY_DICTIONARY


@cache
def _load_extractor(path: str) -> Extractor | None:
    return import_string(path) if path else None


def entity_extractor() -> Extractor | None:
    return _load_extractor(getattr(settings, "MNEMOSYNE_ENTITY_EXTRACTOR", ""))


@cache
def _takes_dictionary(extractor: Extractor) -> bool:
    try:
        return "dictionary" in inspect.signature(extractor).parameters
    except (TypeError, ValueError):
        return False


def extraction_signature() -> str:
    """Which extractor links facts now: its dotted path and the version of its rules (a module
    constant EXTRACTOR_VERSION). When this changes, existing links are re-made."""
    path = getattr(settings, "MNEMOSYNE_ENTITY_EXTRACTOR", "")
    extractor = entity_extractor()
    module = inspect.getmodule(extractor) if extractor is not None else None
    version = getattr(module, "EXTRACTOR_VERSION", "")
    return f"{path}@{version}"[:200]


def entities_found(text: str, *, dictionary: Dictionary = EMPTY_DICTIONARY) -> list[FoundEntity]:
    """The entities in `text` by the configured extractor and the tenant's dictionary."""
    extractor = entity_extractor()
    if extractor is None or not isinstance(text, str):
        return []
    if not dictionary or _takes_dictionary(extractor):
        found: list[Any] = extractor(text, dictionary=dictionary) if dictionary else extractor(text)
        return list(found)
    # An extractor that knows no dictionary: its terms win where they overlap its names.
    matches = dictionary.matches(text)
    forced = {entity_normalize(m.name) for m in matches}
    spans = [(m.start, m.end) for m in matches]
    own = []
    folded = text.casefold()
    for entity in extractor(text):
        key = entity_normalize(entity.name)
        at = folded.find(entity.name.casefold())
        inside = at >= 0 and any(s < at + len(entity.name) and at < e for s, e in spans)
        if key not in forced and not inside:
            own.append(entity)
    terms = [FoundEntity(name=m.name, type=m.type) for m in matches]
    merged = list({entity_normalize(e.name): e for e in [*terms, *own]}.values())
    return [
        FoundEntity(e.name, e.type, EntityRole.SUBJECT if i == 0 else EntityRole.CONTEXT)
        for i, e in enumerate(merged)
    ]


def entity_resolve(*, tenant: Tenant, name: str, type: str = EntityType.OTHER) -> Entity:
    """The tenant's entity called `name` (by name or alias), created when there is none."""
    key = entity_normalize(name)
    return entities_resolve(tenant=tenant, names={key: (name, type)})[key]


def entities_resolve(*, tenant: Tenant, names: dict[str, tuple[str, str]]) -> dict[str, Entity]:
    """The tenant's entity for each normalised name (a name before an alias), created with the
    given (name, type) where there is none; three statements however many names."""
    entities = {e.normalized: e for e in Entity.objects.for_tenant(tenant).filter(
        normalized__in=list(names))}  # fmt: skip
    missing = [key for key in names if key not in entities]
    if missing:
        for entity in (
            Entity.objects.for_tenant(tenant).filter(aliases__overlap=missing).order_by("pk")
        ):
            for alias in entity.aliases:
                if alias in names:
                    entities.setdefault(alias, entity)
        missing = [key for key in names if key not in entities]
    if missing:
        Entity.objects.bulk_create(
            [Entity(tenant=tenant, normalized=key, name=names[key][0].strip()[:200],
                    type=names[key][1]) for key in missing],
            ignore_conflicts=True,  # made a moment ago by another writer: read below
        )  # fmt: skip
        entities.update(
            (e.normalized, e)
            for e in Entity.objects.for_tenant(tenant).filter(normalized__in=missing)
        )
    return entities


def facts_link_new_entities(*, tenant: Tenant, facts: list[Fact]) -> None:
    """Link facts stored a moment ago (no links yet) to the entities in their text, as
    `fact_link_entities` would one by one, in a few statements. Caller holds the tenant scope."""
    dictionary = entity_dictionary(tenant=tenant)
    names: dict[str, tuple[str, str]] = {}
    found_in: list[list[FoundEntity]] = []
    for fact in facts:
        found = [
            f for f in entities_found(fact.content, dictionary=dictionary)
            if entity_normalize(f.name)
        ]  # fmt: skip
        for f in found:
            names.setdefault(entity_normalize(f.name), (f.name, f.type))
        found_in.append(found)
    entities = entities_resolve(tenant=tenant, names=names)
    links = []
    for fact, found in zip(facts, found_in, strict=True):
        roles: dict[int, str] = {}
        for f in found:
            roles.setdefault(entities[entity_normalize(f.name)].pk, f.role)
        links += [FactEntity(tenant=tenant, fact=fact, entity_id=entity_id, role=role)
                  for entity_id, role in roles.items()]  # fmt: skip
    FactEntity.objects.bulk_create(links, ignore_conflicts=True, batch_size=1000)


def fact_link_entities(
    *,
    tenant: Tenant,
    fact: Fact,
    dictionary: Dictionary | None = None,
    types_found: Counter[tuple[int, str]] | None = None,
) -> list[Entity]:
    """Link `fact` to the entities the extractor finds in it, and only to those: links its
    text no longer supports are removed (an edited fact, a changed dictionary). Caller holds
    the tenant scope. `types_found`, when given, counts (entity id, type found) for each
    entity the fact names, so a re-link can bring stored entities' types up to date."""
    if dictionary is None:
        dictionary = entity_dictionary(tenant=tenant)
    found = [f for f in entities_found(fact.content, dictionary=dictionary)
             if entity_normalize(f.name)]  # fmt: skip
    names: dict[str, tuple[str, str]] = {}
    for f in found:
        names.setdefault(entity_normalize(f.name), (f.name, f.type))
    entities = entities_resolve(tenant=tenant, names=names) if names else {}
    linked: dict[int, tuple[Entity, str]] = {}
    for f in found:
        entity = entities[entity_normalize(f.name)]
        linked.setdefault(entity.pk, (entity, f.role))
        if types_found is not None:
            types_found[(entity.pk, f.type)] += 1
    links = FactEntity.objects.for_tenant(tenant).filter(fact=fact)
    existing = dict(links.values_list("entity_id", "role"))
    stale = set(existing) - set(linked)
    if stale:
        links.filter(entity_id__in=stale).delete()
    FactEntity.objects.bulk_create(
        [
            FactEntity(tenant=tenant, fact=fact, entity=entity, role=role)
            for entity_id, (entity, role) in linked.items()
            if entity_id not in existing
        ],
        ignore_conflicts=True,
    )
    for entity_id, (_, role) in linked.items():
        if entity_id in existing and existing[entity_id] != role:
            links.filter(entity_id=entity_id).update(role=role)
    return [entity for entity, _ in linked.values()]
