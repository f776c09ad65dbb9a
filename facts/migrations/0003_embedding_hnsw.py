"""HNSW (cosine) over the default model's vectors.

The embedding column takes vectors of any model; an HNSW index needs one dimension, so each
model gets a partial index on its own vectors cast to its dimension. Searches use the same
expression and predicate, so vectors of two models are never compared.
"""

from django.db import migrations

MODEL = "multilingual-e5-small-int8"
DIMENSION = 384


class Migration(migrations.Migration):
    dependencies = [("facts", "0002_row_level_security")]

    operations = [
        migrations.RunSQL(
            sql=(
                "CREATE INDEX fact_embedding_e5_small ON facts_fact USING hnsw "
                f"((embedding::vector({DIMENSION})) vector_cosine_ops) "
                f"WITH (m = 16, ef_construction = 64) WHERE embedding_model = '{MODEL}'"
            ),
            reverse_sql="DROP INDEX fact_embedding_e5_small",
        )
    ]
