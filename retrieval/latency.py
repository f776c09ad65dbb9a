"""Recall latency as agents see it, per tenant and hour, for the dashboard's p50/p95 chart.

The read path only counts: `recall_latency_note` adds a sample to this process's histogram (a
dict update). At most every FLUSH_SECONDS a process hands what it counted to a task (after the
commit of the current transaction, like retrieval counts), which adds it to one row per tenant
and hour with a single upsert. A process that dies loses at most its last FLUSH_SECONDS of
samples: this is a chart, not an account.

Latencies are kept as counts in fixed buckets (bounds in milliseconds), so percentiles are
estimates: linear within the bucket that holds them, exact at the bounds.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from tenants.jobs import job_send
from tenants.models import Tenant
from tenants.scope import tenant_scope

logger = logging.getLogger(__name__)

# Upper bounds of the buckets in ms; the last bucket holds everything slower than 5 s.
BUCKETS_MS = (
    1, 2, 3, 5, 7, 10, 15, 20, 30, 40, 50, 70, 100, 150, 200, 300, 400, 500, 700, 1000,
    1500, 2000, 3000, 5000,
)  # fmt: skip
BUCKET_COUNT = len(BUCKETS_MS) + 1
FLUSH_SECONDS = 10.0
# How long a latency message's id is remembered: a message is delivered again within the
# broker's visibility timeout (an hour by default), long before this.
LATENCY_BATCH_DAYS = 2

_lock = threading.Lock()
_pending: dict[tuple[int, str], list[int]] = {}
_window_started: float | None = None


def bucket_of(ms: float) -> int:
    return bisect.bisect_left(BUCKETS_MS, ms)


def _hour(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def recall_latency_note(*, tenant: Tenant, ms: float, now: datetime | None = None) -> None:
    """Count one agent recall that took `ms` milliseconds. Cheap: no I/O but, every
    FLUSH_SECONDS, one task message sent after the current transaction commits."""
    global _window_started
    key = (tenant.pk, _hour(now or timezone.now()).isoformat())
    with _lock:
        counts = _pending.setdefault(key, [0] * BUCKET_COUNT)
        counts[bucket_of(ms)] += 1
        started = time.monotonic()
        if _window_started is None:
            _window_started = started
        if started - _window_started < FLUSH_SECONDS:
            return
        rows = [[tenant_id, hour, counts] for (tenant_id, hour), counts in _pending.items()]
        _pending.clear()
        _window_started = started
    transaction.on_commit(lambda: _send(rows))


def _send(rows: list[list[object]]) -> None:
    try:
        # The batch id makes the message count once however often it is delivered.
        job_send("retrieval.tasks.retrieval_store_latencies", rows, str(uuid.uuid4()))
    except Exception:  # noqa: BLE001 - a broker outage must not fail recall; samples lost
        logger.warning("recall latency samples of %d tenant-hours not sent", len(rows))


def recall_latency_pending_clear() -> None:
    """Forget what this process counted and not yet sent (tests)."""
    global _window_started
    with _lock:
        _pending.clear()
        _window_started = None


def recall_latency_add(
    *, tenant: Tenant, hour: datetime, counts: list[int], batch: uuid.UUID | None = None
) -> bool:
    """Add a histogram of recall latencies to the tenant's row for that hour (one upsert).
    With `batch` (the id of the message that carries it), a batch already added adds nothing
    again; returns whether it was added."""
    if len(counts) != BUCKET_COUNT or any(n < 0 for n in counts):
        raise ValueError(f"a latency histogram has {BUCKET_COUNT} non-negative counts")
    with tenant_scope(tenant) as tenant_id, transaction.atomic(), connection.cursor() as cursor:
        if batch is not None:
            cursor.execute(
                "DELETE FROM retrieval_recalllatencybatch WHERE tenant_id = %s AND at < %s",
                [tenant_id, timezone.now() - timedelta(days=LATENCY_BATCH_DAYS)],
            )
            cursor.execute(
                "INSERT INTO retrieval_recalllatencybatch (tenant_id, batch, at) "
                "VALUES (%s, %s, now()) ON CONFLICT (tenant_id, batch) DO NOTHING RETURNING id",
                [tenant_id, batch],
            )
            if cursor.fetchone() is None:
                return False
        cursor.execute(
            "INSERT INTO retrieval_recalllatency (tenant_id, hour, count, buckets) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (tenant_id, hour) DO UPDATE SET "
            "count = retrieval_recalllatency.count + EXCLUDED.count, "
            "buckets = ARRAY(SELECT a + b FROM unnest(retrieval_recalllatency.buckets, "
            "EXCLUDED.buckets) AS t(a, b))",
            [tenant_id, _hour(hour), sum(counts), counts],
        )
    return True


def histogram_percentile(counts: list[int], share: float) -> float | None:
    """The latency (ms) below which `share` of the samples fall, interpolated in its bucket."""
    total = sum(counts)
    if total == 0:
        return None
    rank = share * total
    seen = 0
    for index, n in enumerate(counts):
        if n and seen + n >= rank:
            low = 0.0 if index == 0 else float(BUCKETS_MS[index - 1])
            if index >= len(BUCKETS_MS):
                return low  # slower than the last bound: that bound is all we know
            high = float(BUCKETS_MS[index])
            return round(low + (high - low) * (rank - seen) / n, 1)
        seen += n
    return float(BUCKETS_MS[-1])


@dataclass(frozen=True)
class LatencyPoint:
    hour: datetime
    count: int
    p50_ms: float | None
    p95_ms: float | None


def recall_latency_series(
    *, tenant: Tenant, hours: int = 48, now: datetime | None = None
) -> list[LatencyPoint]:
    """p50 and p95 of the tenant's agent recalls for each of the last `hours` hours (hours
    without recalls have none)."""
    from indexing.models import RecallLatency

    last = _hour(now or timezone.now())
    first = last - timedelta(hours=hours - 1)
    with tenant_scope(tenant):
        rows = {
            row.hour: row
            for row in RecallLatency.objects.for_tenant(tenant).filter(hour__gte=first)
        }
    series = []
    for offset in range(hours):
        hour = first + timedelta(hours=offset)
        row = rows.get(hour)
        counts = list(row.buckets) if row else []
        series.append(
            LatencyPoint(
                hour=hour,
                count=row.count if row else 0,
                p50_ms=histogram_percentile(counts, 0.50) if counts else None,
                p95_ms=histogram_percentile(counts, 0.95) if counts else None,
            )
        )
    return series
