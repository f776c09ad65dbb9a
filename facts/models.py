from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from pgvector.django import VectorField

from tenants.models import Chained, TenantOwned


class Kind(models.TextChoices):
    FACT = "fact", "fact"
    TURN = "turn", "turn"


class Category(models.TextChoices):
    USER_PREF = "user_pref", "user preference"
    PROJECT = "project", "project"
    TOOL = "tool", "tool"
    GENERAL = "general", "general"


class Status(models.TextChoices):
    ACTIVE = "active", "active"
    ARCHIVED = "archived", "archived"
    SUPERSEDED = "superseded", "superseded"
    REMOVED = "removed", "removed"


class Fact(TenantOwned):
    """One memory: a curated statement (`fact`) or a conversation turn (`turn`)."""

    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.FACT)
    content = models.TextField()
    content_hash = models.CharField(max_length=64)
    scope = models.CharField(max_length=255, blank=True, default="")
    session_id = models.CharField(max_length=128, blank=True, default="")
    position = models.IntegerField(null=True, blank=True)
    speaker = models.CharField(max_length=100, blank=True, default="")
    category = models.CharField(max_length=16, choices=Category.choices, default=Category.GENERAL)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    search_vector = SearchVectorField(null=True)
    # The model of the fact's newest vector (in FactVector); empty until a worker embeds it.
    embedding_model = models.CharField(max_length=100, blank=True, default="")
    trust_score = models.FloatField(default=0.5)
    helpful_count = models.PositiveIntegerField(default=0)
    unhelpful_count = models.PositiveIntegerField(default=0)
    retrieval_count = models.PositiveIntegerField(default=0)
    last_retrieved_at = models.DateTimeField(null=True, blank=True)
    # facts.importance.importance_expression, recomputed by beat and after feedback; 1 if pinned.
    importance = models.FloatField(default=0.0)
    # "Always remember": first among the known facts, never archived by retention.
    pinned = models.BooleanField(default=False)
    # Set by retention when it archives the fact; the bundle (a stem under the archive folder)
    # that holds its copy, kept after a restore so that a purge can take it out again.
    archived_at = models.DateTimeField(null=True, blank=True)
    archive_bundle = models.CharField(max_length=200, blank=True, default="")
    # How many times this was stated: near-duplicates that joined it count here.
    mention_count = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["tenant", "status", "scope"],
                name="fact_tenant_status_scope",
                opclasses=["", "", "text_pattern_ops"],
            ),
            models.Index(fields=["tenant", "-created_at", "-id"], name="fact_tenant_created"),
            models.Index(fields=["tenant", "session_id", "position"], name="fact_tenant_session"),
            # Level 2 of the context: a tenant's most important facts, read in this order.
            models.Index(
                fields=["tenant", "-importance", "-trust_score", "-helpful_count", "-created_at"],
                name="fact_important",
                condition=models.Q(status="active", kind="fact"),
            ),
            # Facts still waiting for a vector of the configured model, found by model name.
            models.Index(
                fields=["embedding_model", "tenant", "id"],
                name="fact_embedding_state",
                condition=models.Q(status="active"),
            ),
            # A small pending list (256 kB, not 4 MB): every search reads the whole list, so
            # after a large import recall was five times slower until a vacuum
            # (docs/benchmarks/recall.md).
            GinIndex(
                fields=["search_vector"], name="fact_search_vector", gin_pending_list_limit=256
            ),
        ]
        constraints = [
            # Composite keys let rows that point at a fact prove it is their tenant's.
            models.UniqueConstraint(fields=["tenant", "id"], name="fact_tenant_id"),
            models.UniqueConstraint(
                fields=["tenant", "scope", "content_hash"],
                condition=models.Q(kind="fact"),
                name="fact_dedupe",
            ),
            models.UniqueConstraint(
                fields=["tenant", "session_id", "position"],
                condition=models.Q(kind="turn"),
                name="turn_position",
            ),
            models.CheckConstraint(
                condition=models.Q(trust_score__gte=0, trust_score__lte=1), name="fact_trust_range"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.content[:60]}"


class FactVector(TenantOwned):
    """A fact's vector by one embedding model. A fact has one per model; while the deployment
    switches models, the old model's vectors serve recall until the new ones are complete.
    Vectors of two models are never compared: each model has its own HNSW index, on its own
    rows, at its own dimension (see `indexing.vectors`)."""

    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=100)
    dimension = models.PositiveIntegerField()
    embedding = VectorField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "fact", "model"], name="factvector_once"),
            models.CheckConstraint(
                condition=models.Q(dimension__gt=0), name="factvector_dimension_positive"
            ),
        ]


class EntityType(models.TextChoices):
    PERSON = "person", "person"
    PLACE = "place", "place"
    ORGANIZATION = "organization", "organization"
    PRODUCT = "product", "product"
    OTHER = "other", "other"


class Entity(TenantOwned):
    name = models.CharField(max_length=200)
    # The matching key: NFKC, case-folded, whitespace collapsed.
    normalized = models.CharField(max_length=200)
    type = models.CharField(max_length=16, choices=EntityType.choices, default=EntityType.OTHER)
    aliases = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Active facts that name it, as the statistics sweep last counted them; exact unless the
    # entity is in EntityDirty (facts.stats reads those live).
    active_facts = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "id"], name="entity_tenant_id"),
            models.UniqueConstraint(fields=["tenant", "normalized"], name="entity_unique_name"),
        ]
        indexes = [
            GinIndex(fields=["aliases"], name="entity_aliases"),
            models.Index(fields=["tenant", "-active_facts", "id"], name="entity_active_facts"),
        ]

    def __str__(self) -> str:
        return self.name


class EntityRole(models.TextChoices):
    SUBJECT = "subject", "subject"
    OBJECT = "object", "object"
    CONTEXT = "context", "context"


class FactEntity(TenantOwned):
    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="+")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=8, choices=EntityRole.choices, default=EntityRole.CONTEXT)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "fact", "entity"], name="fact_entity_once"),
        ]
        # An entity's facts, newest first (its page, the graph's walks).
        indexes = [
            models.Index(fields=["tenant", "entity", "-fact"], name="factentity_entity_fact")
        ]


class Feedback(TenantOwned):
    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="+")
    helpful = models.BooleanField()
    actor = models.CharField(max_length=200)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "fact", "-at"], name="feedback_fact_at")]


class EventAction(models.TextChoices):
    CREATE = "create", "create"
    UPDATE = "update", "update"
    REMOVE = "remove", "remove"
    FEEDBACK = "feedback", "feedback"
    ARCHIVE = "archive", "archive"
    RESTORE = "restore", "restore"
    PURGE = "purge", "purge"
    SUPERSEDE = "supersede", "supersede"
    EXPORT = "export", "export"
    IMPORT = "import", "import"
    JOIN = "join", "join"  # a near-duplicate joined this fact instead of being stored
    CONFLICT = "conflict", "conflict"  # a decision on a conflict this fact is part of


class FactEvent(TenantOwned, Chained):
    """Append-only audit trail of a fact. Keeps the fact's id, not a foreign key: a purged
    fact's history stays. The database refuses UPDATE and DELETE on this table, but for a
    purge's redaction of the fact's text (and of the salt of that text's digest)."""

    fact_id = models.BigIntegerField(null=True, blank=True)
    action = models.CharField(max_length=16, choices=EventAction.choices)
    actor = models.CharField(max_length=200)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    at = models.DateTimeField()
    # The fact's text in before/after, committed to apart from the rest: sha256(salt, text),
    # filled by the database. A purge replaces the text and forgets the salt; the digest stays,
    # so the chain still verifies and no one can confirm a guessed text against it.
    content_digest = models.BinaryField(null=True, editable=False)
    content_salt = models.BinaryField(null=True, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "chain_seq"], name="factevent_chain")
        ]
        indexes = [
            models.Index(fields=["tenant", "fact_id", "at"], name="factevent_fact"),
            models.Index(fields=["tenant", "id"], name="factevent_tenant_id"),
            models.Index(fields=["tenant", "-at"], name="factevent_tenant_at"),
            models.Index(fields=["tenant", "actor"], name="factevent_actor"),
        ]


class ConflictStatus(models.TextChoices):
    OPEN = "open", "open"
    RESOLVED = "resolved", "resolved"


class ConflictResolution(models.TextChoices):
    KEEP_BOTH = "keep_both", "keep both"
    SUPERSEDE = "supersede", "older superseded by newer"
    DISMISS = "dismiss", "dismissed"


class Conflict(TenantOwned):
    fact_a = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="+")
    fact_b = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(
        max_length=8, choices=ConflictStatus.choices, default=ConflictStatus.OPEN
    )
    # What disagrees: negation, value, number, date (facts.contradiction).
    reason = models.CharField(max_length=200, blank=True)
    score = models.FloatField(default=0.0)
    # A ConflictResolution value once decided; `note` says why, in the decider's words.
    resolution = models.TextField(blank=True)
    note = models.TextField(blank=True)
    detected_by = models.CharField(max_length=200)
    detected_at = models.DateTimeField(auto_now_add=True)
    resolved_by = models.CharField(max_length=200, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "fact_a", "fact_b"], name="conflict_pair"),
            models.CheckConstraint(
                condition=models.Q(fact_a__lt=models.F("fact_b")), name="conflict_ordered_pair"
            ),
        ]
        indexes = [models.Index(fields=["tenant", "status", "-id"], name="conflict_queue")]


class EntityAction(models.TextChoices):
    RENAME = "rename", "rename"
    RETYPE = "retype", "type changed"
    ALIAS_ADD = "alias_add", "alias added"
    ALIAS_REMOVE = "alias_remove", "alias removed"
    MERGE = "merge", "merged another entity in"
    MERGED = "merged", "merged into another entity"
    SPLIT = "split", "alias split off"
    SPLIT_FROM = "split_from", "made from a split alias"
    ALIAS_DISMISS = "alias_dismiss", "alias suggestion dismissed"


class EntityEvent(TenantOwned, Chained):
    """Append-only history of an entity's curation. Keeps the entity's id, not a foreign key:
    the history of an entity merged away stays."""

    entity_id = models.BigIntegerField()
    action = models.CharField(max_length=16, choices=EntityAction.choices)
    actor = models.CharField(max_length=200)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "chain_seq"], name="entityevent_chain")
        ]
        indexes = [models.Index(fields=["tenant", "entity_id", "-at"], name="entityevent_entity")]


class DictionaryEntry(TenantOwned):
    """A word of the tenant's user dictionary: extraction takes it as one name of this type."""

    term = models.CharField(max_length=100)
    normalized = models.CharField(max_length=100)
    type = models.CharField(max_length=16, choices=EntityType.choices, default=EntityType.OTHER)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "normalized"], name="dictionary_term_once")
        ]


class RelinkStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class RelinkJob(TenantOwned):
    """Re-linking every fact of a tenant to its entities, after the dictionary or the
    extractor changed. A worker does it in batches and counts its progress here."""

    reason = models.CharField(max_length=200)
    # The extractor and dictionary the job links with (facts.entities.extraction_signature).
    signature = models.CharField(max_length=200)
    status = models.CharField(
        max_length=8, choices=RelinkStatus.choices, default=RelinkStatus.QUEUED
    )
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    last_fact_id = models.BigIntegerField(default=0)
    error = models.TextField(blank=True)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "-id"], name="relinkjob_tenant")]

    @property
    def percent(self) -> int:
        return 100 if not self.total else min(100, round(100 * self.done / self.total))


class ExtractorState(models.Model):
    """Not tenant data: the extractor the deployment linked facts with last. When
    MNEMOSYNE_ENTITY_EXTRACTOR (or the rules' version) changes, beat's sweep finds a different
    signature here and re-links every tenant's facts."""

    signature = models.CharField(max_length=200)
    at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.signature


class ConflictScan(TenantOwned):
    """How far the background conflict sweep has come through a tenant's facts."""

    last_fact_id = models.BigIntegerField(default=0)
    at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant"], name="conflictscan_once")]


class RetentionRunStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class RetentionRun(TenantOwned):
    """One run of a tenant's retention policy (or a dry run of it): what it planned, how far it
    came, what it did. Workers claim it with a lease; a run whose worker died is taken up again
    once the lease has expired, and every batch it did stays done."""

    trigger = models.CharField(max_length=16)  # "schedule" | "manual"
    dry_run = models.BooleanField(default=False)
    status = models.CharField(
        max_length=8, choices=RetentionRunStatus.choices, default=RetentionRunStatus.QUEUED
    )
    # The policy as it was when the run planned, and the fact ids it planned per step.
    policy = models.JSONField(default=dict)
    plan = models.JSONField(default=dict)
    # What it did so far: archived per reason, purged, bundles written; and where it is.
    counts = models.JSONField(default=dict)
    step = models.CharField(max_length=16, blank=True, default="")
    batches_done = models.PositiveIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    note = models.TextField(blank=True)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "-id"], name="retentionrun_tenant")]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "id"], name="retentionrun_tenant_id"),
            # One real run at a time per tenant: two beats or two clicks cannot start two.
            models.UniqueConstraint(
                fields=["tenant"],
                condition=models.Q(status__in=["queued", "running"], dry_run=False),
                name="retentionrun_one_open",
            ),
        ]

    def __str__(self) -> str:
        return f"retention run {self.pk} of tenant {self.tenant_id} ({self.status})"


# -- maintained statistics (facts.stats) ------------------------------------------------------


class FactStat(TenantOwned):
    """How many facts of a tenant have each (kind, status, trust band, vector model, day made):
    rows written by the database's triggers on facts_fact (one per statement and key, `n` the
    change), summed when read, folded into one row per key by the statistics sweep."""

    kind = models.CharField(max_length=8)
    status = models.CharField(max_length=12)
    band = models.SmallIntegerField()  # trust in tenths: 0 for [0, 0.1) ... 9 for [0.9, 1]
    model = models.CharField(max_length=100)
    day = models.DateField()  # created_at's date in UTC
    n = models.BigIntegerField()
    folded = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "id"], name="factstat_tenant_id"),
        ]
        indexes = [
            models.Index(
                fields=["tenant"], condition=models.Q(folded=False), name="factstat_unfolded"
            ),
        ]


class EntityDirty(TenantOwned):
    """An entity whose count of active facts may have changed since the sweep last counted it
    (written by the triggers on facts_fact and facts_factentity)."""

    entity_id = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "id"], name="entitydirty_tenant_id"),
        ]
        indexes = [models.Index(fields=["tenant", "entity_id"], name="entitydirty_entity")]
