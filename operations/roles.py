"""The two database roles: the owner (runs migrations, owns every table and the functions that
read across tenants) and the runtime role (web, workers, beat), which owns nothing.

The runtime role gets, after every `migrate`: SELECT, INSERT, UPDATE, DELETE on the tables,
only SELECT and INSERT on the append-only audit tables, only SELECT on the audit chain's heads
(the owner's trigger writes them), USAGE on the sequences, EXECUTE on the
`mnemosyne_*` functions; default privileges give it the same on tables made later. It never gets
TRUNCATE (row-level security does not apply to it), REFERENCES or TRIGGER.

`as_owner()` connects the default database as the owner for what runs inside it (`migrate`);
`role_problems()` names what lets the connected role lift tenant isolation (for `/healthz` and a
system check).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from django.db.backends.utils import CursorWrapper

_CREDENTIALS = ("USER", "PASSWORD", "HOST", "PORT", "OPTIONS")
_owner_depth = 0


def owner_credentials() -> dict[str, Any]:
    return {k: settings.MNEMOSYNE_DATABASE_OWNER[k] for k in _CREDENTIALS}


def runtime_credentials() -> dict[str, Any]:
    return {k: settings.MNEMOSYNE_DATABASE_RUNTIME[k] for k in _CREDENTIALS}


def separate_roles() -> bool:
    """False when the owner is the runtime role itself (a set-up of the previous release)."""
    return owner_credentials()["USER"] != runtime_credentials()["USER"]


def connect_as(credentials: dict[str, Any], alias: str = "default") -> None:
    """Point the connection `alias` at other credentials (same database); it reconnects."""
    connection = connections[alias]
    connection.close()
    connection.settings_dict.update(credentials)


@contextmanager
def as_owner(alias: str = "default") -> Iterator[None]:
    """Run the body connected as the owner role, then as the runtime role again."""
    global _owner_depth
    connect_as(owner_credentials(), alias)
    _owner_depth += 1
    try:
        yield
    finally:
        _owner_depth -= 1
        if not _owner_depth:
            connect_as(runtime_credentials(), alias)


def owner_connected() -> bool:
    return _owner_depth > 0


# -- privileges ----------------------------------------------------------------------------------

# The tables whose rows may be added and read, never changed or removed (their trigger says so
# to the owner too; the runtime role is not even granted UPDATE or DELETE).
_AUDIT_TABLES = """
SELECT DISTINCT c.relname FROM pg_trigger t
  JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
 WHERE p.proname IN ('mnemosyne_append_only', 'mnemosyne_factevent_guard',
                     'mnemosyne_append_only_record')
   AND c.relnamespace = current_schema()::regnamespace
 ORDER BY 1
"""

# Tables only the owner's functions write: the head of each tenant's audit chain (tenants 0008),
# which the trigger that chains audit rows moves. The runtime role reads it.
_OWNER_WRITTEN = ("tenants_auditchainhead",)

# The cross-tenant functions (tenants/migrations/0006_database_roles.py); not PUBLIC's to run.
_DEFINER_FUNCTIONS = """
SELECT p.oid::regprocedure::text FROM pg_proc p
 WHERE p.prosecdef AND p.pronamespace = current_schema()::regnamespace
   AND p.proname LIKE 'mnemosyne\\_%'
"""


def audit_tables(cursor: CursorWrapper) -> list[str]:
    cursor.execute(_AUDIT_TABLES)
    return [row[0] for row in cursor.fetchall()]


def roles_grant(cursor: CursorWrapper, *, runtime: str) -> None:
    """Give the runtime role what the application needs and nothing more. Idempotent; run by the
    owner after every migrate."""
    from psycopg import sql

    role = sql.Identifier(runtime)
    cursor.execute("SELECT current_schema()")
    schema = sql.Identifier(cursor.fetchone()[0])
    statements = [
        sql.SQL("REVOKE CREATE ON SCHEMA {} FROM PUBLIC"),
        sql.SQL("GRANT USAGE ON SCHEMA {} TO {}"),
        sql.SQL("REVOKE TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA {} FROM {}"),
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} TO {}"),
        sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {} TO {}"),
        sql.SQL(
            "ALTER DEFAULT PRIVILEGES IN SCHEMA {} "
            "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {}"
        ),
        sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA {} GRANT USAGE, SELECT ON SEQUENCES TO {}"),
    ]
    for statement in statements:
        cursor.execute(statement.format(schema, role))
    for table in audit_tables(cursor):
        cursor.execute(
            sql.SQL("REVOKE UPDATE, DELETE ON {} FROM {}").format(sql.Identifier(table), role)
        )
    cursor.execute(
        "SELECT c.relname FROM pg_class c WHERE c.relname = ANY(%s) "
        "AND c.relnamespace = current_schema()::regnamespace",
        [list(_OWNER_WRITTEN)],
    )
    for (table,) in cursor.fetchall():
        cursor.execute(
            sql.SQL("REVOKE INSERT, UPDATE, DELETE ON {} FROM {}").format(
                sql.Identifier(table), role
            )
        )
    cursor.execute(_DEFINER_FUNCTIONS)
    for (function,) in cursor.fetchall():
        cursor.execute(
            sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(sql.SQL(function), role)
        )


def grant_after_migrate(using: str = "default", **_: Any) -> None:
    """post_migrate: once the owner has migrated, give the runtime role its privileges."""
    if not separate_roles():
        return
    connection = connections[using]
    if connection.settings_dict["USER"] != owner_credentials()["USER"]:
        return  # a flush in a test, as the runtime role: nothing to grant
    with transaction.atomic(using=using), connection.cursor() as cursor:
        roles_grant(cursor, runtime=runtime_credentials()["USER"])


# -- checks --------------------------------------------------------------------------------------


def tenant_tables() -> list[str]:
    """The table of every tenant-owned model, from the model registry."""
    from django.apps import apps

    from tenants.models import TenantOwned

    return sorted(
        model._meta.db_table
        for model in apps.get_models()
        if issubclass(model, TenantOwned) and not model._meta.proxy
    )


def role_problems(cursor: CursorWrapper) -> list[str]:
    """What lets the connected role lift tenant isolation: superuser or BYPASSRLS, or owning (or
    being a member of the owner of) a tenant table. Empty when there is nothing."""
    cursor.execute(
        "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
    )
    role, superuser, bypass = cursor.fetchone()
    problems = []
    if superuser or bypass:
        what = "a superuser" if superuser else "BYPASSRLS"
        problems.append(
            f"the role {role} is {what}, so row-level security does not isolate tenants: "
            "connect as an ordinary role"
        )
    cursor.execute(
        "SELECT c.relname FROM pg_class c WHERE c.relname = ANY(%s) "
        "AND c.relnamespace = current_schema()::regnamespace "
        "AND pg_has_role(current_user, c.relowner, 'MEMBER') ORDER BY 1",
        [tenant_tables()],
    )
    owned = [row[0] for row in cursor.fetchall()]
    if owned:
        shown = ", ".join(owned[:5]) + (f" and {len(owned) - 5} more" if len(owned) > 5 else "")
        problems.append(
            f"the role {role} owns tenant tables ({shown}), so it could turn row-level security "
            "off: web and workers must connect as a role that owns nothing, migrations as the "
            "owner (DATABASE_OWNER_URL; docs/database-roles.md)"
        )
    return problems
