"""`/metrics`: Prometheus metrics, for this machine or a bearer of MNEMOSYNE_METRICS_TOKEN.

What processes record as they work (observability.metrics: requests, recalls, contexts, tasks,
retention runs) is added up over every process of this host that shares the multi-process
folder (PROMETHEUS_MULTIPROC_DIR); what is a state is read at each scrape by StateCollector:
the database's connections, the embedding backlog and the broker's queues. Nothing in it names
a tenant.
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Iterator

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric

# The text format every Prometheus version reads (our names need nothing newer).
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

from surfaces.base.security import is_local

logger = logging.getLogger(__name__)
# Tenants whose backlog is counted at a scrape (each is one count in its own scope); the
# number of tenants with a backlog is always exact.
BACKLOG_TENANTS = 100


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _database() -> Iterator[Metric]:
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT coalesce(state, 'unknown'), count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() GROUP BY 1"
            )
            states = dict(cursor.fetchall())
            cursor.execute("SELECT current_setting('max_connections')::int")
            limit = cursor.fetchone()[0]
    except DatabaseError as error:
        logger.warning("metrics: the database does not answer: %s", str(error).strip()[:200])
        yield _gauge("mnemosyne_database_up", "Whether the database answered this scrape.", 0)
        return
    yield _gauge("mnemosyne_database_up", "Whether the database answered this scrape.", 1)
    family = GaugeMetricFamily(
        "mnemosyne_database_connections",
        "Connections to Mnemosyne's database, every client's, by state (pg_stat_activity).",
        labels=["state"],
    )
    for state in ("active", "idle", "idle in transaction"):
        states.setdefault(state, 0)
    for state, count in sorted(states.items()):
        family.add_metric([state], count)
    yield family
    yield _gauge(
        "mnemosyne_database_max_connections", "The server's max_connections.", float(limit)
    )


def _embedding_backlog() -> Iterator[Metric]:
    from facts.models import Fact, Status
    from indexing.vectors import embedding_target_model
    from tenants.cross_tenant import tenants_unembedded
    from tenants.scope import tenant_scope

    try:
        target = embedding_target_model()
        tenant_ids = tenants_unembedded(model=target) if target else []
        facts = 0
        for tenant_id in tenant_ids[:BACKLOG_TENANTS]:
            with tenant_scope(tenant_id):
                waiting = Fact.objects.for_tenant(tenant_id).filter(status=Status.ACTIVE)
                facts += waiting.exclude(embedding_model=target).count()
    except DatabaseError:
        return  # mnemosyne_database_up says so
    yield _gauge(
        "mnemosyne_embedding_backlog_facts",
        f"Active facts without a vector of the model new vectors are made with (counted in "
        f"at most {BACKLOG_TENANTS} tenants).",
        facts,
    )
    yield _gauge(
        "mnemosyne_embedding_backlog_tenants",
        "Tenants with active facts still waiting for a vector.",
        len(tenant_ids),
    )


def _broker() -> Iterator[Metric]:
    from memoryadmin.celery import app

    family = GaugeMetricFamily(
        "mnemosyne_broker_queue_messages",
        "Messages waiting in each of the broker's queues (celery, heartbeat, embed).",
        labels=["queue"],
    )
    try:
        with app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
            channel = conn.default_channel
            for queue in settings.CELERY_TASK_QUEUES:
                family.add_metric([queue.name], _queue_size(channel, queue.name))
    except Exception as error:  # noqa: BLE001 - any transport error means "down"; we say so
        logger.warning("metrics: the broker does not answer: %s", str(error)[:200])
        yield _gauge("mnemosyne_broker_up", "Whether the broker answered this scrape.", 0)
        return
    yield _gauge("mnemosyne_broker_up", "Whether the broker answered this scrape.", 1)
    yield family


def _queue_size(channel: object, name: str) -> int:
    try:
        return int(channel.queue_declare(queue=name, passive=True).message_count)  # type: ignore[attr-defined]
    except Exception as error:  # noqa: BLE001 - a queue never used is not declared yet
        if "NOT_FOUND" in str(error) or "no queue" in str(error).lower():
            return 0
        raise


class StateCollector(Collector):
    """States read at each scrape, in the process that answers it."""

    def collect(self) -> Iterator[Metric]:
        yield from _database()
        yield from _embedding_backlog()
        yield from _broker()


def metrics_text() -> bytes:
    """The exposition: every process's recorded metrics, then the states read now."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        recorded = CollectorRegistry()
        multiprocess.MultiProcessCollector(recorded)
    else:
        recorded = REGISTRY  # this process's own counts
    states = CollectorRegistry(auto_describe=False)
    states.register(StateCollector())
    return generate_latest(recorded) + generate_latest(states)


def _authorised(request: HttpRequest) -> bool | None:
    """True: may read; False: a wrong or missing token; None: no token is configured."""
    if is_local(request):
        return True
    token = settings.MNEMOSYNE_METRICS_TOKEN
    if not token:
        return None
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    allowed = _authorised(request)
    if allowed is None:
        return JsonResponse(
            {"message": "metrics are read from this machine, or with MNEMOSYNE_METRICS_TOKEN"},
            status=403,
        )
    if not allowed:
        answer = JsonResponse({"message": "a bearer token is needed to read metrics"}, status=401)
        answer["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return answer
    return HttpResponse(metrics_text(), content_type=CONTENT_TYPE_PLAIN_0_0_4)
