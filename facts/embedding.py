"""Giving facts their vectors: claimed in batches, embedded by every target model, stored with
each model's name and dimension."""

from __future__ import annotations

from django.db.models import Q

from facts.models import Fact, FactVector, Kind, Status
from retrieval.vectors import configured_embedder, embedding_targets, not_model
from tenants import cross_tenant
from tenants.models import Tenant
from tenants.scope import tenant_scope

# Facts claimed per batch (the workers, the benchmarks). The embedder sorts a batch's texts by
# length before it splits them into its own runs of 32, so a larger batch pads less: LoCoMo's
# turns embedded about 45% faster in batches of 256 than of 64 (512: no faster, and each claim
# holds its rows longer).
EMBED_BATCH = 256


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


def _previous_turns(tenant: Tenant, facts: list[Fact]) -> dict[tuple[str, int | None], Fact]:
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


def facts_embed_batch(*, tenant: Tenant, limit: int = EMBED_BATCH) -> int:
    """Embed up to `limit` of the tenant's active facts that have no vector of the configured
    model yet (new facts, and during a model switch every older one). Returns how many.

    Rows are claimed with SKIP LOCKED, so several workers share the backlog without doing any
    fact twice; a crash leaves the rows unembedded for the next run.
    """
    targets = embedding_targets()
    configured = targets[0][0].name
    with tenant_scope(tenant):
        facts = list(
            Fact.objects.for_tenant(tenant)
            .filter(not_model(configured), status=Status.ACTIVE)
            .only(
                "id", "tenant_id", "kind", "speaker", "content", "session_id", "position",
                "embedding_model",
            )
            # Facts never embedded ('' sorts first) before older ones a model switch re-embeds:
            # a fact stored during a long switch is not left without any vector.
            .order_by("embedding_model", "id")
            .select_for_update(skip_locked=True)[:limit]
        )  # fmt: skip
        if not facts:
            return 0
        previous = _previous_turns(tenant, facts)
        texts = [
            embedding_text(f, previous.get((f.session_id, (f.position or 0) - 1))) for f in facts
        ]
        rows = []
        for space, embedder in targets:
            # A fact that already has the serving model's vector (made before the switch) needs
            # only the configured model's.
            todo = [i for i, f in enumerate(facts) if f.embedding_model != space.name]
            vectors = embedder.embed([texts[i] for i in todo], purpose="passage")
            rows += [
                FactVector(
                    tenant=tenant, fact_id=facts[i].pk, model=space.name,
                    dimension=space.dimension, embedding=vector,
                )
                for i, vector in zip(todo, vectors, strict=True)
            ]  # fmt: skip
        FactVector.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["tenant", "fact", "model"],
            update_fields=["dimension", "embedding"],
        )
        Fact.objects.for_tenant(tenant).filter(pk__in=[f.pk for f in facts]).update(
            embedding_model=configured
        )
        return len(facts)


def tenants_with_pending_embeddings() -> list[int]:
    return cross_tenant.tenants_unembedded(model=configured_embedder().name)
