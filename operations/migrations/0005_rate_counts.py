"""The API's request rates (per key, user and address), counted in the database by one statement
a request (operations.rates), shared by every web process.

UNLOGGED: a count is worth nothing after a crash, so it writes no WAL and is not replicated (a
server that restarts after a crash starts the counts again). Made by the owner, whose default
privileges give the runtime role its rows."""

from django.db import migrations

CREATE = """
CREATE UNLOGGED TABLE IF NOT EXISTS mnemosyne_rate (
    bucket text PRIMARY KEY,
    window_no bigint NOT NULL,
    hits integer NOT NULL,
    previous integer NOT NULL
)"""


class Migration(migrations.Migration):
    dependencies = [("memoryadmin", "0004_cache_table")]

    operations = [
        migrations.RunSQL(sql=CREATE, reverse_sql="DROP TABLE IF EXISTS mnemosyne_rate"),
    ]
