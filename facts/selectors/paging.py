"""What the lists share: the page size and one cursor format (keyset pages)."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from facts.inputs import MAX_ID
from tenants.errors import InvalidInput

MAX_PAGE = 200
MAX_CURSOR_CHARS = 500  # a cursor as the API hands it out, with room to spare


def page_limit(limit: Any) -> int:
    """A page size: a whole number from 1 to MAX_PAGE."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInput("limit", f"must be a whole number from 1 to {MAX_PAGE}")
    return limit


def cursor_encode(*parts: str | int | float) -> str:
    """A cursor: the sort key of the last row of a page."""
    return base64.urlsafe_b64encode(json.dumps(parts).encode()).decode()


def cursor_invalid() -> InvalidInput:
    return InvalidInput("cursor", "is not a cursor this list gave out")


def cursor_decode(cursor: str, shape: tuple[type | tuple[type, ...], ...]) -> list[Any]:
    """The parts of a cursor `cursor_encode` made, each checked against its type in `shape`;
    a 400 for anything else (a hand-made cursor must not reach PostgreSQL)."""
    try:
        parts = json.loads(base64.urlsafe_b64decode(cursor.encode()).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        parts = None
    if not isinstance(parts, list) or len(parts) != len(shape):
        raise cursor_invalid()
    if not all(
        isinstance(p, t) and not isinstance(p, bool) for p, t in zip(parts, shape, strict=True)
    ):
        raise cursor_invalid()
    return parts


def cursor_id(ident: int) -> int:
    """A row id from a cursor, in range for PostgreSQL's bigint."""
    if not 0 < ident <= MAX_ID:
        raise cursor_invalid()
    return ident


def cursor_moment(stamp: str) -> datetime:
    """A time from a cursor: ISO 8601 with its offset (PostgreSQL compares aware times)."""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        raise cursor_invalid() from None
    if moment.tzinfo is None:
        raise cursor_invalid()
    return moment
