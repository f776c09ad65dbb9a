"""Roles that cannot lift isolation (README: Database roles).

Row-level security no longer honours `app.all_tenants`, a setting any session may set. What
reads across tenants goes through the narrow SECURITY DEFINER functions below, owned by the
role that runs migrations; each returns only what its caller needs, with its search_path pinned.
Inside them the owner sees every tenant through the `owner_cross_tenant` policy, which admits
only the owner, and only while `app.cross_tenant` is on: the functions turn it on for their own
duration, and a session of the runtime role gains nothing by setting it, as the policy does not
apply to that role.

The runtime role's privileges are granted after every migrate (operations.roles.roles_grant).
"""

# ruff: noqa: S608 - fixed SQL of this migration, built from constants only
from django.db import migrations

from tenants.rls import OWNER_PREDICATE, TENANT_PREDICATE


def _quoted(predicate: str) -> str:
    """A predicate inside a quoted string of the DO blocks below."""
    return predicate.replace("'", "''")


POLICIES = f"""
DO $$
DECLARE t text;
BEGIN
  FOR t IN SELECT tablename FROM pg_policies
            WHERE policyname = 'tenant_isolation' AND schemaname = current_schema() LOOP
    EXECUTE format('ALTER POLICY tenant_isolation ON %I USING {_quoted(TENANT_PREDICATE)} '
                   'WITH CHECK {_quoted(TENANT_PREDICATE)}', t);
    EXECUTE format('DROP POLICY IF EXISTS owner_cross_tenant ON %I', t);
    EXECUTE format('CREATE POLICY owner_cross_tenant ON %I TO CURRENT_USER '
                   'USING {_quoted(OWNER_PREDICATE)} WITH CHECK {_quoted(OWNER_PREDICATE)}', t);
  END LOOP;
END $$;
"""

OLD_PREDICATE = _quoted(
    "(current_setting('app.all_tenants', true) = 'on' "
    "OR tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::bigint)"
)
POLICIES_BACK = f"""
DO $$
DECLARE t text;
BEGIN
  FOR t IN SELECT tablename FROM pg_policies
            WHERE policyname = 'tenant_isolation' AND schemaname = current_schema() LOOP
    EXECUTE format('ALTER POLICY tenant_isolation ON %I USING {OLD_PREDICATE} '
                   'WITH CHECK {OLD_PREDICATE}', t);
    EXECUTE format('DROP POLICY IF EXISTS owner_cross_tenant ON %I', t);
  END LOOP;
END $$;
"""

# Every function: SECURITY DEFINER (it runs as the owner), search_path pinned, cross-tenant
# reads on for its own duration only. (A function's SET clause cannot name a setting of ours
# unless a superuser made it, so the body sets and clears it.)
DEFINER = "SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"


def _reader(name: str, arguments: str, returns: str, query: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION {name}({arguments})
RETURNS {returns}
LANGUAGE plpgsql VOLATILE {DEFINER} AS $$
#variable_conflict use_column
BEGIN
  PERFORM set_config('app.cross_tenant', 'on', true);
  RETURN QUERY {query};
  PERFORM set_config('app.cross_tenant', 'off', true);
END $$"""


FUNCTIONS = {
    # An API key by its public prefix: what verifying the secret needs, nothing else.
    "mnemosyne_apikey_lookup(text)": _reader(
        "mnemosyne_apikey_lookup",
        "key_prefix text",
        "TABLE (key_id bigint, tenant_id bigint, secret_hash text, previous_secret_hash text, "
        "previous_valid_until timestamptz)",
        """SELECT k.id, k.tenant_id, k.secret_hash::text, k.previous_secret_hash::text,
         k.previous_valid_until
    FROM tenants_apikey k WHERE k.prefix = key_prefix""",
    ),
    # A sign-up link by the hash of its token: which invitation, of which tenant.
    "mnemosyne_invitation_lookup(text)": _reader(
        "mnemosyne_invitation_lookup",
        "hash text",
        "TABLE (invitation_id bigint, tenant_id bigint)",
        "SELECT i.id, i.tenant_id FROM tenants_invitation i WHERE i.token_hash = hash",
    ),
    # The tenants a user belongs to, with the role there.
    "mnemosyne_user_tenants(bigint)": _reader(
        "mnemosyne_user_tenants",
        "member bigint",
        "TABLE (tenant_id bigint, role text)",
        "SELECT m.tenant_id, m.role::text FROM tenants_membership m WHERE m.user_id = member",
    ),
    # Beat's sweeps: which tenants have work; each is then scoped in turn.
    "mnemosyne_tenants_unembedded(text)": _reader(
        "mnemosyne_tenants_unembedded",
        "model text",
        "SETOF bigint",
        """SELECT DISTINCT f.tenant_id FROM facts_fact f
   WHERE f.status = 'active' AND (f.embedding_model < model OR f.embedding_model > model)""",
    ),
    "mnemosyne_tenants_unchecked()": _reader(
        "mnemosyne_tenants_unchecked",
        "",
        "SETOF bigint",
        """SELECT n.tenant_id
    FROM (SELECT f.tenant_id, max(f.id) AS newest FROM facts_fact f
           WHERE f.status = 'active' AND f.kind = 'fact' AND f.embedding_model <> ''
           GROUP BY f.tenant_id) n
    LEFT JOIN facts_conflictscan s ON s.tenant_id = n.tenant_id
   WHERE n.newest > coalesce(s.last_fact_id, 0)
   ORDER BY n.tenant_id""",
    ),
    "mnemosyne_relink_stale(timestamptz, timestamptz)": _reader(
        "mnemosyne_relink_stale",
        "queued_before timestamptz, running_before timestamptz",
        "TABLE (tenant_id bigint, job_id bigint)",
        """SELECT j.tenant_id, j.id FROM facts_relinkjob j
   WHERE (j.status = 'queued' AND j.created_at < queued_before)
      OR (j.status = 'running' AND j.updated_at < running_before)
   ORDER BY j.id""",
    ),
    # A new embedding model's HNSW index (indexing.vectors): DDL on a table the runtime role
    # does not own, so the owner builds it. The name and options follow indexing.vectors.
    "mnemosyne_vector_index_create(text, text, integer)": f"""
CREATE OR REPLACE FUNCTION mnemosyne_vector_index_create(index text, model text, dimension integer)
RETURNS void
LANGUAGE plpgsql VOLATILE {DEFINER} AS $$
BEGIN
  IF index !~ '^factvector_hnsw_[0-9a-f]{{12}}$' THEN
    RAISE EXCEPTION 'not an embedding model index name: %', index;
  END IF;
  IF dimension IS NULL OR dimension < 1 OR dimension > 16000 THEN
    RAISE EXCEPTION 'dimension must be 1 to 16000, got %', dimension;
  END IF;
  EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON facts_factvector USING hnsw '
                 '((embedding::vector(%s)) vector_cosine_ops) WITH (m = 16, ef_construction = 64) '
                 'WHERE model = %L', index, dimension, model);
END $$""",
    "mnemosyne_vector_index_drop(text)": f"""
CREATE OR REPLACE FUNCTION mnemosyne_vector_index_drop(index text)
RETURNS void
LANGUAGE plpgsql VOLATILE {DEFINER} AS $$
BEGIN
  IF index !~ '^factvector_hnsw_[0-9a-f]{{12}}$' THEN
    RAISE EXCEPTION 'not an embedding model index name: %', index;
  END IF;
  EXECUTE format('DROP INDEX IF EXISTS %I', index);
END $$""",
    # A whole tenant, audit trail included: the only way audit rows are ever removed. The
    # runtime role has no DELETE on the audit tables; here the append-only trigger lets this
    # tenant's rows go (app.deleting_tenant), and nothing else.
    "mnemosyne_tenant_delete(bigint)": f"""
CREATE OR REPLACE FUNCTION mnemosyne_tenant_delete(doomed bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE {DEFINER} AS $$
DECLARE t text;
BEGIN
  PERFORM set_config('app.cross_tenant', 'on', true);
  PERFORM set_config('app.deleting_tenant', doomed::text, true);
  FOR t IN SELECT c.table_name FROM information_schema.columns c
            JOIN information_schema.tables r
              ON r.table_schema = c.table_schema AND r.table_name = c.table_name
           WHERE c.table_schema = 'public' AND c.column_name = 'tenant_id'
             AND r.table_type = 'BASE TABLE' LOOP
    EXECUTE format('DELETE FROM %I WHERE tenant_id = $1', t) USING doomed;
  END LOOP;
  DELETE FROM tenants_tenant WHERE id = doomed;
  PERFORM set_config('app.deleting_tenant', '', true);
  PERFORM set_config('app.cross_tenant', 'off', true);
END $$""",
}


def _revoke_public(signature: str) -> str:
    return f"REVOKE EXECUTE ON FUNCTION {signature} FROM PUBLIC"


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0005_lifecycle"),
        ("facts", "0009_lifecycle"),
        ("retrieval", "0004_recalllatency"),
    ]

    operations = [
        migrations.RunSQL(sql=POLICIES, reverse_sql=POLICIES_BACK),
        *(
            migrations.RunSQL(
                sql=[create, _revoke_public(signature)],
                reverse_sql=f"DROP FUNCTION IF EXISTS {signature}",
            )
            for signature, create in FUNCTIONS.items()
        ),
    ]
