"""A large tenant's own indexes.

Full text and vectors are found through indexes shared by every tenant (a GIN index of the
search vectors, an HNSW index per model), and each query keeps only its tenant's rows. For a
tenant that holds a fifth of a million facts, that means reading past the other four fifths:
the GIN index hands over every tenant's matches of a common word, and the HNSW scan goes on
until enough of its neighbours are the tenant's. So a tenant with at least
MNEMOSYNE_TENANT_INDEX_FACTS active facts (50,000 by default) gets its own partial indexes, a GIN
index of its search vectors and an HNSW index of its vectors of the serving model; PostgreSQL's
planner picks them for its queries by itself (the queries name the tenant). A beat task keeps
them in step: made when a tenant passes the mark, dropped when it falls below half of it, when
it is deleted, or when its model no longer serves.

Building one locks the table against writes while it runs (the runtime role cannot build
CONCURRENTLY): for a tenant of 200,000 facts, a few seconds for the GIN index (new facts wait)
and about half a minute for the HNSW index (new vectors wait; the workers' embedding does).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection

from facts.selectors.dashboard import fact_counts
from indexing.vectors import index_name, serving_space
from tenants.models import Tenant

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^(fact_search|factvector_hnsw_[0-9a-f]{12})_t([0-9]+)$")


def search_index_name(tenant_id: int) -> str:
    return f"fact_search_t{int(tenant_id)}"


def vector_index_name(tenant_id: int, model: str) -> str:
    return f"{index_name(model)}_t{int(tenant_id)}"


@dataclass
class IndexSync:
    created: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def tenant_indexes() -> set[str]:
    """The names of the tenant indexes that exist now."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename IN ('facts_fact', 'facts_factvector')"
        )
        return {row[0] for row in cursor.fetchall() if _NAME.match(row[0])}


def tenant_indexes_sync(*, threshold: int | None = None) -> IndexSync:
    """Make the indexes of every tenant at or past `threshold` active facts (the setting by
    default) and drop those of tenants below half of it, deleted, or of a model that no longer
    serves. Safe to run twice, and by two workers at once."""
    mark = settings.MNEMOSYNE_TENANT_INDEX_FACTS if threshold is None else threshold
    space = serving_space()
    existing = tenant_indexes()
    wanted: dict[str, tuple[int, str | None, int]] = {}
    for tenant in Tenant.objects.order_by("pk"):
        counts = fact_counts(tenant=tenant, embedding_model=None)
        active = counts.facts + counts.turns
        names: dict[str, tuple[int, str | None, int]] = {
            search_index_name(tenant.pk): (tenant.pk, None, 0)
        }
        if space is not None:
            names[vector_index_name(tenant.pk, space.name)] = (
                tenant.pk, space.name, space.dimension
            )  # fmt: skip
        for name, how in names.items():
            # Half the mark keeps an index once made: a tenant near it is not rebuilt each day.
            if active >= mark or (name in existing and active >= mark // 2):
                wanted[name] = how
    done = IndexSync()
    with connection.cursor() as cursor:
        for name in sorted(existing - wanted.keys()):
            cursor.execute("SELECT mnemosyne_tenant_index_drop(%s)", [name])
            done.dropped.append(name)
            logger.info("tenant index %s dropped", name)
        for name, (tenant_id, model, dimension) in sorted(wanted.items()):
            if name in existing:
                continue
            cursor.execute(
                "SELECT mnemosyne_tenant_index_create(%s, %s, %s, %s)",
                [name, tenant_id, model, dimension],
            )
            done.created.append(name)
            logger.info("tenant index %s made", name)
    return done
