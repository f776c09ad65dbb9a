"""Throughput of the single-machine broker (the filesystem transport of memoryadmin/broker.py).

    python -m bench.broker [--messages 2000] [--json out.json]

Puts --messages task-sized messages on a queue in a temporary folder, then takes and
acknowledges them one by one, as a worker's consumer does (kombu's SimpleQueue, no Celery): the
rates are what the transport itself can hand out, before any task runs. A worker that is idle
looks at the folder every `polling_interval` (0.2 s in our settings), so a lone message waits up
to that long.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import progress, write_json


def run(messages: int) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    from kombu import Connection

    import memoryadmin.celery  # noqa: F401 - registers our filesystem transport

    with tempfile.TemporaryDirectory(prefix="mnemosyne-broker-") as folder:
        root = Path(folder)
        options = {"store_processed": False, "polling_interval": 0.2}
        for name in ("queue", "control", "processed"):
            (root / name).mkdir()
            options[f"{name}_folder" if name != "queue" else "data_folder_in"] = str(root / name)
        options["data_folder_out"] = options["data_folder_in"]
        body = {"task": "facts.tasks.facts_embed_pending", "args": [1], "padding": "x" * 600}
        with Connection("filesystem://", transport_options=options) as conn:
            queue = conn.SimpleQueue("bench")
            started = time.perf_counter()
            for _ in range(messages):
                queue.put(body)
            put_s = time.perf_counter() - started
            progress(f"{messages} messages put in {put_s:.2f} s")
            started = time.perf_counter()
            for _ in range(messages):
                queue.get(timeout=5).ack()
            get_s = time.perf_counter() - started
            queue.close()
    return {
        "messages": messages,
        "put_per_s": round(messages / put_s, 1),
        "take_per_s": round(messages / get_s, 1),
        "load_average_1m": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.messages < 1:
        parser.error("--messages must be at least 1")
    figures = run(args.messages)
    print(
        f"filesystem broker: {figures['put_per_s']} messages/s put, {figures['take_per_s']} "
        f"taken and acknowledged per second ({figures['messages']} messages; load average "
        f"{figures['load_average_1m']} on {figures['cpus']} CPUs)"
    )
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
