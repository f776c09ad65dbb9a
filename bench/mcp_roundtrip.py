"""A search round trip over each way an agent reaches Mnemosyne, p50/p95.

    python -m bench.mcp_roundtrip --data locomo_dev.json [--queries 200] [--json out.json]

LoCoMo's conversation turns are stored (and embedded) in one tenant; gunicorn serves it as
`mnemosyne up` does (2 sync workers); then each question is asked, in turn, over:

- the REST API (`POST /api/v1/recall`, keep-alive): the baseline;
- MCP over Streamable HTTP (`/mcp`, the MCP SDK's client, one session): `memory_search`;
- MCP over stdio (`mnemosyne mcp --url`, started as a client starts it, the SDK's stdio
  client): `memory_search`, relayed by that process to /mcp.

Every call asks for the same k = 10 results. The three are interleaved, question by question,
so a busy machine slows each alike. Times are wall-clock on the client, from request to parsed
answer. MCP over HTTP minus REST is what the MCP layer costs (the SDK's protocol handling and
the WSGI bridge); stdio minus HTTP is the relay's hop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import REPO, bench_database, progress, write_json

K = 10
TRANSPORTS = ("rest", "mcp_http", "mcp_stdio")


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 2), "p95": round(p95, 2), "n": len(values)}


def _load(data: Path, conversations: int | None) -> tuple[Any, str, list[str], int]:
    """One tenant holding the conversations' turns, embedded; a key; the questions."""
    from bench.locomo import turns_of
    from facts.embedding import facts_embed_batch
    from facts.inputs import fact_draft
    from facts.services import fact_add
    from tenants.actors import Actor
    from tenants.inputs import tenant_draft
    from tenants.services import apikey_create, tenant_create

    actor = Actor.job("bench.mcp_roundtrip")
    samples = json.loads(data.read_text())[:conversations]
    tenant = tenant_create(actor=actor, draft=tenant_draft({"slug": "locomo", "name": "LoCoMo"}))
    questions: list[str] = []
    stored = 0
    for index, sample in enumerate(samples):
        name = sample.get("sample_id", f"conv-{index}")
        for turn in turns_of(sample["conversation"]):
            fact_add(
                tenant=tenant,
                actor=actor,
                draft=fact_draft(
                    {
                        "content": turn["text"],
                        "kind": "turn",
                        "scope": f"conversation:{name}",
                        "session_id": f"{name}/{turn['session']}",
                        "position": turn["position"],
                        "speaker": turn["speaker"],
                        "created_at": turn["created_at"],
                    }
                ),
            )
            stored += 1
        questions += [qa["question"] for qa in sample["qa"] if qa.get("evidence")]
        while facts_embed_batch(tenant=tenant):
            pass
        progress(f"{name}: stored and embedded ({stored} turns so far)")
    key = apikey_create(tenant=tenant, name="bench", actor=actor, scopes=["read"])
    return tenant, key.token, questions, stored


def _database_url() -> str:
    from django.db import connection

    from tests.helpers import database_url

    return database_url(connection.settings_dict)


def _serve(port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "MNEMOSYNE_API_RATE_KEY": "off",  # the bench sends more than an agent would
        "PYTHONPATH": str(REPO),
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    gunicorn = Path(sys.executable).parent / "gunicorn"
    return subprocess.Popen(  # noqa: S603 - our own gunicorn, fixed arguments
        [str(gunicorn), "memoryadmin.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "2", "--timeout", "120"],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log.open("w"),
    )  # fmt: skip


async def _measure(url: str, token: str, questions: list[str], warmup: int) -> dict[str, Any]:
    import httpx
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    relay = StdioServerParameters(
        command=str(Path(sys.executable).parent / "mnemosyne"),
        args=["mcp", "--url", url],
        env={**os.environ, "MNEMOSYNE_API_KEY": token},
    )
    times: dict[str, list[float]] = {name: [] for name in TRANSPORTS}
    counts: dict[str, list[int]] = {name: [] for name in TRANSPORTS}
    async with (
        httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as rest,
        httpx.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as direct,
        stdio_client(relay) as (relay_read, relay_write),
        ClientSession(relay_read, relay_write) as relayed,
    ):
        await direct.initialize()
        await relayed.initialize()

        async def ask(transport: str, question: str) -> int:
            if transport == "rest":
                answer = await rest.post("/api/v1/recall", json={"query": question, "k": K})
                answer.raise_for_status()
                return len(answer.json()["results"])
            session = direct if transport == "mcp_http" else relayed
            result = await session.call_tool("memory_search", {"query": question, "k": K})
            if result.isError:
                raise RuntimeError(f"{transport}: {result.content[0].text}")
            return result.structuredContent["count"]

        progress(f"warming up ({warmup} questions over each transport: both web workers load "
                 "the embedder)")  # fmt: skip
        for question in questions[:warmup]:
            for transport in TRANSPORTS:
                await ask(transport, question)
        measured = questions[warmup:]
        for number, question in enumerate(measured, 1):
            # Rotate the order, so no transport always goes first (or last) on a question.
            order = TRANSPORTS[number % 3 :] + TRANSPORTS[: number % 3]
            for transport in order:
                started = time.perf_counter()
                counts[transport].append(await ask(transport, question))
                times[transport].append((time.perf_counter() - started) * 1000)
            if number % 50 == 0:
                progress(f"{number} of {len(measured)} questions asked over each transport")
    if counts["rest"] != counts["mcp_http"] or counts["rest"] != counts["mcp_stdio"]:
        raise RuntimeError("the transports did not return the same number of results")
    return {name: _percentiles(values) for name, values in times.items()}


def run(data: Path, queries: int, conversations: int | None, warmup: int) -> dict[str, Any]:
    from tests.helpers import free_port, wait_for

    _, token, questions, stored = _load(data, conversations)
    questions = questions[: queries + warmup]
    port = free_port()
    log = Path(tempfile.gettempdir()) / f"mnemosyne-bench-web-{port}.log"
    progress(f"starting gunicorn on 127.0.0.1:{port} (log: {log})")
    web = _serve(port, log)
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        def up() -> bool:
            try:
                return httpx.get(f"{url}/healthz", timeout=5).status_code in (200, 503)
            except httpx.HTTPError:
                return False

        wait_for(up, timeout=120, what="gunicorn")
        progress(f"gunicorn serves {url} (2 workers); {len(questions) - warmup} questions")
        figures = asyncio.run(_measure(url, token, questions, warmup))
    finally:
        web.terminate()
        web.wait(timeout=30)
    return {"round_trip_ms": figures, "turns": stored, "k": K, "questions": len(questions) - warmup}


def report(figures: dict[str, Any]) -> None:
    rows = figures["round_trip_ms"]
    labels = {
        "rest": "REST API, POST /api/v1/recall",
        "mcp_http": "MCP over Streamable HTTP (/mcp)",
        "mcp_stdio": "MCP over stdio (mnemosyne mcp)",
    }
    print(f"search round trip, k = {figures['k']}, {figures['questions']} LoCoMo questions, "
          f"{figures['turns']} turns in the tenant")  # fmt: skip
    print(f"  {'':<34}{'p50':>10}{'p95':>10}")
    for name in TRANSPORTS:
        print(f"  {labels[name]:<34}{rows[name]['p50']:>8.1f} ms{rows[name]['p95']:>7.1f} ms")
    layer = rows["mcp_http"]["p50"] - rows["rest"]["p50"]
    hop = rows["mcp_stdio"]["p50"] - rows["mcp_http"]["p50"]
    print(f"  MCP layer (HTTP - REST, p50): {layer:.1f} ms; relay (stdio - HTTP): {hop:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo JSON (locomo_dev.json)")
    parser.add_argument("--queries", type=int, default=200, help="questions measured (200)")
    parser.add_argument("--warmup", type=int, default=20, help="questions asked first, unmeasured")
    parser.add_argument("--conversations", type=int, help="only the first N conversations")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"--data {args.data}: no such file")
    with bench_database():
        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
        figures = run(args.data, args.queries, args.conversations, args.warmup)
    report(figures)
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
