"""What PostgreSQL can store: checked once, before a value reaches the database.

Text columns and jsonb refuse NUL characters, UTF-8 cannot encode lone surrogates (JSON may carry
them as "\\ud800"), and jsonb refuses infinite numbers (JSON may carry them as 1e400). Each would
surface as a database error; here it is a clear InvalidInput naming the field. And the one check
that a value is one of its choices.
"""

from __future__ import annotations

import math
from typing import Any

from tenants.errors import InvalidInput

_MAX_DEPTH = 32


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "must not contain NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (it holds a lone surrogate)"
    return None


def check_storable(value: Any, field: str, depth: int = 0) -> None:
    """Raise InvalidInput(field...) when `value` (JSON-like) holds something unstorable."""
    if depth > _MAX_DEPTH:
        raise InvalidInput(field, f"is nested deeper than {_MAX_DEPTH} levels")
    if isinstance(value, str):
        problem = _text_problem(value)
        if problem:
            raise InvalidInput(field, problem)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(field, "must be a finite number")
    elif isinstance(value, dict):
        for key, item in value.items():
            key_text = str(key)
            problem = _text_problem(key_text)
            if problem:
                raise InvalidInput(field, f"has a key that {problem}")
            check_storable(item, f"{field}.{key_text}" if field else key_text, depth + 1)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            check_storable(item, f"{field}[{index}]", depth + 1)


def check_choice(field: str, value: str | None, allowed: list[str]) -> str | None:
    """`value` when it is None or one of `allowed`; else InvalidInput naming `field`."""
    if value is not None and value not in allowed:
        raise InvalidInput(field, f"must be one of {', '.join(allowed)}")
    return value
