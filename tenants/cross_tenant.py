"""The few reads (and one delete) that span tenants, through the database's own functions.

The runtime role sees one tenant at a time: row-level security admits only the rows of the
tenant `tenant_scope` names. What must look across tenants (which tenant an API key or a sign-up
link belongs to, a user's tenants, which tenants beat's sweeps must visit, deleting a whole
tenant) calls a SECURITY DEFINER function owned by the owner role
(tenants/migrations/0006_database_roles.py), which returns only what the caller needs and keeps
the product's rules itself (docs/database-roles.md lists them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection


@dataclass(frozen=True)
class KeyLookup:
    """What verifying an API key's secret needs; the key itself is then read in its tenant."""

    key_id: int
    tenant_id: int
    secret_hash: str
    previous_secret_hash: str
    previous_valid_until: datetime | None


def apikey_lookup(*, prefix: str) -> KeyLookup | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM mnemosyne_apikey_lookup(%s)", [prefix])
        row = cursor.fetchone()
    return KeyLookup(*row) if row else None


def invitation_lookup(*, token_hash: str) -> tuple[int, int] | None:
    """(invitation id, tenant id) of the sign-up link with this token hash."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM mnemosyne_invitation_lookup(%s)", [token_hash])
        row = cursor.fetchone()
    return (row[0], row[1]) if row else None


def invitations_for(*, username: str) -> list[tuple[int, int]]:
    """(invitation id, tenant id) of the open invitations addressed to this username."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM mnemosyne_invitations_for(%s)", [username])
        return [(row[0], row[1]) for row in cursor.fetchall()]


def user_tenants(*, user_id: int) -> dict[int, str]:
    """The tenants the user is a member of: tenant id -> role."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tenant_id, role FROM mnemosyne_user_tenants(%s)", [user_id])
        return dict(cursor.fetchall())


def tenants_unembedded(*, model: str) -> list[int]:
    """Tenants with active facts whose newest vector is not of `model` (or who have none)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM mnemosyne_tenants_unembedded(%s)", [model])
        return [row[0] for row in cursor.fetchall()]


def tenants_unchecked() -> list[int]:
    """Tenants with embedded facts stored after their last conflict check."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM mnemosyne_tenants_unchecked()")
        return [row[0] for row in cursor.fetchall()]


def relink_stale(*, queued_before: datetime, running_before: datetime) -> list[tuple[int, int]]:
    """(tenant id, job id) of relink jobs queued or running too long."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tenant_id, job_id FROM mnemosyne_relink_stale(%s, %s)",
            [queued_before, running_before],
        )
        return [(row[0], row[1]) for row in cursor.fetchall()]


def tenants_with_stats_work() -> list[int]:
    """Tenants with statistics rows to fold or entities to count again (facts.stats)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM mnemosyne_tenants_with_stats_work()")
        return [row[0] for row in cursor.fetchall()]


def tenant_rows_delete(*, tenant_id: int, actor: str) -> int:
    """Delete every row of the tenant, audit trail included, and the tenant itself (its other
    rows' foreign keys are checked at commit); the database writes the deletion record and
    returns its id. It refuses a tenant under legal hold, and an actor who is neither a
    superuser nor a job (DatabaseError)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT mnemosyne_tenant_delete(%s, %s)", [tenant_id, actor])
        return int(cursor.fetchone()[0])
