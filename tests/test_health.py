"""GET /healthz: 200 when every part is up; 503 naming the failing parts otherwise."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memoryadmin.celery import app as celery_app
from operations import health
from operations.models import ServiceHeartbeat

pytestmark = pytest.mark.django_db


def _beat(name: str, seconds_ago: float) -> None:
    ServiceHeartbeat.objects.update_or_create(
        name=name, defaults={"pid": 1, "seen_at": timezone.now() - timedelta(seconds=seconds_ago)}
    )


def _fresh_services() -> None:
    _beat("worker:worker@test", 1)
    _beat("beat", 1)


def test_all_parts_up_answers_200(client: Client) -> None:
    _fresh_services()
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok" and body["failing"] == []
    assert body["checks"]["database"]["pgvector"] >= "0.8"
    assert body["checks"]["worker"]["name"] == "worker@test"
    assert body["checks"]["embedder"]["dimension"] > 0
    assert response["Cache-Control"].startswith("max-age=0")


def test_no_worker_ever_seen_is_named(client: Client) -> None:
    _beat("beat", 1)
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["worker"]
    assert body["checks"]["worker"]["detail"] == "never seen"


def test_a_silent_worker_and_beat_are_named(client: Client, settings) -> None:
    _beat("worker:worker@test", settings.MNEMOSYNE_HEARTBEAT_STALE_SECONDS + 30)
    _beat("beat", settings.MNEMOSYNE_HEARTBEAT_STALE_SECONDS + 30)
    body = client.get("/healthz").json()
    assert body["failing"] == ["worker", "beat"]
    assert body["checks"]["worker"]["detail"].startswith("no heartbeat for")


def test_an_unreachable_broker_is_named(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh_services()
    # A Redis URL on a port where nothing listens: the production broker, down.
    # (Celery reads CELERY_BROKER_URL from the environment before its configuration.)
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setitem(celery_app.conf, "broker_url", "redis://127.0.0.1:1/0")
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["broker"]
    assert body["checks"]["broker"]["transport"] == "redis"


def test_an_unwritable_filesystem_broker_is_named(
    client: Client, settings, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    if not celery_app.conf.broker_url.startswith("filesystem"):
        pytest.skip("this run uses a broker server (CELERY_BROKER_URL), not the filesystem one")
    _fresh_services()
    options = dict(celery_app.conf.broker_transport_options)
    options["data_folder_in"] = str(tmp_path / "gone")
    # Celery 5.6 reads its Django-prefixed setting before its own overrides, 5.7 the other way
    # round (hermes-agent's pins hold Celery at 5.6 where both are installed): set both.
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = options
    monkeypatch.setitem(celery_app.conf, "broker_transport_options", options)
    body = client.get("/healthz").json()
    assert body["failing"] == ["broker"]
    assert "gone" in body["checks"]["broker"]["detail"]


def test_a_broken_embedder_is_named(
    client: Client, settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fresh_services()
    settings.MNEMOSYNE_EMBEDDER = "onnx:/nonexistent/model"
    monkeypatch.setattr(health, "_embedder_result", None)
    response = client.get("/healthz")
    monkeypatch.setattr(health, "_embedder_result", None)
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["embedder"]
    assert "/nonexistent/model" in body["checks"]["embedder"]["detail"]


def test_healthz_only_answers_get(client: Client) -> None:
    assert client.post("/healthz").status_code == 405
