"""What an operator sees: /metrics after a recall through the REST API (from this machine, or
with the token; no tenant in any label), the request id, and JSON log lines that carry the
request id and the tenant's slug, a request's and a task's."""

from __future__ import annotations

import io
import json
import logging
import logging.config

import pytest
from django.test import Client
from django.urls import resolve
from prometheus_client.parser import text_string_to_metric_families

from tests.api_fixtures import bearer


@pytest.fixture
def agent(tenant, system_actor):
    from tenants.services import apikey_create

    return bearer(apikey_create(tenant=tenant, name="hermes", actor=system_actor).token)


def _scrape(client=None, **headers) -> dict[tuple[str, tuple], float]:
    answer = (client or Client()).get("/metrics", **headers)
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for family in text_string_to_metric_families(answer.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def _value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_after_a_recall_through_the_rest_api(agent, tenant) -> None:
    stored = agent.post("/api/v1/facts", {"content": "The lab moved to building 4"}, "json")
    assert stored.status_code == 201
    route = resolve("/api/v1/recall").view_name
    before = _scrape()
    recalled = agent.post("/api/v1/recall", {"query": "where is the lab?"}, "json")
    assert recalled.status_code == 200
    after = _scrape()

    def grew(name: str, **labels) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    http = "mnemosyne_http_request_duration_seconds_count"
    assert grew(http, route=route, method="POST", status="200") == 1
    assert grew("mnemosyne_recall_duration_seconds_count") == 1
    assert grew("mnemosyne_recall_channel_duration_seconds_count", channel="fts") == 1
    assert _value(after, "mnemosyne_database_up") == 1
    assert _value(after, "mnemosyne_database_connections", state="active") >= 1
    assert _value(after, "mnemosyne_database_max_connections") > 0
    assert ("mnemosyne_embedding_backlog_facts", ()) in after
    assert ("mnemosyne_embedding_backlog_tenants", ()) in after
    assert _value(after, "mnemosyne_broker_up") == 1
    assert ("mnemosyne_broker_queue_messages", (("queue", "embed"),)) in after
    # Bounded labels: no tenant, no path, nothing a caller typed.
    for _, labels in after:
        for key, value in labels:
            assert "acme" not in value and not value.startswith("/"), (key, value)
            assert "lab" not in value


def test_an_unknown_path_is_one_route_not_its_own(client, db) -> None:
    before = _scrape()
    for path in ("/api/v1/no-such-thing", "/api/v1/another-one", "/t/acme/nowhere"):
        assert client.get(path).status_code == 404
    after = _scrape()
    http = "mnemosyne_http_request_duration_seconds_count"
    grew = _value(after, http, route="unmatched", method="GET", status="404") - _value(
        before, http, route="unmatched", method="GET", status="404"
    )
    assert grew == 3


def test_metrics_from_elsewhere_need_the_token(settings, db) -> None:
    elsewhere = Client(REMOTE_ADDR="203.0.113.7")
    refused = elsewhere.get("/metrics")
    assert refused.status_code == 403 and "MNEMOSYNE_METRICS_TOKEN" in refused.json()["message"]
    settings.MNEMOSYNE_METRICS_TOKEN = "scrape-token-0123456789"
    assert elsewhere.get("/metrics").status_code == 401
    wrong = elsewhere.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-wrong")
    assert wrong.status_code == 401
    assert (
        "mnemosyne_database_up"
        in elsewhere.get(
            "/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-0123456789"
        ).content.decode()
    )


def test_every_answer_carries_its_request_id(client, db) -> None:
    fresh = client.get("/healthz")["X-Request-ID"]
    assert len(fresh) == 32 and fresh != client.get("/healthz")["X-Request-ID"]
    kept = client.get("/healthz", HTTP_X_REQUEST_ID="proxy-4f2a9c1e-77")
    assert kept["X-Request-ID"] == "proxy-4f2a9c1e-77"
    for bad in ("short", "has spaces in it", "x" * 200, '"><script>'):
        assert client.get("/healthz", HTTP_X_REQUEST_ID=bad)["X-Request-ID"] != bad


@pytest.fixture
def json_log(settings):
    """The settings' LOGGING with MNEMOSYNE_LOG_FORMAT=json; the lines its handler wrote."""
    from observability.logs import logging_config

    settings.MNEMOSYNE_LOG_FORMAT = "json"
    logging.config.dictConfig(logging_config(json_lines=True, level="INFO", extra_filters=[]))
    written = io.StringIO()
    (handler,) = logging.getLogger().handlers
    handler.setStream(written)  # type: ignore[attr-defined]

    def lines() -> list[dict]:
        return [json.loads(line) for line in written.getvalue().splitlines() if line]

    yield lines
    logging.config.dictConfig(settings.LOGGING)


def test_a_json_log_line_carries_the_request_id_and_the_tenant(agent, json_log) -> None:
    answer = agent.post(
        "/api/v1/recall", {"query": "where is the lab?"}, "json", HTTP_X_REQUEST_ID="req-0001-abcd"
    )
    assert answer.status_code == 200 and answer["X-Request-ID"] == "req-0001-abcd"
    lines = [line for line in json_log() if line["logger"] == "mnemosyne.request"]
    assert len(lines) == 1
    line = lines[0]
    assert line["request_id"] == "req-0001-abcd" and line["tenant"] == "acme"
    assert line["route"] == resolve("/api/v1/recall").view_name and line["status"] == 200
    assert line["level"] == "INFO" and "time" in line


def test_a_tasks_log_lines_carry_the_tenant_and_the_request_that_sent_it(tenant, json_log) -> None:
    from celery import shared_task

    from memoryadmin.celery import app
    from observability.context import log_context_pop, log_context_push
    from tenants.jobs import tenant_task

    @shared_task(name="tests.test_metrics.log_a_line")
    @tenant_task()
    def log_a_line(tenant) -> int:
        logging.getLogger("tests.task").info("working for the tenant")
        return 1

    app.conf.task_always_eager = True
    try:
        token = log_context_push("req-from-a-page-01")
        try:
            log_a_line.delay(tenant.pk)
            logging.getLogger("tests.page").info("after the task")
        finally:
            log_context_pop(token)
        alone = log_a_line.apply(args=[tenant.pk])
    finally:
        app.conf.task_always_eager = False
    lines = json_log()
    task_lines = [line for line in lines if line["logger"] == "tests.task"]
    assert task_lines[0]["tenant"] == "acme"
    assert task_lines[0]["request_id"] == "req-from-a-page-01"
    assert task_lines[1]["tenant"] == "acme" and task_lines[1]["request_id"] == alone.id
    # The request's own context comes back once its task has run.
    page = next(line for line in lines if line["logger"] == "tests.page")
    assert page["request_id"] == "req-from-a-page-01" and page["tenant"] == ""


def test_tasks_are_counted_by_name_and_outcome(tenant, db) -> None:
    from memoryadmin.celery import app

    before = _scrape()
    app.conf.task_always_eager = True
    try:
        app.tasks["facts.tasks.facts_stats_fold"].delay(tenant.pk)
    finally:
        app.conf.task_always_eager = False
    after = _scrape()
    name, labels = "mnemosyne_tasks_total", {"task": "facts.tasks.facts_stats_fold"}
    assert (
        _value(after, name, outcome="success", **labels)
        - _value(before, name, outcome="success", **labels)
        == 1
    )


def test_the_grafana_dashboard_reads_only_metrics_that_exist(db) -> None:
    """docs/grafana-dashboard.json cannot drift from the code: every metric its panels query
    is one /metrics exposes."""
    import re

    from tests.helpers import REPO

    dashboard = json.loads((REPO / "docs" / "grafana-dashboard.json").read_text())
    queried = {
        re.sub(r"_(bucket|count|sum|total)$", "", name)
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        for name in re.findall(r"mnemosyne_[a-z_]+", target["expr"])
    }
    answer = Client().get("/metrics").content.decode()
    exposed = {family.name for family in text_string_to_metric_families(answer)}
    assert len(queried) >= 12
    assert queried <= exposed, queried - exposed


def test_a_retention_run_is_counted_with_what_it_archived(
    tenant, owner_actor, settings, tmp_path
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from facts import services
    from facts.inputs import fact_draft
    from facts.models import Fact
    from facts.retention import retention_run_start
    from facts.tasks import retention_run
    from tenants.inputs import retention_changes
    from tenants.scope import tenant_scope
    from tenants.services import retention_policy_update

    settings.MNEMOSYNE_ARCHIVE_DIR = tmp_path / "archives"
    for content in ("Zed's old phone number is 555-0199", "The old office was on Elm Street"):
        fact = services.fact_add(
            tenant=tenant, actor=owner_actor, draft=fact_draft({"content": content})
        ).fact
        with tenant_scope(tenant):
            Fact.objects.for_tenant(tenant).filter(pk=fact.pk).update(
                created_at=timezone.now() - timedelta(days=400)
            )
    retention_policy_update(
        tenant=tenant,
        actor=owner_actor,
        changes=retention_changes({"archive_after_days_unretrieved": 365}),
    )
    before = _scrape()
    run, _ = retention_run_start(tenant=tenant, actor=owner_actor)
    retention_run(tenant.pk, run.pk)  # the task, as a worker runs it
    after = _scrape()

    def grew(name: str, **labels) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert grew("mnemosyne_retention_runs_total", outcome="done") == 1
    assert grew("mnemosyne_retention_facts_total", action="archived") == 2
    assert _value(after, "mnemosyne_retention_last_run_timestamp_seconds") > 0
