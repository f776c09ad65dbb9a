"""`mnemosyne hermes install|uninstall`: connect a Hermes Agent profile to Mnemosyne."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from hermes_provider.installer import InstallError, default_hermes_home, install, uninstall


class Command(BaseCommand):
    help = "Connect a Hermes Agent profile to Mnemosyne (install), or disconnect it (uninstall)."
    requires_system_checks = []

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="install|uninstall")
        for name, text in (
            ("install", "write the plugin into the profile and point its config.yaml at Mnemosyne"),
            ("uninstall", "remove the plugin and Mnemosyne's settings from the profile"),
        ):
            sub = actions.add_parser(name, help=text, description=text)
            sub.add_argument(
                "--hermes-home",
                type=Path,
                default=None,
                help="the profile's HERMES_HOME (default: $HERMES_HOME, else ~/.hermes)",
            )
            if name == "install":
                sub.add_argument("--api-key", required=True, help="an API key of the tenant")
                sub.add_argument(
                    "--scope", help="scope the profile writes to and reads, e.g. project:beta"
                )
                sub.add_argument(
                    "--database-url",
                    help="how the profile reaches the database (default: the one this "
                    "Mnemosyne uses)",
                )

    def handle(self, *args: Any, **options: Any) -> None:
        home = options["hermes_home"] or default_hermes_home()
        say = self.stdout.write
        try:
            if options["action"] == "install":
                install(
                    hermes_home=home,
                    api_key=options["api_key"],
                    scope=options.get("scope"),
                    database_url=options.get("database_url"),
                    say=say,
                )
            else:
                uninstall(hermes_home=home, say=say)
        except InstallError as problem:
            raise CommandError(str(problem)) from None
