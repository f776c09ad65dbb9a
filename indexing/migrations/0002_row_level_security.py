from django.db import migrations

from tenants.rls import tenant_rls


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0001_corpus_stats")]

    operations = [tenant_rls("retrieval_corpusstats"), tenant_rls("retrieval_lexemestat")]
