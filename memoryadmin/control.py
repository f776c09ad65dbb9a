"""`mnemosyne status` and `mnemosyne stop`, without Django.

Both read what `mnemosyne up` leaves in the data directory (memoryadmin.runstate) and the
embedded database's own files; neither loads the settings, so neither creates anything: a data
directory that does not exist is said to be missing and stays so.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryadmin.env import ConfigError, data_directory, env_str, parse_database_url
from memoryadmin.runstate import STOP_TIMEOUT_S, RunLock, fetch_health

Say = Callable[[str], None]

# `status` exit codes, as its help says.
HEALTHY, UNHEALTHY, NOT_RUNNING = 0, 1, 3


class ControlError(Exception):
    """`stop` cannot go on; the message says why."""


def _database_line(home: Path, info: dict[str, Any]) -> tuple[str, bool]:
    url = env_str("DATABASE_URL")
    if url:
        try:
            host = parse_database_url(url)["HOST"] or "localhost"
        except ConfigError as error:
            return f"PostgreSQL server (DATABASE_URL is invalid: {error})", True
        return f"PostgreSQL server {host}", True
    from memoryadmin.embedded_db import server_for_home

    db = server_for_home(home).status()
    state = f"running (pid {db.pid}), socket {db.socket_dir}" if db.running else "stopped"
    if restarted := info.get("database_restarts"):
        state += f" (restarted {restarted} times)"
    return f"embedded PostgreSQL, {state}", db.running


def _children_lines(info: dict[str, Any]) -> tuple[list[str], bool]:
    down = set(info.get("down", []))
    restarts = info.get("restarts", {})
    lines = []
    for name, pid in info.get("children", {}).items():
        line = f"  {name:<8} " + ("down, restarting" if name in down else f"pid {pid}")
        if name in restarts:
            line += (
                f" (restarted {restarts[name]['count']} times, "
                f"last exit code {restarts[name]['last_exit']})"
            )
        lines.append(line)
    return lines, not down


def status(home: Path, say: Say) -> int:
    """Say whether Mnemosyne runs on `home` and how healthy it is; the exit code."""
    say(f"Mnemosyne data directory: {home}")
    if not home.is_dir():
        say("  running: no (the data directory does not exist)")
        return NOT_RUNNING
    lock = RunLock(home)
    running = lock.is_held_elsewhere()
    info = lock.read_info() if running else {}
    healthy = True
    if running:
        say(f"  running: yes (pid {info.get('pid', '?')}) at {info.get('url', '?')}/")
        lines, healthy = _children_lines(info)
        for line in lines:
            say(line)
    else:
        say("  running: no")
    database, database_ok = _database_line(home, info)
    say(f"  database: {database}")
    healthy = healthy and database_ok
    if running and (url := info.get("url")):
        report = fetch_health(f"{url}/healthz")
        if report is None:
            say("  health: the web server does not answer")
            healthy = False
        elif report.get("failing"):
            say(f"  health: failing: {', '.join(report['failing'])}")
            healthy = False
        else:
            say("  health: ok (database, broker, worker, beat, embedder)")
    return NOT_RUNNING if not running else HEALTHY if healthy else UNHEALTHY


def stop(home: Path, say: Say) -> int:
    """Stop the `up` running on `home`, then an embedded database left running there."""
    if not home.is_dir():
        say(f"Mnemosyne is not running on {home} (the data directory does not exist).")
        return 0
    lock = RunLock(home)
    if lock.is_held_elsewhere():
        pid = lock.read_info().get("pid")
        if not isinstance(pid, int):
            raise ControlError(f"Mnemosyne is starting on {home}; try again in a moment")
        say(f"Stopping Mnemosyne (pid {pid}) ...")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S * 3 + 15
        while lock.is_held_elsewhere():
            if time.monotonic() > deadline:
                raise ControlError(f"Mnemosyne (pid {pid}) did not stop in time")
            time.sleep(0.2)
        say("Mnemosyne stopped.")
    else:
        say(f"Mnemosyne is not running on {home}.")
    if not env_str("DATABASE_URL"):
        # A database left running (by a killed `up`, or by hand) is stopped too.
        from memoryadmin.embedded_db import EmbeddedDatabaseError, server_for_home

        server = server_for_home(home)
        try:
            if server.status().running and server.stop():
                say("Embedded database stopped.")
        except EmbeddedDatabaseError as error:
            raise ControlError(f"the embedded database did not stop: {error}") from None
    return 0


def status_main(argv: list[str], parser_class: type[argparse.ArgumentParser]) -> int:
    parser = parser_class(
        prog="mnemosyne status",
        description="Say whether Mnemosyne runs on this data directory ($MNEMOSYNE_HOME) and "
        "how healthy it is. Exit 0 if it runs and every part is healthy, 1 if it runs but a "
        "part is down (being restarted, or failing /healthz), 3 if it does not run. Creates "
        "nothing, not even a missing data directory.",
    )
    parser.parse_args(argv)
    return status(data_directory(), print)


def stop_main(argv: list[str], parser_class: type[argparse.ArgumentParser]) -> int:
    parser = parser_class(
        prog="mnemosyne stop",
        description="Stop the Mnemosyne that `mnemosyne up` started on this data directory "
        "($MNEMOSYNE_HOME), then its embedded database (also one left running without `up`). "
        "Creates nothing, not even a missing data directory.",
    )
    parser.parse_args(argv)
    try:
        return stop(data_directory(), print)
    except ControlError as error:
        print(f"mnemosyne stop: {error}", file=sys.stderr)
        return 1
