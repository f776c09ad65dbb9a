"""How long a Hermes process takes to get its first memories, and how much memory it holds: the
provider over HTTP (this release) against the provider that ran Mnemosyne inside Hermes (Django,
a database connection, the embedding model and the tokenizer; the release before this one).

    python -m bench.hermes_startup [--runs 3] [--before REV] [--json OUT]

Each run is a fresh Python process that imports Hermes' agent (`run_agent`), loads the
Mnemosyne provider, initializes it, builds the system prompt block and answers one prefetch,
then reports its peak RSS. Both providers talk to the same tenant (a few facts) in a fresh
database; the HTTP one to gunicorn as `mnemosyne up` starts it, whose processes are warm (the
server has loaded its model before the runs). The earlier provider's code is taken from git
(`--before`, by default the parent of the commit that removed `hermes_provider/runtime.py`).
"""

from __future__ import annotations

import argparse
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

from bench.harness import REPO, bench_database, progress, web_server, write_json

QUESTION = "Which editor does Alice use, and when does the team deploy?"
FACTS = [
    "Alice Chen prefers the Helix editor",
    "The team deploys on Tuesdays after the stand-up",
    "Staging runs PostgreSQL 17 with pgvector",
]

# The child: measured from interpreter start to the first prefetch's answer.
CHILD = r"""
import json, os, resource, sys, time
started = time.monotonic()
sys.path[:0] = [p for p in os.environ["BENCH_PATH"].split(os.pathsep) if p]
import run_agent  # noqa: F401 - Hermes itself, as a profile process imports it
from hermes_provider.provider import MnemosyneProvider
provider = MnemosyneProvider(config=json.loads(os.environ["BENCH_CONFIG"]))
provider.initialize("startup-bench", hermes_home=os.environ["BENCH_HOME"], platform="cli")
prompt = provider.system_prompt_block()
recalled = provider.prefetch(os.environ["BENCH_QUESTION"])
ready = time.monotonic() - started
loaded = sorted(m for m in ("django", "onnxruntime", "psycopg", "tokenizers") if m in sys.modules)
print(json.dumps({"ready_s": ready, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                  / 1024, "recalled": os.environ["BENCH_FACT"] in prompt + recalled,
                  "loaded": loaded}), flush=True)
provider.shutdown()
os._exit(0)
"""


def _before_tree(rev: str, into: Path) -> Path:
    """The earlier provider's package, from git."""
    if not rev:
        removed = subprocess.run(  # noqa: S603
            ["git", "log", "-1", "--format=%H", "--", "hermes_provider/runtime.py"],  # noqa: S607
            cwd=REPO, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        if not removed:
            raise SystemExit("--before: no commit removed hermes_provider/runtime.py; name one")
        rev = f"{removed}^"
    archive = subprocess.run(  # noqa: S603
        ["git", "archive", rev, "hermes_provider"],  # noqa: S607
        cwd=REPO, capture_output=True, check=True,
    ).stdout  # fmt: skip
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)  # noqa: S603, S607
    progress(f"the earlier provider: hermes_provider at {rev}")
    return into


def _run_child(path: list[Path], config: dict[str, Any], home: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(
        BENCH_PATH=os.pathsep.join(str(p) for p in path),
        BENCH_CONFIG=json.dumps(config),
        BENCH_HOME=str(home),
        BENCH_QUESTION=QUESTION,
        BENCH_FACT=FACTS[0],
    )
    for name in ("DATABASE_URL", "MNEMOSYNE_HOME", "MNEMOSYNE_MODEL_DIR", "SECRET_KEY"):
        env.pop(name, None)
    started = time.monotonic()
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", CHILD], env=env, cwd=home, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    wall = time.monotonic() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the child failed:\n{done.stderr[-3000:]}")
    figures = json.loads(lines[-1])
    return figures | {"wall_s": wall}


def run(runs: int, before_rev: str) -> dict[str, Any]:
    from django.conf import settings
    from django.db import connection

    from facts.inputs import fact_draft
    from facts.services import fact_add
    from tenants.actors import Actor
    from tenants.inputs import tenant_draft
    from tenants.services import apikey_create, tenant_create
    from tests.helpers import database_url

    actor = Actor.job("bench.hermes_startup")
    tenant = tenant_create(actor=actor, draft=tenant_draft({"slug": "startup", "name": "Startup"}))
    for content in FACTS:
        fact_add(tenant=tenant, actor=actor, draft=fact_draft({"content": content}))
    token = apikey_create(tenant=tenant, name="bench", actor=actor).token
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hermes-startup-") as work, web_server() as url:
        work_dir = Path(work)
        import httpx

        # Warm the server's processes (each loads the model on its first recall).
        for _ in range(6):
            httpx.post(f"{url}/api/v1/agent/prefetch", json={"query": QUESTION}, timeout=120,
                       headers={"Authorization": f"Bearer {token}"}).raise_for_status()  # fmt: skip
        before = _before_tree(before_rev, work_dir / "before")
        modes = {
            "http": ([REPO], {"url": url, "api_key": token, "prefetch_timeout": 30}),
            "in_process": (
                [before, REPO],
                {
                    "database_url": database_url(connection.settings_dict),
                    "api_key": token,
                    "model_dir": str(settings.MNEMOSYNE_MODEL_DIR),
                },
            ),
        }
        results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
        for number in range(runs):
            for mode, (path, config) in modes.items():  # interleaved, run by run
                home = work_dir / f"{mode}-{number}"
                home.mkdir()
                result = _run_child(path, config, home)
                results[mode].append(result)
                progress(f"run {number + 1} {mode}: ready in {result['ready_s']:.2f} s, "
                         f"peak RSS {result['rss_mb']:.0f} MB")  # fmt: skip
        for mode, rows in results.items():
            figures[mode] = {
                "ready_s": round(statistics.median(r["ready_s"] for r in rows), 2),
                "wall_s": round(statistics.median(r["wall_s"] for r in rows), 2),
                "rss_mb": round(statistics.median(r["rss_mb"] for r in rows)),
                "loaded": rows[-1]["loaded"],
                "recalled": all(r["recalled"] for r in rows),
            }
    return figures | {"runs": runs}


def report(figures: dict[str, Any]) -> None:
    print(f"Hermes process to its first prefetch, median of {figures['runs']} runs")
    print(f"  {'':<40}{'ready':>9}{'process':>10}{'peak RSS':>11}")
    labels = {
        "in_process": "in-process (Django, database, model)",
        "http": "over HTTP (this release)",
    }
    for mode in ("in_process", "http"):
        row = figures[mode]
        print(f"  {labels[mode]:<40}{row['ready_s']:>7.2f} s{row['wall_s']:>8.2f} s"
              f"{row['rss_mb']:>8} MB   loads: {', '.join(row['loaded']) or 'none of them'}"
              + ("" if row["recalled"] else "   (a run recalled nothing)"))  # fmt: skip
    old, new = figures["in_process"], figures["http"]
    print(f"  HTTP saves {old['ready_s'] - new['ready_s']:.2f} s to the first prefetch and "
          f"{old['rss_mb'] - new['rss_mb']} MB of peak RSS")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="processes per provider (3)")
    parser.add_argument("--before", default="", help="git revision of the earlier provider")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    with bench_database():
        figures = run(args.runs, args.before)
    report(figures)
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
