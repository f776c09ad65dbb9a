"""What a Hermes profile already remembers, read on the profile's machine and sent to Mnemosyne's
`facts/import` (JSON Lines) with the profile's key: no database, no Django.

- the holographic provider's `memory_store.db` (SQLite, read-only): each fact with its category,
  tags, trust and time; its helpful and retrieval counts and entity names go into the metadata
  (the server links entities with its own extractor);
- Hermes' built-in `memories/MEMORY.md` (the agent's notes: general facts tagged `memory`) and
  `memories/USER.md` (what it knows about the user: preferences tagged `user`), entries separated
  by a line holding only "§" (hermes-agent's tools/memory_tool.py).

The import is idempotent: a fact the tenant already has (same scope and text) counts as there.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx

from hermes_provider.client import tls_verify

CATEGORIES = ("user_pref", "project", "tool", "general")
MEMORY_FILES = {"MEMORY.md": ("general", "memory"), "USER.md": ("user_pref", "user")}
ENTRY_DELIMITER = "\n§\n"
BATCH = 5000  # lines per request (the server takes up to 10,000)


class ImportFailed(Exception):
    pass


def _holographic(path: Path) -> list[dict[str, Any]]:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            db.row_factory = sqlite3.Row
            facts = [dict(row) for row in db.execute("SELECT * FROM facts ORDER BY fact_id")]
            names: dict[int, list[str]] = {}
            for fact_id, name in db.execute(
                "SELECT fe.fact_id, e.name FROM fact_entities fe "
                "JOIN entities e ON e.entity_id = fe.entity_id ORDER BY e.entity_id"
            ):
                names.setdefault(fact_id, []).append(name)
    except sqlite3.Error as error:
        raise ImportFailed(f"{path} is not a holographic memory store ({error})") from None
    lines = []
    for row in facts:
        tags = [t.strip() for t in str(row.get("tags") or "").split(",") if t.strip()]
        line: dict[str, Any] = {
            "content": row["content"],
            "tags": tags[:20],
            "metadata": {
                "imported_from": "holographic",
                "holographic_id": row["fact_id"],
                "helpful_count": row.get("helpful_count") or 0,
                "retrieval_count": row.get("retrieval_count") or 0,
                "entities": names.get(row["fact_id"], []),
            },
        }
        if row.get("category") in CATEGORIES:
            line["category"] = row["category"]
        if row.get("trust_score") is not None:
            line["trust"] = min(1.0, max(0.0, float(row["trust_score"])))
        if row.get("created_at"):
            line["created_at"] = str(row["created_at"]).replace(" ", "T")
        lines.append(line)
    return lines


def _memory_file(path: Path, category: str, tag: str) -> list[dict[str, Any]]:
    raw = path.read_text(encoding="utf-8")
    return [
        {"content": entry.strip(), "category": category, "tags": [tag],
         "metadata": {"imported_from": f"hermes {path.name}"}}
        for entry in raw.split(ENTRY_DELIMITER) if entry.strip()
    ]  # fmt: skip


def profile_memories(hermes_home: Path) -> dict[str, list[dict[str, Any]]]:
    """The profile's memories by source, as `facts/import` lines (empty sources left out)."""
    found: dict[str, list[dict[str, Any]]] = {}
    store = hermes_home / "memory_store.db"
    if store.is_file():
        found["memory_store.db"] = _holographic(store)
    for name, (category, tag) in MEMORY_FILES.items():
        path = hermes_home / "memories" / name
        if path.is_file() and (lines := _memory_file(path, category, tag)):
            found[name] = lines
    return {source: lines for source, lines in found.items() if lines}


def memories_send(
    *,
    url: str,
    api_key: str,
    lines: list[dict[str, Any]],
    scope: str | None = None,
    ca_file: str = "",
) -> dict[str, int]:
    """Send the lines to `facts/import`; the server's counts (added, exists, restored, error)."""
    totals = {"added": 0, "exists": 0, "restored": 0, "error": 0}
    with httpx.Client(
        base_url=url.rstrip("/"), verify=tls_verify(ca_file), timeout=120,
        headers={"Authorization": f"Bearer {api_key}"},
    ) as http:  # fmt: skip
        for start in range(0, len(lines), BATCH):
            body = "\n".join(
                json.dumps({**line, **({"scope": scope} if scope else {})}, ensure_ascii=False)
                for line in lines[start : start + BATCH]
            )
            try:
                response = http.post(
                    "/api/v1/facts/import", content=body.encode(),
                    headers={"Content-Type": "application/x-ndjson"},
                )  # fmt: skip
            except httpx.HTTPError as error:
                raise ImportFailed(f"cannot reach {url} ({error})") from None
            if response.status_code != 200:
                raise ImportFailed(f"{url} answered HTTP {response.status_code}: "
                                   f"{response.text[:300]}")  # fmt: skip
            for status, count in response.json()["counts"].items():
                totals[status] = totals.get(status, 0) + count
    return totals
