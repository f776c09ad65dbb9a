from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0002_row_level_security")]

    operations = [
        migrations.CreateModel(
            name="VectorModel",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100, unique=True)),
                ("dimension", models.PositiveIntegerField()),
                ("spec", models.CharField(blank=True, max_length=500)),
                (
                    "state",
                    models.CharField(
                        choices=[
                            ("serving", "serving"),
                            ("filling", "filling"),
                            ("retired", "retired"),
                        ],
                        max_length=8,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("serving_since", models.DateTimeField(blank=True, null=True)),
                ("retired_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("state", "serving")),
                        fields=("state",),
                        name="vectormodel_one_serving",
                    )
                ],
            },
        ),
    ]
