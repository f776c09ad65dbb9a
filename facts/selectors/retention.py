"""What the tenant's retention policy would do if it ran now (the runs: facts.retention)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from facts.models import Fact, Status
from tenants.inputs import retention_changes_validate
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.selectors import retention_policy_get


@dataclass(frozen=True)
class RetentionPreview:
    """What the policy would do if it ran now: facts it would archive (by reason) and purge."""

    legal_hold: bool
    active: int
    archived: int
    archive_unretrieved: int
    archive_low_trust: int
    archive_over_limit: int
    archive: int
    purge: int
    policy: dict[str, Any]  # the limits counted with


_POLICY_FIELDS = (
    "archive_after_days_unretrieved",
    "archive_below_trust",
    "max_active_facts",
    "purge_archived_after_days",
    "legal_hold",
    "run_every_hours",
    "importance_every_hours",
)


def _preview_counts(values: dict[str, Any], moment: datetime) -> dict[str, Count]:
    """The counts a preview needs, each a filtered COUNT of one aggregate query. Only the
    limits that are set count: an unset one archives nothing."""
    active = Q(status=Status.ACTIVE)
    archivable = active & Q(pinned=False)  # a pinned fact is never archived
    archived = Q(status=Status.ARCHIVED)
    rules: dict[str, Q] = {}
    if values["archive_after_days_unretrieved"] is not None:
        cutoff = moment - timedelta(days=values["archive_after_days_unretrieved"])
        rules["unretrieved"] = Q(last_seen__lt=cutoff)
    if values["archive_below_trust"] is not None:
        rules["low_trust"] = Q(trust_score__lt=values["archive_below_trust"])
    aggregates = {
        "active": Count("pk", filter=active),
        "archivable": Count("pk", filter=archivable),
        "archived": Count("pk", filter=archived),
    }
    for name, rule in rules.items():
        aggregates[name] = Count("pk", filter=archivable & rule)
    if rules:
        either = Q()
        for rule in rules.values():
            either |= rule
        aggregates["either"] = Count("pk", filter=archivable & either)
    if values["purge_archived_after_days"] is not None:
        cutoff = moment - timedelta(days=values["purge_archived_after_days"])
        aggregates["purge"] = Count("pk", filter=archived & Q(archived_on__lt=cutoff))
    return aggregates


def retention_preview(
    *, tenant: Tenant, changes: dict[str, Any] | None = None, now: datetime | None = None
) -> RetentionPreview:
    """Count what the tenant's policy (with `changes` applied, unsaved) would archive and
    purge now, in one query. Nothing is archived or purged under legal hold.

    - unretrieved: active facts not retrieved (or, never retrieved, not created) for N days;
    - low trust: active facts below the trust floor;
    - over limit: the active facts beyond `max_active_facts` once the two above are gone;
    - purge: archived facts archived more than M days ago.
    """
    policy = retention_policy_get(tenant=tenant)
    values = {field: getattr(policy, field) for field in _POLICY_FIELDS}
    if changes:
        values.update(retention_changes_validate(dict(changes)))
    aggregates = _preview_counts(values, now or timezone.now())
    with tenant_scope(tenant):
        found = (
            Fact.objects.for_tenant(tenant)
            .annotate(
                last_seen=Coalesce("last_retrieved_at", "created_at"),
                # When retention archived it; its last change for facts archived otherwise.
                archived_on=Coalesce("archived_at", "updated_at"),
            )
            .aggregate(**aggregates)
        )
    counts = {"unretrieved": 0, "low_trust": 0, "either": 0, "purge": 0, **found}
    over = 0
    if values["max_active_facts"] is not None:
        over = max(0, counts["active"] - counts["either"] - values["max_active_facts"])
        over = min(over, counts["archivable"] - counts["either"])
    hold = bool(values["legal_hold"])
    return RetentionPreview(
        legal_hold=hold,
        active=counts["active"],
        archived=counts["archived"],
        archive_unretrieved=0 if hold else counts["unretrieved"],
        archive_low_trust=0 if hold else counts["low_trust"],
        archive_over_limit=0 if hold else over,
        archive=0 if hold else counts["either"] + over,
        purge=0 if hold else counts["purge"],
        policy=values | {"updated_at": policy.updated_at},
    )
