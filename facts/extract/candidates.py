"""What the Chinese and the English rules share: a candidate name, the entity types they give,
the Han characters, and how long a name may be."""

from __future__ import annotations

import re
from dataclasses import dataclass

from facts.models import EntityType

PERSON = str(EntityType.PERSON)
PLACE = str(EntityType.PLACE)
ORGANIZATION = str(EntityType.ORGANIZATION)
OTHER = str(EntityType.OTHER)
PRODUCT = str(EntityType.PRODUCT)

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_RUN = re.compile(f"[{_HAN}]+")

# Longer "names" are runs of capitalised text (headings, shouting, garbage), not names.
_MAX_NAME_WORDS = 8
_MAX_NAME_CHARS = 80


@dataclass(slots=True)
class _Candidate:
    start: int
    name: str
    type: str
    sure: bool = True  # False: the type is a guess that facts.entity_types settles
