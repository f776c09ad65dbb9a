"""The `mnemosyne` command: `up`, `status`, `stop`, `mcp`, `hermes`, and every manage.py command.

When the database is the embedded one, a command that needs it starts it first and stops it
again when the command ends (unless it was already running). Under a running `mnemosyne up`,
which owns the database (and restarts it when it stops), a command never starts or stops it.
"""

from __future__ import annotations

import atexit
import os
import sys

# Commands that manage the embedded database themselves, or never touch a database.
_NO_AUTOSTART = {"up", "status", "stop", "help", "--help", "-h", "version", "--version"}


def _autostart_embedded_database(command: str) -> None:
    from django.conf import settings

    from memoryadmin.embedded_db import EmbeddedDatabaseError, server_for_home
    from memoryadmin.runstate import RunLock

    if not settings.MNEMOSYNE_EMBEDDED_DB or command in _NO_AUTOSTART:
        return
    if RunLock(settings.MNEMOSYNE_HOME).is_held_elsewhere():
        return  # `up` owns the database; while it is down, `up` is starting it again
    server = server_for_home(settings.MNEMOSYNE_HOME)
    try:
        started = server.start()
    except EmbeddedDatabaseError as error:
        sys.exit(f"mnemosyne: the embedded database did not start:\n{error}")
    if started:
        atexit.register(_stop_quietly, server)


def _stop_quietly(server: object) -> None:
    from django.db import connections

    from memoryadmin.embedded_db import EmbeddedDatabaseError, EmbeddedPostgres

    assert isinstance(server, EmbeddedPostgres)  # noqa: S101
    connections.close_all()
    try:
        server.stop()
    except EmbeddedDatabaseError as error:
        print(f"mnemosyne: could not stop the embedded database: {error}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    if len(argv) > 1 and argv[1] == "mcp":
        # The stdio relay runs on an agent's machine: no settings, no database, no Django.
        from mcp_server.relay import main as relay

        sys.exit(relay(argv[2:]))
    if len(argv) > 1 and argv[1] == "hermes":
        # Connecting a Hermes profile needs the server's URL and a key: no database, no Django.
        from hermes_provider.installer import main as hermes

        sys.exit(hermes(argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    from django.core.management import execute_from_command_line

    from memoryadmin.env import ConfigError

    try:
        from django.conf import settings

        settings.MNEMOSYNE_HOME  # noqa: B018 - load settings now, to report config errors plainly
    except ConfigError as error:
        sys.exit(f"mnemosyne: configuration error: {error}")
    command = argv[1] if len(argv) > 1 else "help"
    _autostart_embedded_database(command)
    if command == "migrate":
        from operations.roles import as_owner

        # Migrations run as the owner of the tables; the runtime role then gets its grants.
        with as_owner():
            execute_from_command_line(argv)
        return
    execute_from_command_line(argv)


if __name__ == "__main__":
    main()
