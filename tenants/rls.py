"""Migration operations for the database half of tenant isolation.

Row-level security admits a row when its tenant_id equals the transaction's `app.tenant_id`
(set by `tenants.scope.tenant_scope`), and nothing else to the runtime role. FORCE applies the
policy to the table's owner too; the owner (the role that runs migrations) also has the
`owner_cross_tenant` policy, which admits every row only while `app.cross_tenant` is on: the
SECURITY DEFINER functions of tenants/migrations/0006_database_roles.py set it for their own
duration, and data migrations that must see every tenant set it themselves. Superusers and
BYPASSRLS roles escape every policy, so the runtime role must be neither and must own no table
(`/healthz` and a system check say so, operations.roles).
"""

from __future__ import annotations

from django.db import migrations

TENANT_PREDICATE = "(tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::bigint)"
OWNER_PREDICATE = "(current_setting('app.cross_tenant', true) = 'on')"


def tenant_rls(table: str) -> migrations.RunSQL:
    return migrations.RunSQL(
        sql=[
            f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING {TENANT_PREDICATE} WITH CHECK {TENANT_PREDICATE}",
            f"CREATE POLICY owner_cross_tenant ON {table} TO CURRENT_USER "
            f"USING {OWNER_PREDICATE} WITH CHECK {OWNER_PREDICATE}",
        ],
        reverse_sql=[
            f"DROP POLICY owner_cross_tenant ON {table}",
            f"DROP POLICY tenant_isolation ON {table}",
            f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY",
        ],
    )


def same_tenant_fk(
    table: str, column: str, target: str, *, on_delete: str = "CASCADE"
) -> migrations.RunSQL:
    """A foreign key on (tenant_id, column): a row can only point at its own tenant's rows."""
    name = f"{table}_{column}_same_tenant"
    return migrations.RunSQL(
        sql=f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY (tenant_id, {column}) "
        f"REFERENCES {target} (tenant_id, id) ON DELETE {on_delete} DEFERRABLE INITIALLY DEFERRED",
        reverse_sql=f"ALTER TABLE {table} DROP CONSTRAINT {name}",
    )


# Refuses UPDATE and DELETE, except the DELETE of a whole tenant's rows while tenant_delete
# names that tenant in a transaction-local setting (tenants/migrations/0004).
APPEND_ONLY_FUNCTION = (
    "CREATE OR REPLACE FUNCTION mnemosyne_append_only() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ BEGIN "
    "IF TG_OP = 'DELETE' AND OLD.tenant_id::text = "
    "current_setting('app.deleting_tenant', true) THEN RETURN OLD; END IF; "
    "RAISE EXCEPTION '% is append-only', TG_TABLE_NAME "
    "USING ERRCODE = 'insufficient_privilege'; END $$"
)


def append_only(table: str) -> migrations.RunSQL:
    """Refuse UPDATE and DELETE: an audit trail that can be edited is not one."""
    return migrations.RunSQL(
        sql=[
            APPEND_ONLY_FUNCTION,
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION mnemosyne_append_only()",
        ],
        reverse_sql=[f"DROP TRIGGER {table}_append_only ON {table}"],
    )
