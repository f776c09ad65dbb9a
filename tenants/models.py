from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from tenants.managers import TenantManager

# Every tenant's defaults; a tenant's `settings` holds only what it changed.
DEFAULT_TENANT_SETTINGS: dict[str, float | int] = {
    "weight_fts": 0.3,
    "weight_vec": 0.5,
    # Entities count only when a tenant turns them on: on dialogue they lowered recall (turns
    # name their speakers, so speaker entities are everywhere); see docs/recall.md.
    "weight_entity": 0.0,
    "default_trust": 0.5,
    "min_trust": 0.3,
    # Temporal decay is off (0) by default: on LoCoMo a 90-day half-life cost 17 points of
    # recall@5, and a fact does not become less true with age. A tenant may turn it on.
    "half_life_days": 0,
    "token_budget": 1300,
    "prefetch_ttl_s": 300,
    # A new fact whose vector is at least this close to a stored fact's (cosine) joins it
    # instead of being stored twice; 1 leaves only identical text to join.
    "duplicate_threshold": 0.95,
    # 1: a clear, newer statement supersedes the older one it contradicts at once; 0 (the
    # default): every conflict waits in the review queue for an admin.
    "conflict_auto_supersede": 0,
}


class Tenant(models.Model):
    """A team. Not itself tenant data: the registry every tenant-owned row points to."""

    slug = models.SlugField(max_length=63, unique=True)
    name = models.CharField(max_length=200)
    settings = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def setting(self, key: str) -> float | int:
        return self.settings.get(key, DEFAULT_TENANT_SETTINGS[key])

    @property
    def effective_settings(self) -> dict[str, float | int]:
        return {**DEFAULT_TENANT_SETTINGS, **self.settings}


class TenantOwned(models.Model):
    """Base of every tenant-owned model: a tenant column, and the manager that demands it."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")

    objects = TenantManager()

    class Meta:
        abstract = True


class Chained(models.Model):
    """An audit row's place in its tenant's hash chain. The database fills both columns on
    insert (tenants/migrations/0008_audit_chain.py: whatever the application passes is
    replaced), and the trail's guard keeps them as they are (facts.audit_chain verifies)."""

    chain_seq = models.BigIntegerField(null=True, editable=False)
    chain_hash = models.BinaryField(null=True, editable=False)

    class Meta:
        abstract = True


class Role(models.TextChoices):
    ADMIN = "admin", "admin"
    AUDITOR = "auditor", "auditor"


class Membership(TenantOwned):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user"], name="membership_one_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.tenant_id} as {self.role}"


class ApiKey(TenantOwned):
    """A credential of one tenant. The secret is shown once; only its hash is stored."""

    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=128)
    scopes = ArrayField(models.CharField(max_length=16), default=list)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_used_from = models.GenericIPAddressField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # After this the key is refused (null: never).
    expires_at = models.DateTimeField(null=True, blank=True)
    # The key reads and writes only this scope and what is below it (empty: the whole tenant).
    scope_prefix = models.CharField(max_length=255, blank=True, default="")
    # After a rotation the old secret keeps working until previous_valid_until.
    previous_secret_hash = models.CharField(max_length=128, blank=True, default="")
    previous_valid_until = models.DateTimeField(null=True, blank=True)
    rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "created_at"], name="apikey_tenant_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    @property
    def is_expired(self) -> bool:
        from django.utils import timezone

        return self.expires_at is not None and self.expires_at <= timezone.now()


class ApiKeyUsage(TenantOwned):
    """Requests made with a key, per day (UTC)."""

    key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    requests = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "day"], name="apikeyusage_one_per_day"),
        ]
        indexes = [models.Index(fields=["tenant", "key", "-day"], name="apikeyusage_key_day")]

    def __str__(self) -> str:
        return f"key {self.key_id}: {self.requests} requests on {self.day}"


class Invitation(TenantOwned):
    """An invitation to join a tenant with a role: a one-time sign-up link (only the token's hash
    is kept), or one addressed to an account by its username, which that account accepts or
    declines after signing in."""

    token_hash = models.CharField(max_length=64, unique=True)
    role = models.CharField(max_length=16, choices=Role.choices)
    email = models.EmailField(blank=True)
    # The account it is for ("" for a sign-up link anyone holding it may use once).
    username = models.CharField(max_length=150, blank=True, default="")
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    declined_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # An account's invitations are found by its name.
        indexes = [models.Index(fields=["username"], name="tenants_invitation_username")]

    def __str__(self) -> str:
        return f"invitation {self.pk} to {self.tenant_id} as {self.role}"

    @property
    def is_open(self) -> bool:
        from django.utils import timezone

        return (
            self.used_at is None
            and self.revoked_at is None
            and self.declined_at is None
            and self.expires_at > timezone.now()
        )


class RetentionPolicy(TenantOwned):
    """How long a tenant's memories live. Empty limits mean "never"."""

    archive_after_days_unretrieved = models.PositiveIntegerField(null=True, blank=True)
    archive_below_trust = models.FloatField(null=True, blank=True)
    max_active_facts = models.PositiveIntegerField(null=True, blank=True)
    purge_archived_after_days = models.PositiveIntegerField(null=True, blank=True)
    legal_hold = models.BooleanField(default=False)
    # How often beat runs the policy (the retention sweep starts a run when one is due).
    run_every_hours = models.PositiveIntegerField(default=24)
    # How often the importance sweep recomputes the tenant's facts' importance, and when it
    # last did (claimed by a conditional update: one worker per round).
    importance_every_hours = models.PositiveIntegerField(default=1)
    importance_recomputed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant"], name="retention_one_per_tenant"),
        ]

    def __str__(self) -> str:
        return f"retention policy of tenant {self.tenant_id}"


class TenantAction(models.TextChoices):
    """What a TenantEvent records (the column takes any text; these are the ones written)."""

    TENANT_CREATE = "tenant_create", "tenant created"
    SETTINGS_UPDATE = "settings_update", "settings changed"
    MEMBER_SET = "member_set", "member added or role changed"
    MEMBER_REMOVE = "member_remove", "member removed"
    MEMBER_INVITE = "member_invite", "member invited"
    INVITE_ACCEPT = "invite_accept", "invitation accepted"
    INVITE_REVOKE = "invite_revoke", "invitation withdrawn"
    PASSWORD_RESET_LINK = "password_reset_link", "password reset link made"
    APIKEY_CREATE = "apikey_create", "API key created"
    APIKEY_REVOKE = "apikey_revoke", "API key revoked"
    APIKEY_ROTATE = "apikey_rotate", "API key rotated"
    TENANT_RENAME = "tenant_rename", "tenant renamed"
    RETENTION_UPDATE = "retention_update", "retention policy changed"
    RETENTION_DRY_RUN = "retention_dry_run", "retention dry run"
    RETENTION_RUN = "retention_run", "retention run started by hand"
    AUDIT_EXPORT = "audit_export", "audit log exported"
    FACTS_EXPORT = "facts_export", "facts exported"
    TENANT_DELETE = "tenant_delete", "tenant deleted"
    DICTIONARY_ADD = "dictionary_add", "dictionary term added"
    DICTIONARY_CHANGE = "dictionary_change", "dictionary term changed"
    DICTIONARY_REMOVE = "dictionary_remove", "dictionary term removed"
    ENTITY_RENAME = "entity_rename", "entity renamed"
    ENTITY_RETYPE = "entity_retype", "entity type changed"
    ENTITY_ALIAS_ADD = "entity_alias_add", "entity alias added"
    ENTITY_ALIAS_REMOVE = "entity_alias_remove", "entity alias removed"
    ENTITY_MERGE = "entity_merge", "entities merged"
    ENTITY_SPLIT = "entity_split", "entity alias split off"
    ENTITY_ALIAS_DISMISS = "entity_alias_dismiss", "entity alias suggestion dismissed"


class TenantEvent(TenantOwned, Chained):
    """Append-only audit of changes to a tenant itself: settings, members, keys, retention."""

    action = models.CharField(max_length=32)
    actor = models.CharField(max_length=200)
    target = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "-at"], name="tenantevent_tenant_at")]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "chain_seq"], name="tenantevent_chain")
        ]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor} at {self.at:%Y-%m-%d %H:%M:%S}"


class TenantDeletion(models.Model):
    """That a tenant was deleted, by whom, and what it held: kept after the tenant and all of
    its rows (its audit trail included) are gone. Not tenant data: no tenant is left."""

    slug = models.CharField(max_length=63)
    name = models.CharField(max_length=200)
    tenant_pk = models.BigIntegerField()
    actor = models.CharField(max_length=200)
    counts = models.JSONField(default=dict)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.slug} deleted by {self.actor} at {self.at:%Y-%m-%d %H:%M}"


class AuditChainHead(TenantOwned):
    """The newest link of a tenant's audit chain: its position and hash. Written only by the
    owner's trigger that chains each audit row; the runtime role may read it."""

    seq = models.BigIntegerField()
    hash = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant"], name="auditchainhead_tenant")]

    def __str__(self) -> str:
        return f"audit chain head of tenant {self.tenant_id}: {self.seq}"


class AuditDigest(TenantOwned):
    """A published digest of a tenant's audit chain: how many events it held and the hash of
    the last, at a moment. Append-only; also written to the log and into audit exports, so that
    a copy kept elsewhere can prove later that nothing before it was rewritten or removed."""

    count = models.BigIntegerField()
    head = models.CharField(max_length=64)  # hex; empty for a chain with no event yet
    at = models.DateTimeField()
    reason = models.CharField(max_length=16)  # "schedule" or "export"

    class Meta:
        indexes = [models.Index(fields=["tenant", "-at"], name="auditdigest_tenant_at")]

    def __str__(self) -> str:
        return f"{self.count}:{self.head}"
