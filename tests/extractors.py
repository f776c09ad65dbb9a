"""A tiny entity extractor for tests: capitalised words are people."""

from __future__ import annotations

import re

from facts.entities import FoundEntity


def capitalised_people(text: str) -> list[FoundEntity]:
    return [FoundEntity(name=m, type="person") for m in re.findall(r"\b[A-Z][a-z]+\b", text)]
