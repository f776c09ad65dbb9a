"""Prometheus metrics that processes record as they work (prometheus_client).

prometheus_client is the Prometheus project's own client for Python: the exposition format,
histograms, and a multi-process mode for servers that fork (gunicorn's workers, Celery's pool).
In that mode (PROMETHEUS_MULTIPROC_DIR set before the first import; `mnemosyne up` sets it to
the data directory's `run/metrics`, emptied at each start) each process writes its samples to
memory-mapped files in that folder and `/metrics` adds up the files of every process, web and
worker alike, the dead included (their counts stay counted). Without it, a process serves its
own counts.

Every label has a bounded set of values set by code, never by a caller: a route is the URL
pattern's name, a task its registered name (`other` for any name that is not Mnemosyne's), a
channel one of recall's. No tenant id, slug or path.
"""

from __future__ import annotations

import os

from prometheus_client import Counter, Gauge, Histogram

if folder := os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    # Each metric below opens its file there as it is made: a missing folder would stop the
    # process here (`mnemosyne up` makes and empties it before it starts any).
    os.makedirs(folder, exist_ok=True)

# Seconds: from a cached context block (~1 ms) to a slow import request (tens of seconds).
_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_TASK_SECONDS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 240.0, 600.0)

HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
RECALL_CHANNELS = ("fts", "vec", "entity", "embed_query")
CONTEXT_CACHE = ("hit", "miss", "off")
TASK_OUTCOMES = frozenset({"success", "failure", "retry", "revoked", "rejected", "ignored"})
# Tasks whose names are counted as they are; any other name is `other`.
TASK_PREFIXES = ("facts.tasks.", "retrieval.tasks.", "memoryadmin.tasks.", "tenants.tasks.")

http_request_seconds = Histogram(
    "mnemosyne_http_request_duration_seconds",
    "Time to answer an HTTP request, by route (URL pattern name), method and status code.",
    ["route", "method", "status"],
    buckets=_SECONDS,
)
recall_seconds = Histogram(
    "mnemosyne_recall_duration_seconds",
    "Time of a hybrid recall (retrieval.search.recall_search), all channels and fusion.",
    buckets=_SECONDS,
)
recall_channel_seconds = Histogram(
    "mnemosyne_recall_channel_duration_seconds",
    "Time of one channel of a recall: fts (full text), vec (vectors, embed_query included), "
    "entity, embed_query (embedding the query).",
    ["channel"],
    buckets=_SECONDS,
)
context_seconds = Histogram(
    "mnemosyne_context_duration_seconds",
    "Time to give an agent its context block, by cache: hit, miss (assembled), off (TTL 0).",
    ["cache"],
    buckets=_SECONDS,
)
tasks_total = Counter(
    "mnemosyne_tasks",
    "Celery tasks finished, by task name and outcome (success, failure, retry, ...).",
    ["task", "outcome"],
)
task_seconds = Histogram(
    "mnemosyne_task_duration_seconds",
    "Time a Celery task ran, by task name.",
    ["task"],
    buckets=_TASK_SECONDS,
)
retention_runs_total = Counter(
    "mnemosyne_retention_runs",
    "Retention runs that ended, by outcome: done or failed (dry runs included).",
    ["outcome"],
)
retention_facts_total = Counter(
    "mnemosyne_retention_facts",
    "Facts retention runs archived or purged (dry runs not counted).",
    ["action"],
)
retention_last_run = Gauge(
    "mnemosyne_retention_last_run_timestamp_seconds",
    "When a retention run last ended (Unix time).",
    multiprocess_mode="max",
)


def route_label(view_name: str | None) -> str:
    return view_name or "unmatched"


def method_label(method: str | None) -> str:
    return method if method in HTTP_METHODS else "other"


def task_label(name: str | None) -> str:
    return name if name and name.startswith(TASK_PREFIXES) else "other"


def http_request_observe(
    *, route: str | None, method: str | None, status: int, seconds: float
) -> None:
    http_request_seconds.labels(route_label(route), method_label(method), str(status)).observe(
        seconds
    )


def recall_observe(timings_ms: dict[str, float]) -> None:
    """A recall's timings as retrieval.search measures them (ms, per channel and total)."""
    if "total" in timings_ms:
        recall_seconds.observe(timings_ms["total"] / 1000)
    for channel in RECALL_CHANNELS:
        if channel in timings_ms:
            recall_channel_seconds.labels(channel).observe(timings_ms[channel] / 1000)


def context_observe(*, cache: str, seconds: float) -> None:
    context_seconds.labels(cache if cache in CONTEXT_CACHE else "off").observe(seconds)


def task_observe(*, name: str | None, outcome: str, seconds: float | None) -> None:
    label = task_label(name)
    tasks_total.labels(label, outcome if outcome in TASK_OUTCOMES else "other").inc()
    if seconds is not None:
        task_seconds.labels(label).observe(seconds)


def retention_run_observe(*, failed: bool, archived: int = 0, purged: int = 0) -> None:
    """A retention run that ended, with what it archived and purged (0 for a dry run)."""
    import time

    retention_runs_total.labels("failed" if failed else "done").inc()
    retention_last_run.set(time.time())
    if archived > 0:
        retention_facts_total.labels("archived").inc(archived)
    if purged > 0:
        retention_facts_total.labels("purged").inc(purged)
