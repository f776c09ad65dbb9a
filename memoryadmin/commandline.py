"""What `mnemosyne --help` lists: Mnemosyne's commands in groups, one line each.

Adding a command to a group is one line in GROUPS. A command is the Django management command of
the same name (in any app's `management/commands/`), run after Django's set-up, unless
WITHOUT_DJANGO names a function for it.
A management command whose module imports nothing of Django's models at its top (the project's
own do their imports in `handle`) answers `--help` and argument errors before the set-up.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import NoReturn


@dataclass(frozen=True)
class Entry:
    name: str
    summary: str


GROUPS: dict[str, tuple[Entry, ...]] = {
    "Run": (
        Entry("up", "start the database, web server, worker and beat; Ctrl-C stops them"),
        Entry("status", "say whether Mnemosyne runs on this data directory, and how healthy"),
        Entry("stop", "stop what `mnemosyne up` started on this data directory"),
    ),
    "Tenants and keys": (
        Entry("tenant", "create, list, rename or delete tenants"),
        Entry("apikey", "create, list or revoke a tenant's API keys"),
        Entry("createsuperuser", "create a superuser, who manages every tenant in the web admin"),
    ),
    "Agents": (
        Entry("hermes", "connect a Hermes Agent profile: install, uninstall, import its memories"),
        Entry("mcp", "serve Mnemosyne's MCP tools on stdio, relayed to a Mnemosyne server"),
    ),
    "Data": (
        Entry("export", "export a tenant's facts into a bundle"),
        Entry("import", "import a bundle (an export or an archive) into a tenant"),
    ),
    "Maintenance": (
        Entry("migrate", "bring the database's tables up to date (as the owner role)"),
        Entry("check", "check the configuration and the database roles"),
        Entry("embedder", "load the embedder; which model serves recall, how far a switch is"),
        Entry("audit", "verify a tenant's tamper-evident audit chain; publish its digest"),
        Entry("compact", "rewrite the tables purges touched, so purged text leaves the files"),
        Entry("shell", "a Python shell with Mnemosyne's settings loaded"),
        Entry("django", "Django's own commands: `mnemosyne django --help` lists them all"),
    ),
}

# The commands that run without Django (no settings, no database set-up): `module:function`,
# called with the arguments after the command's name and a parser class; returns the exit code.
WITHOUT_DJANGO = {
    "status": "memoryadmin.control:status_main",
    "stop": "memoryadmin.control:stop_main",
    "hermes": "hermes_provider.installer:main",
    "mcp": "mcp_server.relay:main",
}


def entry_named(name: str) -> Entry | None:
    for entries in GROUPS.values():
        for entry in entries:
            if entry.name == name:
                return entry
    return None


def command_names() -> list[str]:
    return [entry.name for entries in GROUPS.values() for entry in entries]


def overview() -> str:
    width = max(len(name) for name in command_names()) + 2
    lines = [
        "usage: mnemosyne <command> [options]",
        "",
        "Mnemosyne: long-term memory for AI agents. `mnemosyne <command> --help` says more.",
    ]
    for group, entries in GROUPS.items():
        lines += ["", f"{group}:"]
        lines += [f"  {entry.name:<{width}}{entry.summary}" for entry in entries]
    lines += [
        "",
        "Every command reads the data directory from MNEMOSYNE_HOME (default ./.mnemosyne) and",
        "the database from DATABASE_URL (default: the embedded one in the data directory).",
    ]
    return "\n".join(lines)


class UsageError(Exception):
    """A bad command line: the message names the argument; exit code 2."""

    def __init__(self, prog: str, message: str, *, hint: bool = True) -> None:
        super().__init__(message)
        self.prog = prog
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        hint = f" (see `{self.prog} --help`)" if self.hint else ""
        return f"{self.prog}: {self.message}{hint}"


class OneLineParser(argparse.ArgumentParser):
    """argparse, whose errors are one line (UsageError) instead of the usage and a message."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)


def fail(message: str, code: int = 2) -> int:
    print(message, file=sys.stderr)
    return code
