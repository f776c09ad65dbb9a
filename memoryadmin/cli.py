"""The `mnemosyne` command; memoryadmin/commandline.py lists its commands.

Nothing here imports Django before it is needed: `--help`, `status`, `stop`, `hermes` and `mcp`
never set it up, and a management command whose module allows it answers `--help` and argument
errors before the set-up. Errors are one line on stderr, naming the argument: exit code 2 for
a bad argument or a refused request, 1 for a failure (the database did not start or answer).

When the database is the embedded one, a command that needs it starts it first and stops it
again when the command ends (unless it was already running). Under a running `mnemosyne up`,
which owns the database (and restarts it when it stops), a command never starts or stops it.
"""

from __future__ import annotations

import argparse
import atexit
import difflib
import functools
import importlib
import importlib.util
import os
import sys
from typing import Any, NoReturn

from memoryadmin.commandline import (
    WITHOUT_DJANGO,
    OneLineParser,
    UsageError,
    command_names,
    entry_named,
    fail,
    overview,
)

PROG = "mnemosyne"
# Commands that manage the embedded database themselves.
_NO_AUTOSTART = {"up"}
# Apps whose management commands are looked for before Django is set up (a command elsewhere
# is found after the set-up, and so answers `--help` more slowly).
_EARLY_PACKAGES = (
    "memoryadmin.management.commands",
    "tenants.management.commands",
    "facts.management.commands",
    "retrieval.management.commands",
    "operations.management.commands",
    "indexing.management.commands",
    "django.core.management.commands",
)
# Django's options that mean nothing to a Mnemosyne command: left out of its `--help`.
_HIDDEN_OPTIONS = {
    "--settings",
    "--pythonpath",
    "--no-color",
    "--force-color",
    "--skip-checks",
    "--version",
}


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- Django's set-up ------------------------------------------------------------------------------


def _setup(prog: str) -> bool:
    """Settings and apps; False when this process had set Django up already (tests)."""
    from django.apps import apps

    if apps.ready:
        return False
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    _say(f"{prog}: loading Mnemosyne (settings, models, text analysis) ...")
    import django
    from django.conf import settings

    from memoryadmin.env import ConfigError

    try:
        settings.MNEMOSYNE_HOME  # noqa: B018 - load settings now, to report config errors plainly
    except ConfigError as error:
        raise UsageError(prog, f"configuration error: {error}", hint=False) from None
    django.setup()
    return True


def _autostart_embedded_database(prog: str) -> None:
    from django.conf import settings

    from memoryadmin.embedded_db import EmbeddedDatabaseError, server_for_home
    from memoryadmin.runstate import RunLock

    if not settings.MNEMOSYNE_EMBEDDED_DB:
        return
    if RunLock(settings.MNEMOSYNE_HOME).is_held_elsewhere():
        return  # `up` owns the database; while it is down, `up` is starting it again
    server = server_for_home(settings.MNEMOSYNE_HOME)
    if not server.status().running:
        _say(f"{prog}: starting the embedded database in {settings.MNEMOSYNE_HOME} ...")
    try:
        started = server.start()
    except EmbeddedDatabaseError as error:
        sys.exit(f"{prog}: the embedded database did not start: {error}")
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
        print(f"{PROG}: could not stop the embedded database: {error}", file=sys.stderr)


# -- management commands --------------------------------------------------------------------------


def _early_command_class(name: str) -> type | None:
    """The command's class, when its module can be imported before Django's set-up."""
    from django.core.exceptions import AppRegistryNotReady, ImproperlyConfigured

    for package in _EARLY_PACKAGES:
        try:
            spec = importlib.util.find_spec(f"{package}.{name}")
        except ModuleNotFoundError:
            continue
        if spec is None:
            continue
        try:
            return importlib.import_module(spec.name).Command
        except (AppRegistryNotReady, ImproperlyConfigured):
            return None
    return None


def _usage_error(prog: str, message: str) -> NoReturn:
    raise UsageError(prog, message)


def _tame(parser: argparse.ArgumentParser, *, hide: bool) -> None:
    """One-line errors for the parser and its subcommands' parsers; Django's options that mean
    nothing here left out of the help."""
    parser.error = functools.partial(_usage_error, parser.prog)  # type: ignore[method-assign]
    for action in parser._actions:
        if hide and _HIDDEN_OPTIONS & set(action.option_strings):
            action.help = argparse.SUPPRESS
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _tame(sub, hide=hide)


def _parser(command: Any, base: str, name: str, *, hide: bool) -> argparse.ArgumentParser:
    parser = command.create_parser(base, name)
    _tame(parser, hide=hide)
    return parser


def run_management_command(name: str, args: list[str], *, base: str = PROG) -> int:
    """Parse `args` for the management command `name` (before the set-up when its module
    allows), set Django up, run it; errors as one line."""
    from django.core.exceptions import AppRegistryNotReady, ImproperlyConfigured

    prog = f"{base} {name}"
    ours = base == PROG
    early = _early_command_class(name)
    if early is not None:
        try:
            command = early()
            parser = _parser(command, base, name, hide=ours)
        except (AppRegistryNotReady, ImproperlyConfigured):
            early = None  # its arguments need the settings: they are parsed after the set-up
        else:
            options = parser.parse_args(args)
    set_up_here = _setup(prog)
    if early is None:
        from django.core.management import get_commands, load_command_class

        app = get_commands().get(name)
        if app is None:
            close = difflib.get_close_matches(name, command_names(), n=1)
            hint = f"; did you mean `{PROG} {close[0]}`?" if close else ""
            raise UsageError(
                base,
                f"unknown command {name!r}{hint} (`{base} --help` lists the commands)",
                hint=False,
            )
        command = app if not isinstance(app, str) else load_command_class(app, name)
        options = _parser(command, base, name, hide=ours).parse_args(args)
    if set_up_here and name not in _NO_AUTOSTART:
        _autostart_embedded_database(prog)  # once the command and its arguments are known good
    return _execute(command, options, prog, migrate=name == "migrate")


def _execute(command: Any, options: argparse.Namespace, prog: str, *, migrate: bool) -> int:
    from django.core.management.base import CommandError, handle_default_options
    from django.db import DatabaseError

    values = dict(vars(options))
    positional = values.pop("args", ())
    handle_default_options(options)
    try:
        if migrate:
            from operations.roles import as_owner

            # Migrations run as the owner of the tables; the runtime role then gets its grants.
            with as_owner():
                command.execute(*positional, **values)
        else:
            command.execute(*positional, **values)
    except CommandError as error:
        if values.get("traceback"):
            raise
        return fail(f"{prog}: {error}", 2)
    except DatabaseError as error:
        if values.get("traceback"):
            raise
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        if "does not exist" in first:
            first += " (has `mnemosyne migrate` been run?)"
        return fail(f"{prog}: the database failed: {first}", 1)
    return 0


def _django(args: list[str]) -> int:
    """`mnemosyne django ...`: Django's own list, and any of its commands."""
    base = f"{PROG} django"
    if not args or args[0] in ("-h", "--help", "help") and len(args) <= 1:
        _setup(base)
        from django.core.management import ManagementUtility

        print(f"usage: {base} <command> [options]")
        ManagementUtility([base, "help"]).execute()
        return 0
    if args[0] == "help":
        return run_management_command(args[1], ["--help"], base=base)
    return run_management_command(args[0], args[1:], base=base)


# -- the entry point ------------------------------------------------------------------------------


def run(args: list[str]) -> int:
    """Run `mnemosyne ARGS...`; the exit code."""
    if not args or args[0] in ("-h", "--help"):
        print(overview())
        return 0
    if args[0] == "help":
        return run(args[1:2] + ["--help"]) if args[1:] else run([])
    if args[0] in ("--version", "version"):
        from importlib.metadata import version

        print(f"mnemosyne {version('mnemosyne')}")
        return 0
    name, rest = args[0], args[1:]
    try:
        if name in WITHOUT_DJANGO:
            module, _, function = WITHOUT_DJANGO[name].partition(":")
            return int(getattr(importlib.import_module(module), function)(rest, OneLineParser))
        if name == "django":
            return _django(rest)
        if entry_named(name) is None and name.startswith("-"):
            raise UsageError(PROG, f"unknown option {name!r}")
        # Not one of ours: Django's own command of that name, as `mnemosyne django NAME`.
        return run_management_command(name, rest)
    except UsageError as error:
        return fail(str(error), 2)
    except KeyboardInterrupt:
        return 130


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    sys.exit(run(argv[1:]))


if __name__ == "__main__":
    main()
