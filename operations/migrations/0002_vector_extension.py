"""pgvector: the `vector` type and HNSW index method, needed by every embedding column.

On a PostgreSQL server whose application role may not create extensions, an administrator
runs `CREATE EXTENSION vector;` once beforehand; this migration then finds it there.
"""

from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    dependencies = [("memoryadmin", "0001_initial")]

    operations = [VectorExtension()]
