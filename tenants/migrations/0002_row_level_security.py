from django.db import migrations

from tenants.rls import append_only, tenant_rls


class Migration(migrations.Migration):
    dependencies = [("tenants", "0001_initial")]

    operations = [
        tenant_rls("tenants_membership"),
        tenant_rls("tenants_apikey"),
        tenant_rls("tenants_retentionpolicy"),
        tenant_rls("tenants_tenantevent"),
        append_only("tenants_tenantevent"),
    ]
