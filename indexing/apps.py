from django.apps import AppConfig


class IndexingConfig(AppConfig):
    name = "indexing"
    # The tables and migrations were made under this label when the package was part of
    # `retrieval`; the label stays so that every deployed database keeps them.
    label = "retrieval"
    verbose_name = "Indexing"
