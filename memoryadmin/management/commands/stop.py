from __future__ import annotations

import os
import signal
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memoryadmin.embedded_db import server_for_home
from memoryadmin.runstate import RunLock
from memoryadmin.supervisor import STOP_TIMEOUT_S


class Command(BaseCommand):
    help = "Stop the Mnemosyne started by `mnemosyne up` on this data directory, and its database."
    requires_system_checks = []

    def handle(self, *args: Any, **options: Any) -> None:
        home = settings.MNEMOSYNE_HOME
        lock = RunLock(home)
        if lock.is_held_elsewhere():
            pid = lock.read_info().get("pid")
            if not isinstance(pid, int):
                raise CommandError(f"Mnemosyne is starting on {home}; try again in a moment")
            self.stdout.write(f"Stopping Mnemosyne (pid {pid}) ...")
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_TIMEOUT_S * 3 + 15
            while lock.is_held_elsewhere():
                if time.monotonic() > deadline:
                    raise CommandError(f"Mnemosyne (pid {pid}) did not stop in time")
                time.sleep(0.2)
            self.stdout.write("Mnemosyne stopped.")
        else:
            self.stdout.write(f"Mnemosyne is not running on {home}.")
        # A database left running (by a killed `up`, or by hand) is stopped too.
        if settings.MNEMOSYNE_EMBEDDED_DB and server_for_home(home).stop():
            self.stdout.write("Embedded database stopped.")
