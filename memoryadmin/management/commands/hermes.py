"""`mnemosyne hermes install|uninstall|import`: connect a Hermes Agent profile to Mnemosyne, and
bring along what the profile already remembers."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from hermes_provider.installer import InstallError, default_hermes_home, install, uninstall


class Command(BaseCommand):
    help = "Connect a Hermes Agent profile to Mnemosyne (install), or disconnect it (uninstall)."
    requires_system_checks = []

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(
            dest="action", required=True, metavar="install|uninstall|import"
        )
        for name, text in (
            ("install", "write the plugin into the profile and point its config.yaml at Mnemosyne"),
            ("uninstall", "remove the plugin and Mnemosyne's settings from the profile"),
            ("import", "import the profile's memories (memory_store.db, MEMORY.md, USER.md)"),
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
                sub.add_argument(
                    "--import-memories",
                    choices=["ask", "yes", "no"],
                    default="ask",
                    help="bring along the profile's existing memories (default: ask when run "
                    "in a terminal, else no)",
                )
            if name == "import":
                sub.add_argument("--api-key", required=True, help="an API key of the tenant")
                sub.add_argument("--scope", help="the scope the memories go to")

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
                offer_memory_import(
                    home, options["api_key"], options.get("scope"), options["import_memories"], say
                )
            elif options["action"] == "import":
                offer_memory_import(home, options["api_key"], options.get("scope"), "yes", say)
            else:
                uninstall(hermes_home=home, say=say)
        except InstallError as problem:
            raise CommandError(str(problem)) from None


def offer_memory_import(
    home: Path, api_key: str, scope: str | None, choice: str, say: Callable[[str], None]
) -> int:
    """Offer to import the profile's memories into the key's tenant; say how many came."""
    from facts.importers import hermes_profile_import, hermes_profile_memories
    from tenants.actors import Actor
    from tenants.errors import InvalidInput
    from tenants.scope import scope_limit_reset, scope_limit_set
    from tenants.services import apikey_verify

    found = hermes_profile_memories(home.expanduser())
    if not found:
        if choice == "yes":
            say("No memories to import in this profile.")
        return 0
    listed = ", ".join(f"{n} in {source}" for source, n in found.items())
    if choice == "ask":
        if not sys.stdin.isatty():
            say(f"This profile remembers {listed}; import them with: mnemosyne hermes import")
            return 0
        answer = input(f"This profile remembers {listed}. Import them into Mnemosyne? [Y/n] ")
        choice = "no" if answer.strip().lower() in ("n", "no") else "yes"
    if choice == "no":
        return 0
    key = apikey_verify(token=api_key)
    if key is None:
        raise CommandError("that API key is unknown or revoked")
    token = scope_limit_set(key.scope_prefix)
    try:
        result = hermes_profile_import(
            tenant=key.tenant, hermes_home=home.expanduser(), actor=Actor.api_key(key),
            scope=scope or key.scope_prefix,
        )  # fmt: skip
    except InvalidInput as error:
        raise CommandError(f"{error.field}: {error.message}") from None
    finally:
        scope_limit_reset(token)
    say(
        f"Imported {result.added} memories into {key.tenant.slug} ({result.exists} were there "
        f"already; {result.entities_linked} entity links) from {', '.join(result.sources)}."
    )
    return result.added
