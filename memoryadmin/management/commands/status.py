from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from memoryadmin.embedded_db import server_for_home
from memoryadmin.runstate import RunLock
from memoryadmin.supervisor import _fetch_health


class Command(BaseCommand):
    help = (
        "Say whether Mnemosyne runs on this data directory and how healthy it is. "
        "Exit 0 if it runs and every part is healthy, 1 if it runs but a part is down "
        "(being restarted, or failing /healthz), 3 if it does not run."
    )
    requires_system_checks = []

    def handle(self, *args: Any, **options: Any) -> None:
        home = settings.MNEMOSYNE_HOME
        lock = RunLock(home)
        running = lock.is_held_elsewhere()
        healthy = True
        self.stdout.write(f"Mnemosyne data directory: {home}")
        info = lock.read_info() if running else {}
        if running:
            self.stdout.write(
                f"  running: yes (pid {info.get('pid', '?')}) at {info.get('url', '?')}/"
            )
            down = set(info.get("down", []))
            restarts = info.get("restarts", {})
            for name, pid in info.get("children", {}).items():
                line = f"  {name:<8} " + ("down, restarting" if name in down else f"pid {pid}")
                if name in restarts:
                    line += (
                        f" (restarted {restarts[name]['count']} times, "
                        f"last exit code {restarts[name]['last_exit']})"
                    )
                self.stdout.write(line)
            healthy = not down
        else:
            self.stdout.write("  running: no")
        if settings.MNEMOSYNE_EMBEDDED_DB:
            db = server_for_home(home).status()
            state = f"running (pid {db.pid}), socket {db.socket_dir}" if db.running else "stopped"
            if restarted := info.get("database_restarts"):
                state += f" (restarted {restarted} times)"
            self.stdout.write(f"  database: embedded PostgreSQL, {state}")
            healthy = healthy and db.running
        else:
            self.stdout.write(
                f"  database: PostgreSQL server {settings.DATABASES['default']['HOST']}"
            )
        if running and (url := info.get("url")):
            report = _fetch_health(f"{url}/healthz")
            if report is None:
                self.stdout.write("  health: the web server does not answer")
                healthy = False
            elif report["failing"]:
                self.stdout.write(f"  health: failing: {', '.join(report['failing'])}")
                healthy = False
            else:
                self.stdout.write("  health: ok (database, broker, worker, beat, embedder)")
        sys.exit(3 if not running else 0 if healthy else 1)
