from __future__ import annotations

from django.db import models

from tenants.models import TenantOwned


class CorpusStats(TenantOwned):
    """A tenant's full-text statistics, which BM25 needs: how many active facts there are, how
    long they are on average, and (in LexemeStat) how many contain each lexeme.

    Counting them per query would scan the whole tenant, so they are computed in one pass and
    recomputed once the tenant has changed enough (see `retrieval.stats`)."""

    documents = models.IntegerField()
    mean_length = models.FloatField()
    # The tenant's newest audit event when computed: how far the tenant has moved since.
    generation = models.BigIntegerField()
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant"], name="corpusstats_tenant")]


class LexemeStat(TenantOwned):
    lexeme = models.TextField()
    documents = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "lexeme"], name="lexemestat_tenant_lexeme")
        ]
