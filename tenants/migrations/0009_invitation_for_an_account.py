"""Invitations addressed to an existing account.

A tenant admin who names an account that is not a member makes an invitation for that username;
the account accepts or declines it after signing in, and the admin's answer is the same whether
or not such an account exists (so the form tells no one which usernames are taken). Finding an
account's invitations looks across tenants, so it is one more SECURITY DEFINER function of the
owner's (docs/database-roles.md): the open invitations addressed to exactly that username.
"""

from django.db import migrations, models

FOR_ACCOUNT = """
CREATE OR REPLACE FUNCTION mnemosyne_invitations_for(account text)
RETURNS TABLE (invitation_id bigint, tenant_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
#variable_conflict use_column
BEGIN
  PERFORM set_config('app.cross_tenant', 'on', true);
  RETURN QUERY
    SELECT i.id, i.tenant_id FROM tenants_invitation i
     WHERE coalesce(account, '') <> '' AND i.username = account
       AND i.used_at IS NULL AND i.revoked_at IS NULL AND i.declined_at IS NULL
       AND i.expires_at > now()
     ORDER BY i.id;
  PERFORM set_config('app.cross_tenant', 'off', true);
END $$"""


class Migration(migrations.Migration):
    dependencies = [("tenants", "0008_audit_chain")]

    operations = [
        migrations.AddField(
            model_name="invitation",
            name="username",
            field=models.CharField(blank=True, default="", max_length=150),
        ),
        migrations.AddField(
            model_name="invitation",
            name="declined_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="invitation",
            index=models.Index(fields=["username"], name="tenants_invitation_username"),
        ),
        migrations.RunSQL(
            sql=[
                FOR_ACCOUNT,
                "REVOKE EXECUTE ON FUNCTION mnemosyne_invitations_for(text) FROM PUBLIC",
            ],
            reverse_sql="DROP FUNCTION IF EXISTS mnemosyne_invitations_for(text)",
        ),
    ]
