"""Recall latency messages: each counts once, however often the broker delivers it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from indexing.models import RecallLatency, RecallLatencyBatch
from retrieval.latency import BUCKET_COUNT, LATENCY_BATCH_DAYS, bucket_of
from retrieval.tasks import retrieval_store_latencies
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _counts(ms: float, n: int) -> list[int]:
    counts = [0] * BUCKET_COUNT
    counts[bucket_of(ms)] = n
    return counts


def _chart(tenant) -> dict[str, int]:
    with tenant_scope(tenant):
        rows = RecallLatency.objects.for_tenant(tenant).order_by("hour")
        return {row.hour.isoformat(): row.count for row in rows}


def test_a_message_delivered_twice_counts_once(tenant, other_tenant) -> None:
    ten, eleven = "2026-12-01T10:00:00+00:00", "2026-12-01T11:00:00+00:00"
    # One message: two hours of one tenant (a window across the hour) and another tenant.
    rows = [[tenant.pk, ten, _counts(12, 3)], [tenant.pk, eleven, _counts(40, 2)],
            [other_tenant.pk, ten, _counts(5, 7)]]  # fmt: skip
    batch = str(uuid.uuid4())
    assert retrieval_store_latencies(rows, batch) == 3
    assert retrieval_store_latencies(rows, batch) == 0, "a redelivery adds nothing"
    assert _chart(tenant) == {ten: 3, eleven: 2}
    assert _chart(other_tenant) == {ten: 7}
    # The next message of the same hours adds to them.
    assert retrieval_store_latencies([[tenant.pk, ten, _counts(12, 1)]], str(uuid.uuid4())) == 1
    assert _chart(tenant) == {ten: 4, eleven: 2}
    # A message of an older version carries no id and is added as it comes.
    assert retrieval_store_latencies([[tenant.pk, eleven, _counts(40, 1)]]) == 1
    assert _chart(tenant) == {ten: 4, eleven: 3}


def test_a_message_retried_after_part_of_it_was_added_adds_the_rest(tenant, other_tenant) -> None:
    hour = "2026-12-01T10:00:00+00:00"
    batch = str(uuid.uuid4())
    retrieval_store_latencies([[tenant.pk, hour, _counts(12, 3)]], batch)  # its first row only
    rows = [[tenant.pk, hour, _counts(12, 3)], [other_tenant.pk, hour, _counts(12, 5)]]
    assert retrieval_store_latencies(rows, batch) == 1
    assert _chart(tenant) == {hour: 3}
    assert _chart(other_tenant) == {hour: 5}


def test_old_message_ids_are_forgotten(tenant) -> None:
    hour = "2026-12-01T10:00:00+00:00"
    retrieval_store_latencies([[tenant.pk, hour, _counts(12, 1)]], str(uuid.uuid4()))
    with tenant_scope(tenant):
        RecallLatencyBatch.objects.for_tenant(tenant).update(
            at=datetime.now(UTC) - timedelta(days=LATENCY_BATCH_DAYS, minutes=1)
        )
    retrieval_store_latencies([[tenant.pk, hour, _counts(12, 1)]], str(uuid.uuid4()))
    with tenant_scope(tenant):
        assert RecallLatencyBatch.objects.for_tenant(tenant).count() == 1
    assert _chart(tenant) == {hour: 2}
