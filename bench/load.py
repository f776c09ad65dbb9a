"""Many agents at once over the HTTP API, against a server started as `mnemosyne up` starts it.

    python -m bench.load [--agents 32] [--seconds 60] [--think 2] [--web-workers 2]
                         [--tenants 4] [--facts 500] [--only prefetch|write|recall]
                         [--recall-only] [--json out.json]

Each simulated agent (its own API key; the agents share --tenants tenants, each holding --facts
facts, embedded) runs a turn every --think seconds, as an agent waiting on its model would: a
prefetch (`POST /api/v1/context` with the user's message), then the turn's write
(`POST /api/v1/facts`, kind `turn`), and every fifth turn a tool call (`POST /api/v1/recall`).
`--think 0` runs them closed-loop, to find the capacity; `--only` makes every request one kind:
a prefetch, a write (a fact, not a turn: the near-duplicate and conflict checks run) or a recall
(k = 10; `--recall-only` says the same).

CPU: the user + system time of every process that served the run (the web processes, the
worker, and PostgreSQL's backends: the trees of gunicorn, Celery and the postmaster, from
/proc), from the end of the warm-up until the worker has settled after the last request, per
request of each kind when the run had one kind (`cpu_ms_per_recall`, `cpu_ms_per_prefetch`,
`cpu_ms_per_write`), else per request. A figure that survives a busy machine better than a
latency; beside it the embedder's rate in the same run, to scale it. With DATABASE_URL, the
postmaster's tree holds the server's other databases' work too: run it on a quiet server.

The server is gunicorn with `mnemosyne up`'s arguments (memoryadmin.supervisor.gunicorn_command)
and --web-workers processes, plus one Celery worker (embedding the turns), on a fresh database.
Times are wall-clock on the client (httpx, one keep-alive connection per agent), from request
to parsed answer. Errors are any answer other than 2xx, and any request that failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import REPO, bench_database, embedder_rate, progress, tree_cpu_s, write_json

OPERATIONS = ("prefetch", "write", "tool")


@dataclass
class Tally:
    times_ms: dict[str, list[float]] = field(default_factory=lambda: {o: [] for o in OPERATIONS})
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "n": 0}
    ordered = sorted(values)

    def at(share: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))], 1)

    return {
        "p50": round(statistics.median(ordered), 1),
        "p95": at(0.95),
        "p99": at(0.99),
        "n": len(ordered),
    }


def _seed(tenants: int, facts: int, agents: int) -> tuple[list[str], list[str]]:
    """Tenants with embedded facts; one key per agent (round robin over the tenants)."""
    from bench.latency import questions, sentence_pool
    from facts.embedding import facts_embed_batch
    from facts.services import fact_import
    from tenants.actors import Actor
    from tenants.inputs import tenant_draft
    from tenants.scope import tenant_scope
    from tenants.services import apikey_create, tenant_create

    rng = random.Random(17)  # noqa: S311 - benchmark data, not secrets
    actor = Actor.job("bench.load")
    made = []
    for number in range(tenants):
        tenant = tenant_create(
            actor=actor, draft=tenant_draft({"slug": f"team-{number}", "name": f"Team {number}"})
        )
        lines = [
            json.dumps({"content": text, "category": category})
            for text, _language, category in sentence_pool(rng, facts)
        ]
        for start in range(0, len(lines), 5000):
            fact_import(tenant=tenant, lines=lines[start : start + 5000], actor=actor)
        with tenant_scope(tenant):
            while facts_embed_batch(tenant=tenant):
                pass
        made.append(tenant)
        progress(f"tenant team-{number}: {facts} facts stored and embedded")
    keys = [
        apikey_create(tenant=made[n % tenants], name=f"agent-{n}", actor=actor).token
        for n in range(agents)
    ]
    return keys, questions(rng, 400)


def _serve(port: int, web_workers: int, logs: Path) -> list[subprocess.Popen[bytes]]:
    from django.db import connection

    from memoryadmin.supervisor import embed_threads_share, gunicorn_command
    from tests.helpers import database_url

    env = {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "MNEMOSYNE_API_RATE_KEY": "off",  # 32 agents behind one address are not an attack
        "PYTHONPATH": str(REPO),
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    web_argv = gunicorn_command(bind=f"127.0.0.1:{port}", workers=web_workers)
    # No line per request in the log.
    at = web_argv.index("--access-logfile")
    web_argv = web_argv[:at] + web_argv[at + 2 :]
    worker_argv = ["-m", "celery", "-A", "memoryadmin", "worker", "--concurrency", "1"]
    return [
        subprocess.Popen(  # noqa: S603 - our own interpreter and modules
            [sys.executable, *argv],
            env={**env, **embed_threads_share(processes)},  # as `mnemosyne up` shares the cores
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=(logs / f"{name}.log").open("w"),
        )  # fmt: skip
        for name, argv, processes in (("web", web_argv, web_workers), ("worker", worker_argv, 1))
    ]


async def _agent(
    number: int, url: str, key: str, questions: list[str], args: argparse.Namespace,
    deadline: float, tally: Tally,
) -> None:  # fmt: skip
    import httpx

    rng = random.Random(number)  # noqa: S311 - benchmark data, not secrets
    session = f"agent-{number}-session"
    headers = {"Authorization": f"Bearer {key}"}
    # Agents do not start in step: each waits a random part of its first think time.
    await asyncio.sleep(rng.random() * args.think)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:

        async def call(operation: str, path: str, body: dict[str, Any]) -> None:
            started = time.perf_counter()
            try:
                answer = await client.post(path, json=body)
            except httpx.HTTPError as error:
                tally.error(f"{operation}: {type(error).__name__}")
                return
            if answer.status_code >= 300:
                tally.error(f"{operation}: {answer.status_code}")
                return
            answer.json()
            tally.times_ms[operation].append((time.perf_counter() - started) * 1000)

        turn = 0
        while time.monotonic() < deadline:
            turn += 1
            began = time.monotonic()
            message = rng.choice(questions)
            if args.only == "recall":
                await call("tool", "/api/v1/recall", {"query": message, "k": 10})
            elif args.only == "prefetch":
                await call("prefetch", "/api/v1/context", {"query": message})
            elif args.only == "write":
                fact = {"content": f"Agent {number} noted on turn {turn}: {message}"}
                await call("write", "/api/v1/facts", fact)
            else:
                await call("prefetch", "/api/v1/context", {"query": message})
                write = {"kind": "turn", "content": f"{message} (turn {turn} of agent {number})",
                         "session_id": session, "speaker": "user"}  # fmt: skip
                await call("write", "/api/v1/facts", write)
                if turn % 5 == 0:
                    await call("tool", "/api/v1/recall", {"query": message, "k": 10})
            if args.think:
                await asyncio.sleep(max(0.0, args.think - (time.monotonic() - began)))


async def _drive(
    url: str, keys: list[str], questions: list[str], args: argparse.Namespace
) -> Tally:
    tally = Tally()
    deadline = time.monotonic() + args.seconds
    await asyncio.gather(
        *(_agent(n, url, key, questions, args, deadline, tally) for n, key in enumerate(keys))
    )
    return tally


def run(args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    from tests.helpers import free_port, wait_for

    keys, questions = _seed(args.tenants, args.facts, args.agents)
    port = free_port()
    logs = Path(tempfile.mkdtemp(prefix="mnemosyne-load-"))
    progress(f"starting gunicorn ({args.web_workers} workers) and a worker; logs in {logs}")
    processes = _serve(port, args.web_workers, logs)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(httpx, url), timeout=120, what="gunicorn to answer", interval=0.5)
        # Every web process loads the embedder on its first query: warm them all up first.
        warm = Tally()
        asyncio.run(_warm(url, keys, questions, args.web_workers * 4, warm))
        progress(
            f"{args.agents} agents for {args.seconds} s, think {args.think} s"
            + (f" (only {args.only})" if args.only else "")
        )
        roots = {"web": processes[0].pid, "worker": processes[1].pid, "database": _postmaster()}
        before = {name: tree_cpu_s(pid) for name, pid in roots.items()}
        started = time.monotonic()
        tally = asyncio.run(_drive(url, keys, questions, args))
        elapsed = time.monotonic() - started
        progress("waiting for the worker's follow-up work to settle")
        _settle(roots["worker"])
        cpu_s = {name: tree_cpu_s(pid) - before[name] for name, pid in roots.items()}
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
    done = {o: len(t) for o, t in tally.times_ms.items()}
    recalls = done["tool"] if args.only == "recall" else done["prefetch"]
    cpu_ms = round(sum(cpu_s.values()) * 1000, 1)
    per = {"recall": "tool", "prefetch": "prefetch", "write": "write"}
    cpu_figures: dict[str, Any] = {
        "cpu_ms": cpu_ms,
        "cpu_ms_by_process": {name: round(v * 1000, 1) for name, v in cpu_s.items()},
        "cpu_ms_per_request": round(cpu_ms / (sum(done.values()) or 1), 2),
    }
    if args.only:
        cpu_figures[f"cpu_ms_per_{args.only}"] = round(cpu_ms / (done[per[args.only]] or 1), 2)
    return {
        **cpu_figures,
        "only": args.only,
        "agents": args.agents,
        "seconds": round(elapsed, 1),
        "think_s": args.think,
        "web_workers": args.web_workers,
        "recall_only": args.only == "recall",
        "tenants": args.tenants,
        "facts_per_tenant": args.facts,
        "errors": sum(tally.errors.values()),
        "error_kinds": tally.errors,
        "prefetch_ms": _percentiles(tally.times_ms["prefetch"]),
        "write_ms": _percentiles(tally.times_ms["write"]),
        "tool_ms": _percentiles(tally.times_ms["tool"]),
        "requests_per_s": round(sum(done.values()) / elapsed, 1),
        # Recalls (prefetches, or recall calls with --recall-only) answered per second.
        "capacity_rps": round(recalls / elapsed, 1),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 1),
    }


async def _warm(url: str, keys: list[str], questions: list[str], count: int, tally: Tally) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=url, timeout=120) as client:

        async def one(key: str, question: str) -> None:
            answer = await client.post(
                "/api/v1/recall",
                json={"query": question, "k": 10},
                headers={"Authorization": f"Bearer {key}"},
            )
            if answer.status_code >= 300:
                tally.error(f"warm-up: {answer.status_code}")

        await asyncio.gather(*(one(keys[n % len(keys)], questions[n]) for n in range(count)))


def _postmaster() -> int:
    """The PostgreSQL server's main process: the parent of this connection's backend."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    stat = Path(f"/proc/{backend}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def _settle(worker: int, timeout: float = 180.0) -> None:
    """Until the worker's tree has used no CPU for two seconds (it has done what the run's
    writes left it), or `timeout`."""
    deadline, last, quiet = time.monotonic() + timeout, tree_cpu_s(worker), 0
    while time.monotonic() < deadline and quiet < 2:
        time.sleep(1)
        now = tree_cpu_s(worker)
        quiet = quiet + 1 if now - last < 0.01 else 0
        last = now


def _answers(httpx: Any, url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=5).status_code in (200, 503)
    except httpx.HTTPError:
        return False


def report(figures: dict[str, Any]) -> None:
    print(
        f"{figures['agents']} agents, think {figures['think_s']} s, {figures['web_workers']} web "
        f"workers, {figures['seconds']} s: {figures['requests_per_s']} requests/s, "
        f"capacity {figures['capacity_rps']} recalls/s, errors {figures['errors']} "
        f"(load average {figures['load_average_1m']} on {figures['cpus']} CPUs)"
    )
    by = ", ".join(f"{k} {v:.0f}" for k, v in figures["cpu_ms_by_process"].items())
    each = next((k for k in figures if k.startswith("cpu_ms_per_") and k != "cpu_ms_per_request"),
                "cpu_ms_per_request")  # fmt: skip
    what = each.removeprefix("cpu_ms_").replace("_", " ")
    print(f"  CPU {figures['cpu_ms']:.0f} ms ({by}): {figures[each]} ms {what}; on "
          f"{figures['cpus']} cores that is at most "
          f"{figures['cpus'] * 1000 / (figures[each] or 1):.0f} per second")  # fmt: skip
    rate = figures["embedder"]
    print(f"  the embedder here now: {rate['passages_per_s']} passages/s "
          f"({rate['passages_per_cpu_s']} per CPU second)")  # fmt: skip
    for operation in OPERATIONS:
        row = figures[f"{operation}_ms"]
        if row["n"]:
            print(f"  {operation:<9} p50 {row['p50']:>7.1f} ms  p95 {row['p95']:>7.1f} ms  "
                  f"p99 {row['p99']:>7.1f} ms  ({row['n']})")  # fmt: skip
    if figures["error_kinds"]:
        print(f"  errors: {figures['error_kinds']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--think", type=float, default=2.0, help="seconds per turn; 0: closed")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--tenants", type=int, default=4)
    parser.add_argument("--facts", type=int, default=500, help="facts per tenant")
    parser.add_argument(
        "--only", choices=("prefetch", "write", "recall"), help="every request of one kind"
    )
    parser.add_argument("--recall-only", action="store_true", help="the same as --only recall")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    for name in ("agents", "web_workers", "tenants", "facts"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.seconds <= 0 or args.think < 0:
        parser.error("--seconds must be positive and --think not negative")
    if args.recall_only:
        args.only = "recall"
    with bench_database():
        import logging

        logging.getLogger("httpx").setLevel(logging.WARNING)
        figures = run(args)
        figures["embedder"] = embedder_rate()
    report(figures)
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
