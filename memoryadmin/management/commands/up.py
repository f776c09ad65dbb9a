from __future__ import annotations

import argparse
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryadmin.env import env_int, env_str


def _at_least_one(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is less than 1")
    return number


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
            "--web-workers",
            type=_at_least_one,
            default=env_int("MNEMOSYNE_WEB_WORKERS", 2, minimum=1),
            help="web server processes (default: $MNEMOSYNE_WEB_WORKERS or 2)",
        )
        parser.add_argument(
            "--concurrency",
            type=_at_least_one,
            default=env_int("MNEMOSYNE_WORKER_CONCURRENCY", 2, minimum=1),
            help="Celery worker processes (default: $MNEMOSYNE_WORKER_CONCURRENCY or 2)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from memoryadmin.embedded_db import EmbeddedDatabaseError
        from memoryadmin.supervisor import Supervisor, SupervisorError, UpOptions

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
        except SupervisorError as error:
            raise CommandError(str(error)) from None
        except EmbeddedDatabaseError as error:
            self.stderr.write(f"mnemosyne up: the embedded database failed: {error}")
            code = 1
        if code:
            sys.exit(code)

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()
