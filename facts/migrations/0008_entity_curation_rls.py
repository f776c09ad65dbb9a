from django.db import migrations

from tenants.rls import append_only, tenant_rls


class Migration(migrations.Migration):
    dependencies = [("facts", "0007_entity_curation_conflicts")]

    operations = [
        *(
            tenant_rls(table)
            for table in (
                "facts_entityevent",
                "facts_dictionaryentry",
                "facts_relinkjob",
                "facts_conflictscan",
            )
        ),
        append_only("facts_entityevent"),
    ]
