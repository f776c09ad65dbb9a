"""Migration operations for the database half of tenant isolation.

Row-level security admits a row when its tenant_id equals the transaction's `app.tenant_id`
(set by `tenants.scope.tenant_scope`), and nothing else to the runtime role. FORCE applies the
policy to the table's owner too; the owner (the role that runs migrations) also has the
`owner_cross_tenant` policy, which admits every row only while `app.cross_tenant` is on: the
SECURITY DEFINER functions of tenants/migrations/0005_database_roles.py set it for their own
duration, and data migrations that must see every tenant set it themselves. Superusers and
BYPASSRLS roles escape every policy, so the runtime role must be neither and must own no table
(`/healthz` and a system check say so, memoryadmin.roles).
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


# Refuses UPDATE and DELETE, with two exceptions:
# - the DELETE of a tenant's rows while mnemosyne_tenant_delete deletes that tenant
#   (app.deleting_tenant, set for its transaction);
# - on facts_factevent, the UPDATE that a purge makes through mnemosyne_fact_events_redact:
#   only the "content" of before/after replaced by "[purged]", everything else unchanged, and only
#   for a fact that no longer exists. (The runtime role has no UPDATE on audit tables at all.)
APPEND_ONLY_FUNCTION = """
CREATE OR REPLACE FUNCTION mnemosyne_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE'
       AND OLD.tenant_id::text = current_setting('app.deleting_tenant', true) THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'facts_factevent' THEN
        IF OLD.fact_id IS NOT NULL
           AND NEW.id = OLD.id AND NEW.tenant_id = OLD.tenant_id
           AND NEW.fact_id = OLD.fact_id AND NEW.action = OLD.action
           AND NEW.actor = OLD.actor AND NEW.at = OLD.at
           AND NEW.before IS NOT DISTINCT FROM mnemosyne_redact_content(OLD.before)
           AND NEW.after IS NOT DISTINCT FROM mnemosyne_redact_content(OLD.after)
           AND NOT EXISTS (SELECT 1 FROM facts_fact WHERE id = OLD.fact_id) THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END $$
"""
REDACT_FUNCTION = """
CREATE OR REPLACE FUNCTION mnemosyne_redact_content(value jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(value) = 'object' AND value ? 'content'
                THEN value || '{"content": "[purged]"}'::jsonb ELSE value END
$$
"""


def append_only(table: str) -> migrations.RunSQL:
    """Refuse UPDATE and DELETE: an audit trail that can be edited is not one. (Every call
    defines the one shared function the same way, so a later migration cannot undo
    tenants 0004's exception for deleting a tenant.)"""
    return migrations.RunSQL(
        sql=[
            REDACT_FUNCTION,
            APPEND_ONLY_FUNCTION,
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION mnemosyne_append_only()",
        ],
        reverse_sql=[f"DROP TRIGGER {table}_append_only ON {table}"],
    )
