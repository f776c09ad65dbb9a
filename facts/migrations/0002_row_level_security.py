from django.db import migrations

from tenants.rls import append_only, same_tenant_fk, tenant_rls


class Migration(migrations.Migration):
    dependencies = [("facts", "0001_initial"), ("tenants", "0002_row_level_security")]

    operations = [
        *(
            tenant_rls(table)
            for table in (
                "facts_fact",
                "facts_entity",
                "facts_factentity",
                "facts_feedback",
                "facts_factevent",
                "facts_conflict",
            )
        ),
        append_only("facts_factevent"),
        same_tenant_fk(
            "facts_fact",
            "superseded_by_id",
            "facts_fact",
            on_delete="SET NULL (superseded_by_id)",
        ),
        same_tenant_fk("facts_factentity", "fact_id", "facts_fact"),
        same_tenant_fk("facts_factentity", "entity_id", "facts_entity"),
        same_tenant_fk("facts_feedback", "fact_id", "facts_fact"),
        same_tenant_fk("facts_conflict", "fact_a_id", "facts_fact"),
        same_tenant_fk("facts_conflict", "fact_b_id", "facts_fact"),
    ]
