"""A tamper-evident audit trail, and a runtime role that can do only what the product does.

The chain (docs/audit-chain.md). Every row of the three audit tables (facts_factevent,
facts_entityevent, tenants_tenantevent) takes, on insert, the next position of its tenant's one
chain and a hash: chain_hash = sha256(previous hash || sha256(record)), where the record is the
row as text (table, id, tenant, position, fact or entity, action, actor, target, time in
microseconds, before and after with any fact text replaced by "[purged]", and the digest of
that text). The trigger that does it is the owner's (SECURITY DEFINER), so no code of the
application can skip or shape it; it takes the tenant's head row FOR UPDATE, so inserts from
many processes get one order: the head's lock is held to the end of the inserting transaction.
The previous link is read from the events (the newest of the tenant's three tables); the head
row follows once per statement.

The actor. An audit row's actor must belong to its tenant: a member of it or a superuser
(`user:<id>:<username>`), one of its API keys (`apikey:<id>:<name>`), a job (`job:<name>`), or
history copied from a bundle (`imported:<actor>`), checked by the same trigger.

Tenant deletion. `mnemosyne_tenant_delete(tenant, actor)` refuses a tenant under legal hold and
an actor who is neither a superuser nor a job, and writes the tenants_tenantdeletion record
itself; the one-argument function of 0006 is gone. Deletion records are append-only.
"""

# ruff: noqa: S608 - fixed SQL of this migration, built from constants only
import django.db.models.deletion
from django.db import migrations, models

from tenants.rls import append_only, tenant_rls

DEFINER = "SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"

# A jsonb value with any fact text in it replaced, as a purge leaves it (facts 0009's
# mnemosyne_redact_content, written out: the verifier uses built-in functions only).
REDACTED = (
    "CASE WHEN jsonb_typeof({v}) = 'object' AND {v} ? 'content' "
    'THEN {v} || \'{{"content": "[purged]"}}\'::jsonb ELSE {v} END'
)


def record(table: str, row: str, obj: str, target: str, digest: str) -> str:
    """The text a chain link hashes (facts.audit_chain.RECORD is the verifier's copy)."""
    return (
        f"jsonb_build_array({table}, {row}.id, {row}.tenant_id, {row}.chain_seq, {obj}, "
        f"{row}.action, {row}.actor, {target}, "
        f"(extract(epoch FROM {row}.at) * 1000000)::bigint, "
        f"{REDACTED.format(v=row + '.before')}, {REDACTED.format(v=row + '.after')}, "
        f"encode({digest}, 'hex'))::text"
    )


# The actor: a job's (or imported history's) is recognised by a plain expression; a person's or
# a key's is looked up in the tenant, one single-table query each (one query with both lookups
# cost twice the whole trigger).
ACTOR_CHECK = """
  IF NOT coalesce((left(NEW.actor, 4) = 'job:' AND length(NEW.actor) > 4)
                   OR (left(NEW.actor, 9) = 'imported:' AND length(NEW.actor) > 9), false) THEN
    ident := split_part(NEW.actor, ':', 2);
    known := false;
    IF ident ~ '^[0-9]{1,18}$' AND left(NEW.actor, 5) = 'user:' THEN
      known := EXISTS (
        SELECT 1 FROM auth_user u
         WHERE u.id = ident::bigint AND NEW.actor = 'user:' || u.id || ':' || u.username
           AND (u.is_superuser OR EXISTS (
                 SELECT 1 FROM tenants_membership m
                  WHERE m.tenant_id = NEW.tenant_id AND m.user_id = u.id)));
    ELSIF ident ~ '^[0-9]{1,18}$' AND left(NEW.actor, 7) = 'apikey:' THEN
      known := EXISTS (
        SELECT 1 FROM tenants_apikey k
         WHERE k.id = ident::bigint AND k.tenant_id = NEW.tenant_id
           AND NEW.actor = 'apikey:' || k.id || ':' || k.name);
    END IF;
    IF NOT coalesce(known, false) THEN
      RAISE EXCEPTION 'the audit actor % does not belong to tenant %', NEW.actor, NEW.tenant_id
        USING ERRCODE = 'insufficient_privilege';
    END IF;
  END IF;"""

ZERO = "'\\x" + "00" * 32 + "'::bytea"

# The newest link of the tenant's chain, from the events themselves: a row-level BEFORE trigger
# sees the rows its statement inserted before this one, and, once it holds the head row's lock,
# every other transaction's are committed.
LAST_LINK = " UNION ALL ".join(
    f"(SELECT e.chain_seq AS seq, e.chain_hash AS hash FROM {table} e "
    "WHERE e.tenant_id = NEW.tenant_id AND e.chain_seq IS NOT NULL "
    "ORDER BY e.chain_seq DESC LIMIT 1)"
    for table in ("facts_factevent", "facts_entityevent", "tenants_tenantevent")
)

CHAIN_TRIGGER = f"""
CREATE OR REPLACE FUNCTION mnemosyne_audit_chain() RETURNS trigger
LANGUAGE plpgsql {DEFINER} AS $$
DECLARE
  last record;
  prev bytea := {ZERO};
  obj bigint;
  target text := '';
  digest bytea;
  ident text;
  known boolean;
BEGIN
{ACTOR_CHECK}
  IF TG_TABLE_NAME = 'facts_factevent' THEN
    obj := NEW.fact_id;
    IF (jsonb_typeof(NEW.before) = 'object' AND NEW.before ? 'content')
       OR (jsonb_typeof(NEW.after) = 'object' AND NEW.after ? 'content') THEN
      NEW.content_salt := uuid_send(gen_random_uuid());
      NEW.content_digest := sha256(NEW.content_salt || convert_to(
        jsonb_build_array(NEW.before -> 'content', NEW.after -> 'content')::text, 'UTF8'));
    ELSE
      NEW.content_salt := NULL;
      NEW.content_digest := NULL;
    END IF;
    digest := NEW.content_digest;
  ELSIF TG_TABLE_NAME = 'facts_entityevent' THEN
    obj := NEW.entity_id;
  ELSE
    target := NEW.target;
  END IF;
  -- One writer per tenant at a time: the head row's lock, held to the end of the transaction.
  PERFORM 1 FROM tenants_auditchainhead h WHERE h.tenant_id = NEW.tenant_id FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO tenants_auditchainhead (tenant_id, seq, hash)
    VALUES (NEW.tenant_id, 0, {ZERO}) ON CONFLICT (tenant_id) DO NOTHING;
    PERFORM 1 FROM tenants_auditchainhead h WHERE h.tenant_id = NEW.tenant_id FOR UPDATE;
  END IF;
  SELECT l.seq, l.hash INTO last FROM ({LAST_LINK}) l ORDER BY l.seq DESC LIMIT 1;
  IF FOUND THEN
    prev := last.hash;
  END IF;
  NEW.chain_seq := coalesce(last.seq, 0) + 1;
  NEW.chain_hash := sha256(prev || sha256(convert_to(
    {record("TG_TABLE_NAME", "NEW", "obj", "target", "digest")}, 'UTF8')));
  RETURN NEW;
END $$"""

# The head row follows once per statement (updated once per row, a large insert would leave a
# chain of versions of it that every later row's lookup walks).
HEAD_MOVE = f"""
CREATE OR REPLACE FUNCTION mnemosyne_audit_chain_head() RETURNS trigger
LANGUAGE plpgsql {DEFINER} AS $$
BEGIN
  UPDATE tenants_auditchainhead h SET seq = n.chain_seq, hash = n.chain_hash
    FROM (SELECT DISTINCT ON (r.tenant_id) r.tenant_id, r.chain_seq, r.chain_hash
            FROM new_rows r ORDER BY r.tenant_id, r.chain_seq DESC) n
   WHERE h.tenant_id = n.tenant_id AND h.seq < n.chain_seq;
  RETURN NULL;
END $$"""

AUDIT_TABLES = ("facts_factevent", "facts_entityevent", "tenants_tenantevent")
TRIGGERS = [
    statement
    for table in AUDIT_TABLES
    for statement in (
        f"CREATE TRIGGER {table}_chain BEFORE INSERT ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION mnemosyne_audit_chain()",
        f"CREATE TRIGGER {table}_chain_head AFTER INSERT ON {table} "
        "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION mnemosyne_audit_chain_head()",
    )
]
GUARDS = {
    "facts_factevent": "facts_factevent_append_only",
    "facts_entityevent": "facts_entityevent_append_only",
    "tenants_tenantevent": "tenants_tenantevent_append_only",
}

# The rows there already, chained in the order they were written (time, then table, then id),
# tenant by tenant. The guards refuse every UPDATE, so they are off for the length of it (this
# migration's transaction holds the tables).
BACKFILL = f"""
DO $$
DECLARE
  r record;
  tenant bigint := NULL;
  seq bigint;
  prev bytea;
  salt bytea;
  digest bytea;
  link bytea;
BEGIN
  PERFORM set_config('app.cross_tenant', 'on', true);
  FOR r IN
    SELECT * FROM (
      SELECT 'facts_factevent'::text AS tbl, e.id, e.tenant_id, e.fact_id AS obj, e.action,
             e.actor, ''::text AS target, e.at, e.before, e.after
        FROM facts_factevent e
      UNION ALL
      SELECT 'facts_entityevent', e.id, e.tenant_id, e.entity_id, e.action, e.actor, '', e.at,
             e.before, e.after
        FROM facts_entityevent e
      UNION ALL
      SELECT 'tenants_tenantevent', e.id, e.tenant_id, NULL, e.action, e.actor, e.target, e.at,
             e.before, e.after
        FROM tenants_tenantevent e
    ) e ORDER BY tenant_id, at, tbl, id
  LOOP
    IF tenant IS DISTINCT FROM r.tenant_id THEN
      IF tenant IS NOT NULL THEN
        INSERT INTO tenants_auditchainhead (tenant_id, seq, hash) VALUES (tenant, seq, prev);
      END IF;
      tenant := r.tenant_id;
      seq := 0;
      prev := {ZERO};
    END IF;
    seq := seq + 1;
    salt := NULL;
    digest := NULL;
    IF r.tbl = 'facts_factevent' AND (
         (jsonb_typeof(r.before) = 'object' AND r.before ? 'content')
         OR (jsonb_typeof(r.after) = 'object' AND r.after ? 'content')) THEN
      salt := uuid_send(gen_random_uuid());
      digest := sha256(salt || convert_to(
        jsonb_build_array(r.before -> 'content', r.after -> 'content')::text, 'UTF8'));
    END IF;
    link := sha256(prev || sha256(convert_to(jsonb_build_array(
      r.tbl, r.id, r.tenant_id, seq, r.obj, r.action, r.actor, r.target,
      (extract(epoch FROM r.at) * 1000000)::bigint,
      {REDACTED.format(v="r.before")}, {REDACTED.format(v="r.after")},
      encode(digest, 'hex'))::text, 'UTF8')));
    IF r.tbl = 'facts_factevent' THEN
      UPDATE facts_factevent SET chain_seq = seq, chain_hash = link, content_digest = digest,
             content_salt = salt WHERE id = r.id;
    ELSE
      EXECUTE format('UPDATE %I SET chain_seq = $1, chain_hash = $2 WHERE id = $3', r.tbl)
        USING seq, link, r.id;
    END IF;
    prev := link;
  END LOOP;
  IF tenant IS NOT NULL THEN
    INSERT INTO tenants_auditchainhead (tenant_id, seq, hash) VALUES (tenant, seq, prev);
  END IF;
  PERFORM set_config('app.cross_tenant', 'off', true);
END $$"""

TENANT_DELETE = f"""
CREATE OR REPLACE FUNCTION mnemosyne_tenant_delete(doomed bigint, actor text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE {DEFINER} AS $$
DECLARE
  gone record;
  t text;
  n bigint;
  counts jsonb := '{{}}'::jsonb;
  made bigint;
BEGIN
  IF NOT (actor ~ '^job:.' OR EXISTS (
      SELECT 1 FROM auth_user u
       WHERE u.is_superuser AND actor = 'user:' || u.id || ':' || u.username)) THEN
    RAISE EXCEPTION 'only a superuser or a job deletes a tenant, not %', actor
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  SELECT k.id, k.slug, k.name INTO gone FROM tenants_tenant k WHERE k.id = doomed FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no tenant %', doomed USING ERRCODE = 'no_data_found';
  END IF;
  PERFORM set_config('app.cross_tenant', 'on', true);
  -- Share-locked: a hold being set waits for this deletion, which does not pass one set before.
  PERFORM 1 FROM tenants_retentionpolicy p WHERE p.tenant_id = doomed FOR SHARE;
  IF EXISTS (SELECT 1 FROM tenants_retentionpolicy p WHERE p.tenant_id = doomed AND p.legal_hold)
  THEN
    RAISE EXCEPTION 'tenant % is under legal hold: lift the hold before deleting it', gone.slug
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  PERFORM set_config('app.deleting_tenant', doomed::text, true);
  FOR t IN SELECT c.table_name FROM information_schema.columns c
            JOIN information_schema.tables r
              ON r.table_schema = c.table_schema AND r.table_name = c.table_name
           WHERE c.table_schema = 'public' AND c.column_name = 'tenant_id'
             AND r.table_type = 'BASE TABLE'
           ORDER BY 1 LOOP
    EXECUTE format('DELETE FROM %I WHERE tenant_id = $1', t) USING doomed;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
      counts := counts || jsonb_build_object(t, n);
    END IF;
  END LOOP;
  DELETE FROM tenants_tenant WHERE id = doomed;
  INSERT INTO tenants_tenantdeletion (slug, name, tenant_pk, actor, counts, at)
  VALUES (gone.slug, gone.name, doomed, actor, counts, now()) RETURNING id INTO made;
  PERFORM set_config('app.deleting_tenant', '', true);
  PERFORM set_config('app.cross_tenant', 'off', true);
  RETURN made;
END $$"""

# 0006's function, to go back to.
OLD_TENANT_DELETE = f"""
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
END $$"""

# Deletion records have no tenant: refused UPDATE and DELETE, to the owner too.
RECORD_GUARD = """
CREATE OR REPLACE FUNCTION mnemosyne_append_only_record() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END $$"""


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0007_importance_schedule"),
        ("facts", "0018_audit_chain_columns"),
    ]

    operations = [
        migrations.AddField(
            model_name="tenantevent",
            name="chain_seq",
            field=models.BigIntegerField(editable=False, null=True),
        ),
        migrations.AddField(
            model_name="tenantevent",
            name="chain_hash",
            field=models.BinaryField(editable=False, null=True),
        ),
        migrations.AddConstraint(
            model_name="tenantevent",
            constraint=models.UniqueConstraint(
                fields=("tenant", "chain_seq"), name="tenantevent_chain"
            ),
        ),
        migrations.CreateModel(
            name="AuditChainHead",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("seq", models.BigIntegerField()),
                ("hash", models.BinaryField()),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="tenants.tenant",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("tenant",), name="auditchainhead_tenant")
                ],
            },
        ),
        migrations.CreateModel(
            name="AuditDigest",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("count", models.BigIntegerField()),
                ("head", models.CharField(max_length=64)),
                ("at", models.DateTimeField()),
                ("reason", models.CharField(max_length=16)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="tenants.tenant",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["tenant", "-at"], name="auditdigest_tenant_at")],
            },
        ),
        tenant_rls("tenants_auditchainhead"),
        tenant_rls("tenants_auditdigest"),
        append_only("tenants_auditdigest"),
        migrations.RunSQL(
            sql=[
                CHAIN_TRIGGER,
                HEAD_MOVE,
                "REVOKE EXECUTE ON FUNCTION mnemosyne_audit_chain() FROM PUBLIC",
                "REVOKE EXECUTE ON FUNCTION mnemosyne_audit_chain_head() FROM PUBLIC",
                *TRIGGERS,
            ],
            reverse_sql=[
                *(f"DROP TRIGGER IF EXISTS {table}_chain ON {table}" for table in AUDIT_TABLES),
                *(
                    f"DROP TRIGGER IF EXISTS {table}_chain_head ON {table}"
                    for table in AUDIT_TABLES
                ),
                "DROP FUNCTION IF EXISTS mnemosyne_audit_chain()",
                "DROP FUNCTION IF EXISTS mnemosyne_audit_chain_head()",
            ],
        ),
        migrations.RunSQL(
            sql=[
                *(f"ALTER TABLE {t} DISABLE TRIGGER {g}" for t, g in GUARDS.items()),
                BACKFILL,
                *(f"ALTER TABLE {t} ENABLE TRIGGER {g}" for t, g in GUARDS.items()),
            ],
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.RunSQL(
            sql=[
                "DROP FUNCTION IF EXISTS mnemosyne_tenant_delete(bigint)",
                TENANT_DELETE,
                "REVOKE EXECUTE ON FUNCTION mnemosyne_tenant_delete(bigint, text) FROM PUBLIC",
            ],
            reverse_sql=[
                "DROP FUNCTION IF EXISTS mnemosyne_tenant_delete(bigint, text)",
                OLD_TENANT_DELETE,
                "REVOKE EXECUTE ON FUNCTION mnemosyne_tenant_delete(bigint) FROM PUBLIC",
            ],
        ),
        migrations.RunSQL(
            sql=[
                RECORD_GUARD,
                "CREATE TRIGGER tenants_tenantdeletion_append_only BEFORE UPDATE OR DELETE ON "
                "tenants_tenantdeletion FOR EACH ROW EXECUTE FUNCTION "
                "mnemosyne_append_only_record()",
            ],
            reverse_sql=[
                "DROP TRIGGER IF EXISTS tenants_tenantdeletion_append_only "
                "ON tenants_tenantdeletion",
                "DROP FUNCTION IF EXISTS mnemosyne_append_only_record()",
            ],
        ),
    ]
