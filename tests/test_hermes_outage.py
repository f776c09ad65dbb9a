"""The provider against a server that is stopped, slow (answers after the timeout) or failing
(5xx): every turn goes on at once, and when the server answers again every buffered write is
stored once, in order.

Between the provider and the live server sits a small proxy the test controls."""

from __future__ import annotations

import http.client
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from facts.selectors.facts import fact_list
from tenants.services import apikey_create
from tests.helpers import free_port, wait_for
from tests.hermes_support import manager_for, tool, write_profile

pytestmark = pytest.mark.django_db(transaction=True)

PREFETCH_TIMEOUT = 0.5


class Proxy:
    """Forwards to the server, or fails the way `mode` says: "pass", "slow" (forwards after
    `delay` seconds, so the server does the work while the client has given up), "5xx" (503
    without forwarding) or "down" (not listening at all)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.mode = "pass"
        self.delay = 3.0
        self.forwarded = 0
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.mode == "5xx":
                    self._answer(503, b'{"message": "upstream is restarting"}')
                    return
                if proxy.mode == "slow":
                    time.sleep(proxy.delay)
                upstream = http.client.HTTPConnection(
                    proxy.upstream.hostname, proxy.upstream.port, timeout=60
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                upstream.request(self.command, self.path, body=body or None, headers=headers)
                response = upstream.getresponse()
                proxy.forwarded += 1
                self._answer(response.status, response.read())
                upstream.close()

            def _answer(self, status: int, body: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up

            do_GET = do_POST = _any

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@pytest.fixture
def proxy(live_server):
    proxy = Proxy(live_server.url)
    proxy.start()
    yield proxy
    proxy.stop()


def _user_turns(tenant) -> list[str]:
    turns = sorted(fact_list(tenant=tenant, kind="turn", limit=100).facts, key=lambda f: f.position)
    return [t.content for t in turns if t.speaker == "user"]


def test_a_stopped_slow_or_failing_server_never_holds_a_turn_and_loses_or_doubles_nothing(
    tmp_path: Path, proxy: Proxy, tenant, system_actor, monkeypatch, caplog
) -> None:
    token = apikey_create(tenant=tenant, name="hermes", actor=system_actor).token
    # The server loads its models on its first recall and write; the short timeouts are for a
    # warm server.
    for path, body in [
        ("prefetch", {"query": "warm up"}),
        ("writes", {"writes": [{"key": "warm-up-1", "op": "fact",
                                "payload": {"content": "Warm-up note for Alice Chen"}}]}),
    ]:  # fmt: skip
        warm = httpx.post(f"{proxy.url}/api/v1/agent/{path}", json=body,
                          headers={"Authorization": f"Bearer {token}"}, timeout=120)  # fmt: skip
        assert warm.status_code == 200
    home = write_profile(tmp_path / "hermes", token, proxy.url,
                         prefetch_timeout=PREFETCH_TIMEOUT, tool_timeout=2)  # fmt: skip
    manager, provider = manager_for(home, monkeypatch)
    try:
        manager.sync_all("Turn 1 with the server up", "ok", session_id="session-1")
        # Hermes hands sync_turn to its own background thread: wait for it to reach the
        # provider's buffer before waiting for the buffer to drain.
        assert manager.flush_pending(30)
        # Generous on a busy machine: a write that misses its timeout is retried with backoff.
        assert provider.wait_idle(90)
        wait_for(lambda: manager.prefetch_all("Turn 1") != "", timeout=60,
                 what="recall with the server up")  # fmt: skip

        said = ["Turn 1 with the server up"]
        caplog.set_level(logging.WARNING, logger="hermes_provider")
        for mode in ("down", "slow", "5xx"):
            if mode == "down":
                proxy.stop()
            proxy.mode = mode
            for _ in range(2):
                text = f"Turn {len(said) + 1} while the server is {mode}"
                started = time.monotonic()
                assert manager.prefetch_all(text) == ""  # no memories this turn ...
                manager.sync_all(text, "ok", session_id="session-1")  # ... and no waiting
                assert time.monotonic() - started < PREFETCH_TIMEOUT + 2.0, mode  # < the delay
                said.append(text)
            queued = tool(manager, "fact_store", action="add", content=f"Fact while {mode}")
            assert queued["status"] == "queued", queued
            if mode == "down":
                proxy.start()
        gave_up = [r for r in caplog.records if "turns go on without recall" in r.getMessage()]
        assert len(gave_up) == 1, [r.getMessage() for r in caplog.records]  # said once

        proxy.mode = "pass"
        assert manager.flush_pending(30)
        assert provider.wait_idle(60)
        # Recall returns (on a busy machine a prefetch may still miss its half second).
        wait_for(lambda: manager.prefetch_all("Turn 1 with the server up"), timeout=60,
                 what="recall to come back")  # fmt: skip
        assert _user_turns(tenant) == said  # every turn, once, in order
        contents = [f.content for f in fact_list(tenant=tenant).facts]
        for mode in ("down", "slow", "5xx"):
            assert contents.count(f"Fact while {mode}") == 1, contents
        assert any("recall is back" in r.getMessage() for r in caplog.records)
    finally:
        manager.shutdown_all()
