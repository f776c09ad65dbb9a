"""Likely aliases: two entities of a tenant that are probably one person, for an admin to
accept (a merge, through `facts.curation.entity_merge`) or dismiss. Nothing is merged here.

Two names are suggested as one person when facts in a common scope name both and:

- Chinese: one is a familiar form of the other's surname, 老王 / 小王 / 王总 / 王经理 beside the
  full name 王建国 (or 老王 beside 王总: an older colleague and the boss are often one man; 小王
  is younger and is paired only with a full name);
- Latin script: one is the other's first name ("Bob" / "Bob Smith"), or a title and its last
  name ("Dr. Smith" / "Bob Smith").

A dismissed pair is remembered (an `alias_dismiss` event in the entity's history and the
tenant's audit log) and not suggested again.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from django.db import transaction

from facts.curation import entity_event_record, entity_locked
from facts.extract.chinese import _SURNAMES, _TITLES
from facts.extract.english import _TITLE_WORDS
from facts.models import Entity, EntityAction, EntityEvent, EntityType, FactEntity, Status
from tenants.actors import Actor
from tenants.errors import InvalidInput
from tenants.models import Tenant
from tenants.scope import tenant_scope

# The entities looked at: the tenant's most named people (a suggestion about someone named once
# is rarely worth an admin's time, and the work stays bounded in a large tenant).
MAX_PEOPLE = 3000
_HAN_NAME = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff]{2,4}$")


@dataclass(frozen=True)
class AliasSuggestion:
    """`other` is probably `entity` under another name; accepting merges `other` into it."""

    entity: Entity
    other: Entity
    reason: str  # "surname" | "first_name" | "title"
    scopes: tuple[str, ...]  # the scopes where facts name both


def _surname(name: str) -> str | None:
    for size in (2, 1):
        if len(name) > size and name[:size] in _SURNAMES:
            return name[:size]
    return None


def _han_forms(name: str) -> tuple[str, str] | None:
    """(form, surname) of a Chinese person's name: form "old" (老王), "young" (小王), "title"
    (王总, 欧阳经理) or "full" (王建国); None for anything else."""
    if not _HAN_NAME.match(name):
        return None
    if len(name) == 2 and name[0] in "老小" and name[1] in _SURNAMES:
        return ("old" if name[0] == "老" else "young", name[1])
    surname = _surname(name)
    if surname is None:
        return None
    rest = name[len(surname) :]
    if rest in _TITLES:
        return ("title", surname)
    return ("full", surname)


def _latin_forms(name: str) -> tuple[str, str] | None:
    """("first", first name), ("title", last name) or ("full", "first last") of a Latin
    person's name, casefolded; None for anything else."""
    words = [w.strip(".").casefold() for w in name.split()]
    if not words or not all(w.isalpha() for w in words):
        return None
    if len(words) == 1:
        return ("first", words[0])
    if len(words) == 2 and words[0] in _TITLE_WORDS:
        return ("title", words[1])
    if words[0] in _TITLE_WORDS:
        return None
    return ("full", f"{words[0]} {words[-1]}")


def _pairs(people: list[Entity]) -> list[tuple[Entity, Entity, str]]:
    """(kept, merged in, reason) for every pair of names the rules above connect."""
    han: dict[str, dict[str, list[Entity]]] = defaultdict(lambda: defaultdict(list))
    latin_full: dict[str, list[Entity]] = defaultdict(list)
    latin_first: dict[str, list[Entity]] = defaultdict(list)
    latin_title: dict[str, list[Entity]] = defaultdict(list)
    for entity in people:
        if (form := _han_forms(entity.name)) is not None:
            han[form[1]][form[0]].append(entity)
        elif (latin := _latin_forms(entity.name)) is not None:
            kind, key = latin
            if kind == "full":
                first, last = key.split(" ")
                latin_full[first].append(entity)
                latin_full[f"~{last}"].append(entity)
            else:
                (latin_first if kind == "first" else latin_title)[key].append(entity)
    found: list[tuple[Entity, Entity, str]] = []
    for forms in han.values():
        for short in ("old", "young", "title"):
            found += [(f, s, "surname") for s in forms[short] for f in forms["full"]]
        found += [(t, o, "surname") for o in forms["old"] for t in forms["title"]]
    for first, entities in latin_first.items():
        found += [(f, e, "first_name") for e in entities for f in latin_full.get(first, [])]
    for last, entities in latin_title.items():
        found += [(f, e, "title") for e in entities for f in latin_full.get(f"~{last}", [])]
    return found


def _pair_key(a: Entity, b: Entity) -> frozenset[str]:
    return frozenset((a.normalized, b.normalized))


def _dismissed(tenant: Tenant) -> set[frozenset[str]]:
    rows = EntityEvent.objects.for_tenant(tenant).filter(action=EntityAction.ALIAS_DISMISS)
    found = set()
    for after in rows.values_list("after", flat=True):
        names = (after or {}).get("names") or []
        if len(names) == 2:
            found.add(frozenset(names))
    return found


def alias_suggestions(
    *, tenant: Tenant, entity_id: int | None = None, limit: int = 20
) -> list[AliasSuggestion]:
    """The tenant's likely aliases, the pairs named together in the most scopes first; with
    `entity_id`, only the pairs that involve that entity."""
    with tenant_scope(tenant):
        people = list(
            Entity.objects.for_tenant(tenant)
            .filter(type=EntityType.PERSON)
            .order_by("-active_facts", "id")[:MAX_PEOPLE]
        )
        pairs = _pairs(people)
        if entity_id is not None:
            pairs = [p for p in pairs if entity_id in (p[0].pk, p[1].pk)]
        if not pairs:
            return []
        ids = {e.pk for pair in pairs for e in pair[:2]}
        scopes: dict[int, set[str]] = defaultdict(set)
        for ident, scope in (
            FactEntity.objects.for_tenant(tenant)
            .filter(entity_id__in=ids, fact__status=Status.ACTIVE)
            .values_list("entity_id", "fact__scope")
            .distinct()
        ):
            scopes[ident].add(scope)
        dismissed = _dismissed(tenant)
    found = []
    for kept, merged, reason in pairs:
        shared = scopes[kept.pk] & scopes[merged.pk]
        if shared and _pair_key(kept, merged) not in dismissed:
            found.append(AliasSuggestion(kept, merged, reason, tuple(sorted(shared))))
    found.sort(key=lambda s: (-len(s.scopes), -s.other.active_facts, s.entity.pk, s.other.pk))
    return found[:limit]


def alias_dismiss(*, tenant: Tenant, entity_id: int, other_id: int, actor: Actor) -> None:
    """Remember that `other_id` is not `entity_id` under another name: the pair is not
    suggested again. Recorded in the entity's history and the tenant's audit log."""
    if entity_id == other_id:
        raise InvalidInput("other", "an entity is always its own alias")
    with tenant_scope(tenant), transaction.atomic():
        first, second = sorted((entity_id, other_id))
        locked = {e.pk: e for e in (entity_locked(tenant, first), entity_locked(tenant, second))}
        entity, other = locked[entity_id], locked[other_id]
        names = sorted(_pair_key(entity, other))
        entity_event_record(tenant, entity.pk, EntityAction.ALIAS_DISMISS, actor, None,
               {"other": {"id": other.pk, "name": other.name}, "names": names})  # fmt: skip
