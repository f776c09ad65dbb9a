"""The OpenAPI schema is a contract with every client: it changes only on purpose. A change
shows here as a difference from tests/data/openapi.json; when it is meant, write the new schema
there (`MNEMOSYNE_WRITE_SCHEMA=1 pytest tests/test_openapi_schema.py`) and commit it with the
change."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db

STORED = Path(__file__).resolve().parent / "data" / "openapi.json"


def _dumped(schema: object) -> str:
    return json.dumps(schema, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_the_live_schema_is_the_stored_one(client) -> None:
    answer = client.get("/api/schema/?format=json")
    assert answer.status_code == 200
    live = _dumped(answer.json())
    if os.environ.get("MNEMOSYNE_WRITE_SCHEMA") == "1":
        STORED.write_text(live, encoding="utf-8")
    assert live == STORED.read_text(encoding="utf-8")
