"""The audit rows' places in their tenant's hash chain (tenants/migrations/0008_audit_chain.py
fills them), and a purge's redaction that keeps the chain verifiable.

A fact event's text (the "content" of its before/after) is committed to apart from the rest of
the event: `content_digest` = sha256(`content_salt`, the text). A purge replaces the text by
"[purged]" (facts 0009) and now also forgets the salt, so the digest, which the chain covers,
stays as it was and cannot confirm a guessed text. The guard admits exactly that change, and
nothing of the chain's columns changes.
"""

from django.db import migrations, models

GUARD_FUNCTION = """
CREATE OR REPLACE FUNCTION mnemosyne_factevent_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Deleting a whole tenant (mnemosyne_tenant_delete) takes its audit trail too.
    IF TG_OP = 'DELETE' AND OLD.tenant_id::text = current_setting('app.deleting_tenant', true)
    THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE'
       AND OLD.fact_id IS NOT NULL
       AND NEW.id = OLD.id AND NEW.tenant_id = OLD.tenant_id
       AND NEW.fact_id = OLD.fact_id AND NEW.action = OLD.action
       AND NEW.actor = OLD.actor AND NEW.at = OLD.at
       AND NEW.before IS NOT DISTINCT FROM mnemosyne_redact_content(OLD.before)
       AND NEW.after IS NOT DISTINCT FROM mnemosyne_redact_content(OLD.after)
       AND NEW.chain_seq IS NOT DISTINCT FROM OLD.chain_seq
       AND NEW.chain_hash IS NOT DISTINCT FROM OLD.chain_hash
       AND NEW.content_digest IS NOT DISTINCT FROM OLD.content_digest
       AND NEW.content_salt IS NULL
       AND NOT EXISTS (SELECT 1 FROM facts_fact WHERE id = OLD.fact_id)
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END $$
"""

# facts 0009's guard, to go back to.
OLD_GUARD_FUNCTION = """
CREATE OR REPLACE FUNCTION mnemosyne_factevent_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND OLD.tenant_id::text = current_setting('app.deleting_tenant', true)
    THEN
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE'
       AND OLD.fact_id IS NOT NULL
       AND NEW.id = OLD.id AND NEW.tenant_id = OLD.tenant_id
       AND NEW.fact_id = OLD.fact_id AND NEW.action = OLD.action
       AND NEW.actor = OLD.actor AND NEW.at = OLD.at
       AND NEW.before IS NOT DISTINCT FROM mnemosyne_redact_content(OLD.before)
       AND NEW.after IS NOT DISTINCT FROM mnemosyne_redact_content(OLD.after)
       AND NOT EXISTS (SELECT 1 FROM facts_fact WHERE id = OLD.fact_id)
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END $$
"""

# The owner's redaction (facts 0009), which now forgets the salt too, and refuses while the
# tenant is under legal hold: nothing of a held tenant is purged, its trail included.
REDACT_DEFINER = """
CREATE OR REPLACE FUNCTION mnemosyne_factevent_redact(purged bigint[])
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  tenant bigint := NULLIF(current_setting('app.tenant_id', true), '')::bigint;
  changed integer;
BEGIN
  IF EXISTS (SELECT 1 FROM tenants_retentionpolicy p WHERE p.tenant_id = tenant AND p.legal_hold)
  THEN
    RAISE EXCEPTION 'tenant % is under legal hold: its audit trail keeps every text', tenant
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  UPDATE facts_factevent
     SET before = mnemosyne_redact_content(before), after = mnemosyne_redact_content(after),
         content_salt = NULL
   WHERE tenant_id = tenant
     AND fact_id = ANY(purged)
     AND (before ? 'content' OR after ? 'content');
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed;
END $$
"""

OLD_REDACT_DEFINER = """
CREATE OR REPLACE FUNCTION mnemosyne_factevent_redact(purged bigint[])
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE changed integer;
BEGIN
  UPDATE facts_factevent
     SET before = mnemosyne_redact_content(before), after = mnemosyne_redact_content(after)
   WHERE tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::bigint
     AND fact_id = ANY(purged)
     AND (before ? 'content' OR after ? 'content');
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed;
END $$
"""


def _chained(model: str) -> list[migrations.AddField]:
    return [
        migrations.AddField(
            model_name=model,
            name="chain_seq",
            field=models.BigIntegerField(editable=False, null=True),
        ),
        migrations.AddField(
            model_name=model,
            name="chain_hash",
            field=models.BinaryField(editable=False, null=True),
        ),
    ]


class Migration(migrations.Migration):
    dependencies = [("facts", "0017_entityevent_alias_dismiss")]

    operations = [
        *_chained("factevent"),
        *_chained("entityevent"),
        migrations.AddField(
            model_name="factevent",
            name="content_digest",
            field=models.BinaryField(editable=False, null=True),
        ),
        migrations.AddField(
            model_name="factevent",
            name="content_salt",
            field=models.BinaryField(editable=False, null=True),
        ),
        migrations.AddConstraint(
            model_name="factevent",
            constraint=models.UniqueConstraint(
                fields=("tenant", "chain_seq"), name="factevent_chain"
            ),
        ),
        migrations.AddConstraint(
            model_name="entityevent",
            constraint=models.UniqueConstraint(
                fields=("tenant", "chain_seq"), name="entityevent_chain"
            ),
        ),
        migrations.RunSQL(sql=GUARD_FUNCTION, reverse_sql=OLD_GUARD_FUNCTION),
        migrations.RunSQL(sql=REDACT_DEFINER, reverse_sql=OLD_REDACT_DEFINER),
    ]
