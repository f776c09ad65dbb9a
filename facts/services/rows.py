"""What the writes of facts share: the content hash, the bulk insert with search vectors, the
audit snapshot, the row lock, a session's next turn position and the after-commit messages."""

from __future__ import annotations

import hashlib
import unicodedata
from typing import Any

import psycopg
from django.contrib.postgres.search import SearchVectorField
from django.db import connection, transaction
from django.db.models.expressions import RawSQL

from facts.models import Fact, Kind
from indexing.text import SEARCH_VECTOR_SQL, analyze
from tenants.errors import NotFound
from tenants.jobs import job_send_coalesced
from tenants.models import Tenant

# Rows per INSERT statement of a bulk write.
BULK_BATCH = 1000
# Fields an audit event snapshots.
_AUDITED = (
    "content", "kind", "scope", "category", "tags", "trust_score", "status", "session_id", "pinned",
)  # fmt: skip


def content_hash(content: str) -> str:
    """Equal for texts that differ only in Unicode form, case or spacing."""
    key = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    return hashlib.sha256(key.encode()).hexdigest()


# -- helpers ----------------------------------------------------------------------------------


def _snapshot(fact: Fact, fields: tuple[str, ...] = _AUDITED) -> dict[str, Any]:
    return {field: getattr(fact, field) for field in fields}


def _search_vector(content: str) -> RawSQL:
    """A text's search vector, for an UPDATE (new facts get theirs from `_facts_insert`)."""
    analyzed = analyze(content)
    # A constant statement; the text goes in as parameters.
    return RawSQL(SEARCH_VECTOR_SQL, (analyzed.latin, analyzed.han), SearchVectorField())  # noqa: S611


def _facts_insert(facts: list[Fact], *, skip_taken: bool = False) -> bool:
    """Insert new facts (one, or an import's or a bundle's many) with their search vectors,
    one statement per BULK_BATCH rows, and give each its id. `bulk_create` did the same but
    compiled a search vector expression for every row, half the importing process's time.

    A row whose fact (or turn position) is already stored raises IntegrityError; with
    `skip_taken` (one fact only), it is left out instead (ON CONFLICT DO NOTHING, after a
    concurrent writer's transaction has ended) and False is returned, the fact left without
    an id. A savepoint to catch the error cost the single add two more statements.

    The statement is written with PostgreSQL's own placeholders ($1, $2, ...) and sent through
    a raw cursor, which binds on the server: psycopg rewrites a statement with %s placeholders
    itself, and for one this long (too long for its cache) that took 0.40 s of the 0.46 s the
    importing process spent here for 2,000 facts."""
    fields = [
        f for f in Fact._meta.concrete_fields if not f.primary_key and f.name != "search_vector"
    ]
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
    width = len(fields) + 2  # the fields, then the search vector's two texts

    def row(first: int) -> str:
        values = [f"${first + n}" for n in range(len(fields))]
        search = SEARCH_VECTOR_SQL % (f"${first + len(fields)}", f"${first + len(fields) + 1}")
        return f"({', '.join(values)}, {search})"

    if skip_taken and len(facts) != 1:
        raise ValueError("skip_taken inserts one fact")
    conflict = "ON CONFLICT DO NOTHING " if skip_taken else ""
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.RawCursor(connection.connection) as cursor:
        for start in range(0, len(facts), BULK_BATCH):
            chunk = facts[start : start + BULK_BATCH]
            params: list[Any] = []
            for fact in chunk:
                params += [f.get_db_prep_save(f.pre_save(fact, True), connection) for f in fields]
                analyzed = analyze(fact.content)
                params += [analyzed.latin, analyzed.han]
            rows = ", ".join(row(1 + n * width) for n in range(len(chunk)))
            cursor.execute(
                # Columns of the model and placeholders only; every value is a parameter.
                f"INSERT INTO facts_fact ({columns}, search_vector) VALUES {rows} "  # noqa: S608
                f"{conflict}RETURNING id",
                params,
            )
            ids = cursor.fetchall()
            if not ids and skip_taken:
                return False
            for fact, (pk,) in zip(chunk, ids, strict=True):
                fact.pk = pk
                fact._state.adding = False
                fact._state.db = connection.alias
    return True


def _schedule_embedding(tenant: Tenant) -> None:
    """One embedding message per tenant and transaction, however many facts it adds (an import
    of 10,000 lines sends one; the task embeds every pending fact of the tenant in batches)."""
    _schedule_task(tenant, "facts.tasks.facts_embed_pending")


def _schedule_task(tenant: Tenant, name: str) -> None:
    """Send the task `name(tenant)`, which does all of the tenant's pending work of its kind,
    once the transaction commits: one message per tenant and transaction."""
    tenant_id = tenant.pk
    connection = transaction.get_connection()
    # Django drops a callback whose savepoint rolls back, so one still listed will run.
    if any(
        getattr(callback, "sends", None) == (name, tenant_id)
        for _savepoints, callback, _robust in connection.run_on_commit
    ):
        return

    def send() -> None:
        job_send_coalesced(name, tenant_id)

    send.sends = (name, tenant_id)  # type: ignore[attr-defined]
    # A lost message only delays the work: beat's sweeps find it anyway.
    transaction.on_commit(send, robust=True)


def _locked_fact(tenant: Tenant, fact_id: int) -> Fact:
    fact: Fact | None = (
        Fact.objects.for_tenant(tenant).select_for_update().filter(pk=fact_id).first()
    )
    if fact is None:
        raise NotFound("fact", fact_id)
    return fact


def _next_position(tenant: Tenant, session_id: str) -> int:
    with connection.cursor() as cursor:
        # Serialise appends to one session, so two turns never get the same position.
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"{tenant.pk}/{session_id}"]
        )
    last = (
        Fact.objects.for_tenant(tenant)
        .filter(kind=Kind.TURN, session_id=session_id, position__isnull=False)
        .order_by("-position")
        .values_list("position", flat=True)
        .first()
    )
    return 0 if last is None else last + 1
