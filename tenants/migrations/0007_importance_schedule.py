from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0006_database_roles"),
    ]

    operations = [
        migrations.AddField(
            model_name="retentionpolicy",
            name="importance_every_hours",
            field=models.PositiveIntegerField(default=1),
        ),
        migrations.AddField(
            model_name="retentionpolicy",
            name="importance_recomputed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
