"""The full-text GIN index keeps a pending list of at most 256 kB instead of PostgreSQL's 4 MB.

Every search of a GIN index reads its whole pending list, and only a vacuum or a list past its
limit moves the entries into the index proper: after 12,000 facts were imported, recall's median
was 70 ms instead of 36 until autovacuum came (README "Recall", latency). Set in place: the index
is not rebuilt.
"""

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("facts", "0013_stats_update_trigger_once")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    sql="ALTER INDEX fact_search_vector SET (gin_pending_list_limit = 256)",
                    reverse_sql="ALTER INDEX fact_search_vector RESET (gin_pending_list_limit)",
                )
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="fact", name="fact_search_vector"),
                migrations.AddIndex(
                    model_name="fact",
                    index=GinIndex(
                        fields=["search_vector"],
                        name="fact_search_vector",
                        gin_pending_list_limit=256,
                    ),
                ),
            ],
        )
    ]
