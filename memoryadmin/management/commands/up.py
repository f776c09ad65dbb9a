from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryadmin.embedded_db import EmbeddedDatabaseError
from memoryadmin.env import env_int, env_str
from memoryadmin.supervisor import Supervisor, SupervisorError, UpOptions


class Command(BaseCommand):
    help = (
        "Start Mnemosyne: the embedded database (when no DATABASE_URL), migrations, the first "
        "admin user, then the web server, a Celery worker and beat until Ctrl-C or SIGTERM."
    )
    requires_system_checks = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--bind",
            default=env_str("MNEMOSYNE_BIND", "127.0.0.1:8000"),
            help="HOST:PORT for the web server (default: $MNEMOSYNE_BIND or 127.0.0.1:8000)",
        )
        parser.add_argument(
            "--web-workers", type=int, default=env_int("MNEMOSYNE_WEB_WORKERS", 2, minimum=1)
        )
        parser.add_argument(
            "--concurrency",
            type=int,
            default=env_int("MNEMOSYNE_WORKER_CONCURRENCY", 2, minimum=1),
            help="Celery worker processes",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        for name in ("web_workers", "concurrency"):
            if options[name] < 1:
                raise CommandError(f"--{name.replace('_', '-')} must be at least 1")
        supervisor = Supervisor(
            UpOptions(
                bind=options["bind"],
                web_workers=options["web_workers"],
                concurrency=options["concurrency"],
            ),
            say=self._say,
        )
        try:
            code = supervisor.run()
        except KeyboardInterrupt:
            code = 0
        except (SupervisorError, EmbeddedDatabaseError) as error:
            raise CommandError(str(error)) from None
        if code:
            sys.exit(code)

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()
