"""Vectors move out of facts_fact into facts_factvector, one row per (fact, model).

A fact can then hold vectors of two models at once, which is what switching models needs: the
old model's vectors serve recall while the new model's are made. Each model gets its own partial
HNSW index on its rows, cast to its dimension (`indexing.vectors` creates them for new models).
Existing vectors are copied over, and the models they came from are registered, the most used
one serving.
"""

import django.db.models.deletion
import pgvector.django.vector
from django.db import migrations, models

from tenants.rls import same_tenant_fk, tenant_rls

E5_MODEL = "multilingual-e5-small-int8"
E5_INDEX = "factvector_hnsw_e2e54649b5e4"  # indexing.vectors.index_name(E5_MODEL)

COPY_VECTORS = """
-- Both settings: the policies of a database made before tenants 0006 know only the first.
SELECT set_config('app.all_tenants', 'on', true), set_config('app.cross_tenant', 'on', true);
INSERT INTO facts_factvector (tenant_id, fact_id, model, dimension, embedding, created_at)
SELECT tenant_id, id, embedding_model, vector_dims(embedding), embedding, now()
  FROM facts_fact WHERE embedding IS NOT NULL AND embedding_model <> '';
INSERT INTO retrieval_vectormodel
    (name, dimension, spec, state, created_at, serving_since, retired_at)
SELECT model, min(dimension), CASE WHEN model = 'multilingual-e5-small-int8' THEN 'e5' ELSE '' END,
       CASE WHEN row_number() OVER (ORDER BY count(*) DESC, model) = 1
            THEN 'serving' ELSE 'retired' END, now(), now(), NULL
  FROM facts_factvector GROUP BY model;
SELECT set_config('app.all_tenants', 'off', true), set_config('app.cross_tenant', 'off', true);
-- Check the copied rows' same-tenant keys now: an index cannot be built on a table with
-- deferred checks pending.
SET CONSTRAINTS ALL IMMEDIATE;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0004_factevent_generation_index"),
        ("retrieval", "0003_vector_models"),
        ("tenants", "0002_row_level_security"),
    ]

    operations = [
        migrations.CreateModel(
            name="FactVector",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("model", models.CharField(max_length=100)),
                ("dimension", models.PositiveIntegerField()),
                ("embedding", pgvector.django.vector.VectorField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "fact",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="facts.fact",
                    ),
                ),
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
                    models.UniqueConstraint(
                        fields=("tenant", "fact", "model"), name="factvector_once"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("dimension__gt", 0)),
                        name="factvector_dimension_positive",
                    ),
                ],
            },
        ),
        tenant_rls("facts_factvector"),
        same_tenant_fk("facts_factvector", "fact_id", "facts_fact"),
        migrations.RunSQL(sql=COPY_VECTORS, reverse_sql=migrations.RunSQL.noop),
        migrations.RemoveIndex(model_name="fact", name="fact_unembedded"),
        migrations.RunSQL(
            sql="DROP INDEX IF EXISTS fact_embedding_e5_small",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.RemoveField(model_name="fact", name="embedding"),
        migrations.AddIndex(
            model_name="fact",
            index=models.Index(
                condition=models.Q(("status", "active")),
                fields=["embedding_model", "tenant", "id"],
                name="fact_embedding_state",
            ),
        ),
        migrations.RunSQL(
            sql=(
                f"CREATE INDEX IF NOT EXISTS {E5_INDEX} ON facts_factvector USING hnsw "
                "((embedding::vector(384)) vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
                f"WHERE model = '{E5_MODEL}'"
            ),
            reverse_sql=f"DROP INDEX IF EXISTS {E5_INDEX}",
        ),
    ]
