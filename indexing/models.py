from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
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


class VectorState(models.TextChoices):
    SERVING = "serving", "serving"  # its vectors answer recall
    FILLING = "filling", "filling"  # the configured model, its vectors being made
    RETIRED = "retired", "retired"  # replaced; its vectors are being deleted


class VectorModel(models.Model):
    """An embedding model the deployment has used. Not tenant data: the models are the same for
    every tenant. One serves recall at a time; when the configured model changes, the new one
    fills while the old one serves, and takes over once every active fact has its vector."""

    name = models.CharField(max_length=100, unique=True)
    dimension = models.PositiveIntegerField()
    # The MNEMOSYNE_EMBEDDER value that builds this model: queries are embedded with the serving
    # model, which during a switch is not the configured one.
    spec = models.CharField(max_length=500, blank=True)
    state = models.CharField(max_length=8, choices=VectorState.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    serving_since = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["state"],
                condition=models.Q(state="serving"),
                name="vectormodel_one_serving",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.dimension}, {self.state})"


class RecallLatency(TenantOwned):
    """How long agents' recalls took, per tenant and hour: a count per latency bucket (the
    bucket bounds are `retrieval.latency.BUCKETS_MS`), enough for p50/p95 over time at the cost
    of one row per tenant and hour, written off the read path (see `retrieval.latency`)."""

    hour = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)
    buckets = ArrayField(models.PositiveIntegerField())

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "hour"], name="recalllatency_tenant_hour")
        ]


class RecallLatencyBatch(TenantOwned):
    """A latency message already added to the tenant's rows: a message delivered again (its
    worker died before acknowledging it) adds nothing. Kept for `LATENCY_BATCH_DAYS`."""

    batch = models.UUIDField()
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "batch"], name="latencybatch_tenant_batch")
        ]
        indexes = [models.Index(fields=["tenant", "at"], name="latencybatch_tenant_at")]
