"""The table of Django's database cache (`CACHES` when `CACHE_URL` is unset): the replica's
read-your-writes positions (and, until operations 0005, the API's request rates), shared by
every web and worker process.

Made here, as `createcachetable` makes it, so every `migrate` (and `mnemosyne up`) has it, made by
the owner role, whose default privileges give the runtime role its rows."""

from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

CACHE_TABLE = "mnemosyne_cache"  # memoryadmin.settings.CACHE_TABLE


def create(apps, schema_editor) -> None:
    command = CreateCacheTable()
    command.verbosity = 0  # set by handle(), which this calls past
    command.create_table(schema_editor.connection.alias, CACHE_TABLE, dry_run=False)


def drop(apps, schema_editor) -> None:
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(CACHE_TABLE)}")


class Migration(migrations.Migration):
    dependencies = [("memoryadmin", "0003_userpreference")]

    operations = [migrations.RunPython(create, drop)]
