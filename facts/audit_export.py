"""The audit log as files: CSV (safe to open in a spreadsheet) and JSON Lines."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from facts.audit_chain import Digest
from facts.selectors.audit import AuditEvent

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> str:
    """A CSV cell a spreadsheet will not run: text that looks like a formula gets a quote."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"'{text}" if text.startswith(_FORMULA_START) else text


_CSV_COLUMNS = ("source", "id", "at", "action", "actor", "fact_id", "target", "before", "after")


def _digest_fields(digest: Digest) -> dict[str, Any]:
    """The chain's digest when the export began, as the export's last row: `target` is what
    `mnemosyne audit verify TENANT --digest` takes."""
    return {
        "source": "digest", "id": digest.count, "at": digest.at.isoformat() if digest.at else "",
        "action": "", "actor": "", "fact_id": None, "target": str(digest), "before": None,
        "after": {"count": digest.count, "head": digest.head},
    }  # fmt: skip


def audit_csv_rows(events: Iterator[AuditEvent], digest: Digest | None = None) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(_CSV_COLUMNS)
    for event in events:
        writer.writerow(
            [
                event.source, event.id, event.at.isoformat(), _cell(event.action),
                _cell(event.actor), "" if event.fact_id is None else event.fact_id,
                _cell(event.target), _cell(event.before), _cell(event.after),
            ]
        )  # fmt: skip
        if buffer.tell() > 64 * 1024:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    if digest is not None:
        row = _digest_fields(digest)
        writer.writerow(["" if row[c] is None else _cell(row[c]) for c in _CSV_COLUMNS])
    yield buffer.getvalue()


def audit_jsonl_rows(events: Iterator[AuditEvent], digest: Digest | None = None) -> Iterator[str]:
    for event in events:
        row = vars(event) | {"at": event.at.isoformat()}
        yield json.dumps(row, ensure_ascii=False) + "\n"
    if digest is not None:
        yield json.dumps(_digest_fields(digest), ensure_ascii=False) + "\n"


# -- facts ---------------------------------------------------------------------------------------

FACT_COLUMNS = (
    "id", "kind", "content", "scope", "session_id", "position", "speaker", "category", "tags",
    "metadata", "trust_score", "status", "created_by", "created_at", "updated_at",
)  # fmt: skip


def _fact_row(fact: Any) -> dict[str, Any]:
    row = {column: getattr(fact, column) for column in FACT_COLUMNS}
    row["created_at"] = fact.created_at.isoformat()
    row["updated_at"] = fact.updated_at.isoformat()
    return row


def facts_csv_rows(facts: Iterator[Any]) -> Iterator[str]:
    """Facts as CSV, safe to open in a spreadsheet (tags and metadata as JSON)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(FACT_COLUMNS)
    for fact in facts:
        row = _fact_row(fact)
        writer.writerow(
            [row[c] if isinstance(row[c], int | float) and row[c] is not None else _cell(row[c])
             for c in FACT_COLUMNS]
        )  # fmt: skip
        if buffer.tell() > 64 * 1024:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def facts_jsonl_rows(facts: Iterator[Any]) -> Iterator[str]:
    """Facts as JSON Lines: one object per fact, with the API's field names."""
    for fact in facts:
        yield json.dumps(_fact_row(fact), ensure_ascii=False) + "\n"
