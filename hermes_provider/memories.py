"""Bringing along what a Hermes profile already remembers: `mnemosyne hermes import`, and the
offer `mnemosyne hermes install` makes.

The profile's holographic store (`memory_store.db`, or wherever the profile's config.yaml puts it:
`plugins.hermes-memory-store.db_path`) and Hermes' built-in `memories/MEMORY.md` and
`memories/USER.md` are counted here and sent to the server (`/api/v1/agent/profile-import`),
which imports them into the key's tenant (facts.importers: trust, tags, counts and entities come
along; importing twice adds nothing). No Django and no database on this side.
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

from hermes_provider.client import AgentClient, KeyRefused, Rejected, Unreachable
from hermes_provider.config import read_section

# The upload's field for each file, and where it lives in a Hermes home.
FILES = {
    "memory_store": "memory_store.db",
    "memory_md": "memories/MEMORY.md",
    "user_md": "memories/USER.md",
}
ENTRY_DELIMITER = "\n§\n"  # Hermes' tools/memory_tool.py
IMPORT_TIMEOUT_S = 300.0


class ImportFailed(Exception):
    """The memories did not come along; the message says why."""


def holographic_store(hermes_home: Path) -> Path:
    """Where the profile's holographic provider keeps its store, as the provider finds it:
    `plugins.hermes-memory-store.db_path` in the profile's config.yaml ($HERMES_HOME and ~
    expanded), else $HERMES_HOME/memory_store.db."""
    value = read_section(hermes_home, "hermes-memory-store").get("db_path")
    if not isinstance(value, str) or not value.strip():
        return hermes_home / FILES["memory_store"]
    home = str(hermes_home)
    path = Path(value.replace("${HERMES_HOME}", home).replace("$HERMES_HOME", home)).expanduser()
    return path if path.is_absolute() else hermes_home / path


def store_snapshot(store: Path, folder: Path) -> Path:
    """A copy of the store in `folder` made by SQLite's backup, so that what Hermes wrote and
    has not yet moved out of the write-ahead log (`-wal`) comes along too; the store itself as
    it is when SQLite cannot read it (the server then says what is wrong with it)."""
    copy = folder / FILES["memory_store"]
    try:
        with (
            closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as source,
            closing(sqlite3.connect(copy)) as target,
        ):
            source.backup(target)
    except sqlite3.Error:
        return store
    return copy


def profile_memories(hermes_home: Path) -> dict[str, int]:
    """Entries per file the profile holds, e.g. {"memory_store.db": 3, "MEMORY.md": 2}."""
    found: dict[str, int] = {}
    store = holographic_store(hermes_home)
    if store.is_file():
        try:
            with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as db:
                count = db.execute("SELECT count(*) FROM facts").fetchone()[0]
        except sqlite3.Error:
            count = 0  # not a holographic store: nothing of it comes along
        if count:
            found[store.name] = int(count)
    for field in ("memory_md", "user_md"):
        path = hermes_home / FILES[field]
        if path.is_file():
            raw = path.read_text(encoding="utf-8", errors="replace")
            entries = [entry for entry in raw.split(ENTRY_DELIMITER) if entry.strip()]
            if entries:
                found[path.name] = len(entries)
    return found


def profile_import(
    *, url: str, api_key: str, hermes_home: Path, scope: str | None = None, ca_file: str = ""
) -> dict[str, Any]:
    """Send the profile's memories to the server: {"added", "exists", "entities_linked",
    "sources"}. ImportFailed when nothing could be sent or the server refused."""
    client = AgentClient(url, api_key, ca_file=ca_file, timeout=IMPORT_TIMEOUT_S)
    try:
        with ExitStack() as files:
            paths = {field: hermes_home / name for field, name in FILES.items()}
            paths["memory_store"] = holographic_store(hermes_home)
            if paths["memory_store"].is_file():
                folder = Path(files.enter_context(tempfile.TemporaryDirectory()))
                paths["memory_store"] = store_snapshot(paths["memory_store"], folder)
            upload = {
                field: (Path(FILES[field]).name, files.enter_context(path.open("rb")))
                for field, path in paths.items()
                if path.is_file()
            }
            if not upload:
                raise ImportFailed(f"{hermes_home} holds no memories to import")
            fields = {"scope": scope} if scope else None
            return client.call(
                "POST", "profile-import", fields, files=upload, timeout=IMPORT_TIMEOUT_S
            )
    except KeyRefused as refusal:
        raise ImportFailed(f"the server refused the API key: {refusal}") from None
    except Rejected as refusal:
        raise ImportFailed(f"the server refused the import: {refusal.message}") from None
    except Unreachable as error:
        raise ImportFailed(str(error)) from None
    finally:
        client.close()


def offer_import(
    *,
    url: str,
    api_key: str,
    hermes_home: Path,
    scope: str | None,
    ca_file: str,
    choice: str,
    say: Callable[[str], None],
) -> int:
    """After an install: `choice` "yes" imports, "no" does not, "ask" asks when run in a
    terminal (and says how to import later otherwise). Returns how many memories were added."""
    found = profile_memories(hermes_home)
    if not found:
        if choice == "yes":
            say("  memories: this profile holds none to import")
        return 0
    listed = ", ".join(f"{count} in {name}" for name, count in found.items())
    if choice == "ask":
        if not sys.stdin.isatty():
            say(
                f"  memories: this profile remembers {listed}; bring them along with "
                f"`mnemosyne hermes import --hermes-home {hermes_home}`"
            )
            return 0
        answer = input(f"This profile remembers {listed}. Import them into Mnemosyne? [Y/n] ")
        choice = "no" if answer.strip().lower() in ("n", "no") else "yes"
    if choice == "no":
        return 0
    result = profile_import(
        url=url, api_key=api_key, hermes_home=hermes_home, scope=scope, ca_file=ca_file
    )
    say(summary(result))
    return int(result["added"])


def summary(result: dict[str, Any]) -> str:
    scope = result.get("scope")
    where = f"scope {scope}" if scope else "the whole tenant (no scope)"
    return (
        f"  memories: imported {result['added']} ({result['exists']} were there already; "
        f"{result['entities_linked']} entity links) from {', '.join(result['sources'])} "
        f"into {where}"
    )
