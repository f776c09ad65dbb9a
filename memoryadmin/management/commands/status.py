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
        "Exit 0 if it runs, 3 if not."
    )
    requires_system_checks = []

    def handle(self, *args: Any, **options: Any) -> None:
        home = settings.MNEMOSYNE_HOME
        lock = RunLock(home)
        running = lock.is_held_elsewhere()
        self.stdout.write(f"Mnemosyne data directory: {home}")
        if running:
            info = lock.read_info()
            self.stdout.write(
                f"  running: yes (pid {info.get('pid', '?')}) at {info.get('url', '?')}/"
            )
            for name, pid in info.get("children", {}).items():
                self.stdout.write(f"  {name:<8} pid {pid}")
        else:
            self.stdout.write("  running: no")
        if settings.MNEMOSYNE_EMBEDDED_DB:
            db = server_for_home(home).status()
            state = f"running (pid {db.pid}), socket {db.socket_dir}" if db.running else "stopped"
            self.stdout.write(f"  database: embedded PostgreSQL, {state}")
        else:
            self.stdout.write(
                f"  database: PostgreSQL server {settings.DATABASES['default']['HOST']}"
            )
        if running and (url := lock.read_info().get("url")):
            report = _fetch_health(f"{url}/healthz")
            if report is None:
                self.stdout.write("  health: the web server does not answer")
            elif report["failing"]:
                self.stdout.write(f"  health: failing: {', '.join(report['failing'])}")
            else:
                self.stdout.write("  health: ok (database, broker, worker, beat, embedder)")
        sys.exit(0 if running else 3)
