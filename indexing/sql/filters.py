"""Which facts recall may return (`Filters`, as SQL), and the columns every channel's
candidates bring with them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from indexing.language import SQL_HAN
from tenants.scope import current_scope_limit, scope_sql, scopes_sql

# A value passed to cursor.execute.
SqlValue = str | int | float | datetime | list[str] | list[int] | list[float] | None


@dataclass(frozen=True)
class Filters:
    """Which facts recall may return. Status is always active. Each channel's candidate query
    applies them, so that facts they leave out never take a place among the candidates."""

    scope_prefix: str = ""
    kind: str | None = None
    category: str | None = None
    min_trust: float = 0.0
    # Any of these scopes (with what lies under each, or, like scope_prefix, only themselves
    # when scope_exact).
    scopes: tuple[str, ...] = ()
    scope_exact: bool = False
    metadata: str | None = None  # a JSON object the fact's metadata must contain
    since: datetime | None = None  # created at or after
    until: datetime | None = None  # created before

    def sql(self) -> tuple[str, list[SqlValue]]:
        clauses = ["f.status = 'active'", "f.trust_score >= %s"]
        params: list[SqlValue] = [self.min_trust]
        for wanted in ((self.scope_prefix,) if self.scope_prefix else (), self.scopes):
            if wanted:
                clause, values = scopes_sql(wanted, "f.scope", exact=self.scope_exact)
                clauses.append(clause)
                params += cast("list[SqlValue]", values)
        limit = current_scope_limit()
        if limit:
            clause, values = scope_sql(limit, "f.scope")
            clauses.append(clause)
            params += cast("list[str]", values)  # the LIKE condition's two strings
        if self.kind:
            clauses.append("f.kind = %s")
            params.append(self.kind)
        if self.category:
            clauses.append("f.category = %s")
            params.append(self.category)
        if self.metadata is not None:
            clauses.append("f.metadata @> %s::jsonb")
            params.append(self.metadata)
        if self.since is not None:
            clauses.append("f.created_at >= %s")
            params.append(self.since)
        if self.until is not None:
            clauses.append("f.created_at < %s")
            params.append(self.until)
        return " AND ".join(clauses), params


# What fusion needs of a fact, returned with each candidate so that no second query fetches it;
# "han" (the content holds a Han character: the fact is Chinese) is computed from the content.
FACT_COLUMNS = ("kind", "session_id", "position", "speaker", "trust_score", "created_at", "han")
# kind, session_id, position, speaker, trust_score, created_at, han
FactColumns = tuple[str, str, int | None, str, float, datetime, bool]
Candidate = tuple[int, float, FactColumns]  # (id, channel score, FACT_COLUMNS)


# The columns Filters reads that FACT_COLUMNS does not hold.
_FILTERED = "f.status, f.scope, f.category"


def _filtered(filters: Filters) -> str:
    """_FILTERED, and the metadata when the filters read it (a recall without a metadata
    filter does not carry each candidate's metadata through the vector scan)."""
    return _FILTERED + (", f.metadata" if filters.metadata is not None else "")


def _columns(alias: str, *, table: bool = False) -> str:
    """The columns as selected from the fact table itself (`table`) or from a query that
    already selected them."""
    return ", ".join(
        f"({alias}.content ~ '{SQL_HAN}') AS han" if table and column == "han" else
        f"{alias}.{column}"
        for column in FACT_COLUMNS
    )  # fmt: skip


def _candidates(rows: Sequence[tuple[Any, ...]]) -> list[Candidate]:
    return [(row[0], float(row[1]), tuple(row[2:])) for row in rows]
