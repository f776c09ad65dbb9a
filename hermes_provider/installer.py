"""`mnemosyne hermes install` / `uninstall` / `import`: connect a Hermes profile to Mnemosyne,
undo it, or bring along what it remembers (hermes_provider.memories).

Install first asks the server who the API key is (`/api/v1/agent/whoami`) and stops, changing
nothing, when the server does not answer or refuses the key. It writes
`$HERMES_HOME/plugins/mnemosyne/` (a plugin.yaml and an __init__.py that imports
this package: Hermes executes every .py file in a plugin's folder, so nothing else goes there)
and sets `memory.provider` and `plugins.mnemosyne` in the profile's config.yaml, leaving the
rest of the file (other settings, comments) as it was. Uninstall removes both, and puts back
the memory provider the profile had before.

The profile gets the server's URL and the key, nothing else that opens data: no database URL, no
model. Neither command loads Django or opens a database.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_provider import config as provider_config
from hermes_provider.client import AgentClient, KeyRefused, Rejected, Unreachable

NAME = provider_config.NAME
PLUGIN_FILES = ("plugin.yaml", "__init__.py")
_SECTION = f"plugins.{NAME}"

PLUGIN_YAML = f"""\
name: {NAME}
version: 0.1.0
description: "Mnemosyne: the team's local long-term memory (hybrid recall, Chinese and English)."
hooks:
  - on_session_end
"""

SHIM = '''\
"""Mnemosyne memory provider for Hermes Agent. Written by `mnemosyne hermes install`; the code
is Mnemosyne's `hermes_provider` package (nothing else belongs in this folder)."""

import logging
import sys

# Where Mnemosyne is installed, for a Hermes that runs from another Python environment.
_MNEMOSYNE_PATHS = {paths!r}

try:
    from hermes_provider.provider import MnemosyneProvider
except ImportError:
    sys.path.extend(p for p in _MNEMOSYNE_PATHS if p not in sys.path)
    try:
        from hermes_provider.provider import MnemosyneProvider
    except ImportError as error:
        logging.getLogger("hermes_provider").warning(
            "Mnemosyne memory is off: its package cannot be imported here (%s). Install "
            "Mnemosyne into this Python environment (pip install 'mnemosyne[hermes]').",
            error,
        )
        raise


def register(ctx):
    ctx.register_memory_provider(MnemosyneProvider())
'''


class InstallError(Exception):
    """Something the user must fix before the profile can be connected (the message says what)."""


@dataclass(frozen=True)
class KeyInfo:
    prefix: str
    name: str
    tenant_slug: str
    tenant_name: str
    scopes: list[str]
    scope_prefix: str


CHECK_TIMEOUT_S = 15.0


def default_hermes_home() -> Path:
    configured = os.environ.get("HERMES_HOME", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".hermes"


def verify_key(url: str, token: str, ca_file: str = "", scope: str | None = None) -> KeyInfo:
    """Who the key is, according to the server, and whether it takes the scope (the server's
    own rule: a path of type:name segments, inside the key's scope limit); InstallError when
    it cannot say or refuses."""
    try:
        client = AgentClient(url, token, ca_file=ca_file, timeout=CHECK_TIMEOUT_S)
    except OSError as error:
        raise InstallError(f"--ca-file {ca_file}: {error}") from None
    try:
        who = client.call("GET", "whoami", timeout=CHECK_TIMEOUT_S)
        if scope is not None:
            try:
                client.call("POST", "prompt", {"scope": scope}, timeout=CHECK_TIMEOUT_S)
            except Rejected as refusal:
                raise InstallError(f"--{refusal.message}") from None
    except KeyRefused:
        raise InstallError(
            "that API key is unknown or revoked: create one in Mnemosyne's admin (Tenants, "
            "API keys) and copy it when it is shown"
        ) from None
    except Rejected as refusal:
        raise InstallError(f"the server refused that API key: {refusal.message}") from None
    except Unreachable as error:
        raise InstallError(f"{error}; is Mnemosyne running there (`mnemosyne up`)?") from None
    finally:
        client.close()
    return KeyInfo(
        prefix=who["key"]["prefix"],
        name=who["key"]["name"],
        tenant_slug=who["tenant"]["slug"],
        tenant_name=who["tenant"]["name"],
        scopes=list(who["scopes"]),
        scope_prefix=who.get("scope_prefix") or "",
    )


def _shim_paths() -> list[str]:
    import hermes_provider

    source = str(Path(hermes_provider.__file__).resolve().parent.parent)
    return list(dict.fromkeys([source, sysconfig.get_paths()["purelib"]]))


def _write_plugin(folder: Path) -> None:
    if folder.exists():
        strangers = sorted(
            p.name
            for p in folder.iterdir()
            if p.name not in PLUGIN_FILES and p.name != "__pycache__"
        )
        if strangers:
            raise InstallError(
                f"{folder} holds files that are not Mnemosyne's ({', '.join(strangers)}); Hermes "
                "would run them as part of the plugin. Move them away and install again."
            )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.yaml").write_text(PLUGIN_YAML, encoding="utf-8")
    (folder / "__init__.py").write_text(SHIM.format(paths=_shim_paths()), encoding="utf-8")


def _describe(value: Any) -> str:
    return "(none)" if value is None else str(value)


def _configure(
    config_path: Path,
    *,
    url: str,
    api_key: str,
    scope: str | None,
    ca_file: str | None,
    say: Callable[[str], None],
) -> None:
    """Point the profile's config.yaml at Mnemosyne (the provider and its section, an earlier
    release's settings removed, the previous provider kept), and say what changed."""
    previous = provider_config.read_value(config_path, "memory.provider")
    changes: dict[str, Any] = {
        "memory.provider": NAME,
        f"{_SECTION}.url": url,
        f"{_SECTION}.api_key": api_key,
    }
    if scope is not None:
        changes[f"{_SECTION}.scope"] = scope
    if ca_file is not None:
        changes[f"{_SECTION}.ca_file"] = ca_file
    # An earlier release's settings: the database credential and the model leave the profile.
    for legacy in provider_config.LEGACY_KEYS:
        changes[f"{_SECTION}.{legacy}"] = None
    if previous and previous != NAME:
        changes[f"{_SECTION}.previous_provider"] = previous
    changed = provider_config.update_config(config_path, changes)
    if "memory.provider" in changed:
        say(f"  config.yaml: memory.provider: {_describe(previous)} -> {NAME}")
    else:
        say(f"  config.yaml: memory.provider is {NAME} already")
    updated = [
        k.removeprefix(f"{_SECTION}.")
        for k, (_, after) in changed.items()
        if k.startswith(_SECTION) and after is not None
    ]
    removed = [
        k.removeprefix(f"{_SECTION}.")
        for k, (_, after) in changed.items()
        if k.startswith(_SECTION) and after is None
    ]
    if updated:
        say(f"  config.yaml: {_SECTION}: set {', '.join(updated)}")
    if removed:
        say(f"  config.yaml: {_SECTION}: removed {', '.join(removed)} (no longer used)")
    if not updated and not removed:
        say(f"  config.yaml: {_SECTION} was up to date")


def install(
    *,
    hermes_home: Path,
    url: str,
    api_key: str,
    scope: str | None = None,
    ca_file: str | None = None,
    say: Callable[[str], None],
) -> None:
    hermes_home = hermes_home.expanduser().resolve()
    api_key = (api_key or "").strip()
    url = (url or "").strip().rstrip("/")
    if not api_key:
        raise InstallError("--api-key is required")
    if not url.startswith(("http://", "https://")):
        raise InstallError(f"--url {url or '(none)'}: give the server's http:// or https:// URL")
    scope = (scope or "").strip().strip("/") or None
    ca_file = str(Path(ca_file).expanduser().resolve()) if ca_file else None
    config_path = provider_config.hermes_config_path(hermes_home)
    if not hermes_home.is_dir():
        raise InstallError(f"{hermes_home} is not a directory (is --hermes-home right?)")

    say(f"Connecting the Hermes profile in {hermes_home} to Mnemosyne at {url}")
    key = verify_key(url, api_key, ca_file or "", scope)
    limit = f", within the scope {key.scope_prefix}" if key.scope_prefix else ""
    say(
        f"  API key {key.prefix}… ({key.name!r}) of tenant {key.tenant_slug} ({key.tenant_name}); "
        f"it may {' and '.join(key.scopes)}{limit}"
    )
    folder = hermes_home / "plugins" / NAME
    _write_plugin(folder)
    say(f"  plugin: wrote {folder}/plugin.yaml and __init__.py")

    _configure(config_path, url=url, api_key=api_key, scope=scope, ca_file=ca_file, say=say)
    say(f"  config.yaml: everything else in {config_path} is as it was")
    say(
        "Done. Hermes uses Mnemosyne from its next start with this profile "
        f"(`mnemosyne hermes uninstall --hermes-home {hermes_home}` undoes this)."
    )


def uninstall(*, hermes_home: Path, say: Callable[[str], None]) -> None:
    from hermes_provider.outbox import Outbox

    hermes_home = hermes_home.expanduser().resolve()
    config_path = provider_config.hermes_config_path(hermes_home)
    say(f"Disconnecting the Hermes profile in {hermes_home} from Mnemosyne")
    folder = hermes_home / "plugins" / NAME
    if folder.is_dir():
        for name in PLUGIN_FILES:
            (folder / name).unlink(missing_ok=True)
        shutil.rmtree(folder / "__pycache__", ignore_errors=True)
        try:
            folder.rmdir()
            say(f"  plugin: removed {folder}")
        except OSError:
            say(f"  plugin: removed Mnemosyne's files; {folder} holds other files and stays")
    else:
        say(f"  plugin: {folder} was not there")

    buffer = hermes_home / NAME / "outbox.sqlite3"
    if buffer.exists():
        outbox = Outbox(buffer)
        waiting = outbox.count()
        outbox.close()
        if waiting:
            say(
                f"  buffer: {waiting} memories in {buffer} were never stored (the server was "
                "unreachable); it stays, so installing again stores them"
            )
        else:
            shutil.rmtree(hermes_home / NAME, ignore_errors=True)
            say(f"  buffer: removed {hermes_home / NAME} (it was empty)")

    if not config_path.exists():
        say(f"  config.yaml: {config_path} does not exist; nothing to change")
        return
    current = provider_config.read_value(config_path, "memory.provider")
    previous = provider_config.read_value(config_path, f"{_SECTION}.previous_provider")
    changes: dict[str, Any] = {_SECTION: None}
    if current == NAME:
        changes["memory.provider"] = previous or None
    changed = provider_config.update_config(config_path, changes)
    if "memory.provider" in changed:
        say(f"  config.yaml: memory.provider: {NAME} -> {_describe(previous)}")
    elif current != NAME:
        say(f"  config.yaml: memory.provider is {_describe(current)}; left as it is")
    if _SECTION in changed:
        say(f"  config.yaml: removed {_SECTION}")
    say(f"  config.yaml: everything else in {config_path} is as it was")
    say("Done.")


def _parser(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """The command line of `mnemosyne hermes`: install, uninstall and import, with their
    options."""
    parser = parser_class(
        prog="mnemosyne hermes",
        description="Connect a Hermes Agent profile to Mnemosyne (install), disconnect it "
        "(uninstall), or bring along what it remembers (import).",
    )
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
            sub.add_argument(
                "--url", required=True, help="the Mnemosyne server, e.g. http://127.0.0.1:8000"
            )
            sub.add_argument("--api-key", required=True, help="an API key of the tenant")
            sub.add_argument(
                "--scope", help="scope the profile writes to and reads, e.g. project:beta"
            )
            sub.add_argument("--ca-file", help="the CA of a server with a private TLS certificate")
        if name == "import":
            installed = "(default: the one the profile was installed with)"
            sub.add_argument("--url", help=f"the Mnemosyne server {installed}")
            sub.add_argument("--api-key", help=f"an API key of the tenant {installed}")
            sub.add_argument(
                "--scope",
                help="the scope the memories land in, e.g. team:hermes (default: the profile's "
                "scope, else the key's scope limit, else the whole tenant)",
            )
            sub.add_argument("--ca-file", help=f"the CA of a private TLS certificate {installed}")
        if name == "install":
            sub.add_argument(
                "--import-memories",
                choices=["ask", "yes", "no"],
                default="ask",
                help="bring along the profile's existing memories (default: ask when run in a "
                "terminal, else say how)",
            )
    return parser


def _import(options: argparse.Namespace, home: Path, say: Callable[[str], None]) -> None:
    """`mnemosyne hermes import`: the profile's memories, to the server it was installed with
    unless the command line names another."""
    from hermes_provider.memories import profile_import, summary

    # What the command line leaves out, the profile's installed settings give: its
    # memories land where the profile reads.
    section = provider_config.read_section(home)
    url, api_key, scope, ca_file = (
        str(options.url or section.get("url") or "").strip().rstrip("/"),
        str(options.api_key or section.get("api_key") or "").strip(),
        str(options.scope or section.get("scope") or "").strip().strip("/") or None,
        str(options.ca_file or section.get("ca_file") or ""),
    )  # fmt: skip
    if not url or not api_key:
        raise InstallError(
            f"{home} is not connected to Mnemosyne: give --url and --api-key "
            "(or run `mnemosyne hermes install` first)"
        )
    say(f"Importing the memories of the Hermes profile in {home}")
    result = profile_import(
        url=url, api_key=api_key, hermes_home=home, scope=scope, ca_file=ca_file
    )
    say(summary(result))


def main(
    argv: list[str], parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> int:
    """`mnemosyne hermes install|uninstall|import ...` (no Django, no database). `parser_class`:
    the command line's parser (the `mnemosyne` command's makes errors one line)."""
    from hermes_provider.memories import ImportFailed, offer_import

    parser = _parser(parser_class)
    options = parser.parse_args(argv)
    home = (options.hermes_home or default_hermes_home()).expanduser()
    say = print
    try:
        if options.action == "install":
            install(
                hermes_home=home,
                url=options.url,
                api_key=options.api_key,
                scope=options.scope,
                ca_file=options.ca_file,
                say=say,
            )
            offer_import(
                url=options.url.strip().rstrip("/"),
                api_key=options.api_key.strip(),
                hermes_home=home,
                scope=options.scope,
                ca_file=options.ca_file or "",
                choice=options.import_memories,
                say=say,
            )
        elif options.action == "import":
            _import(options, home, say)
        else:
            uninstall(hermes_home=home, say=say)
    except (InstallError, ImportFailed) as problem:
        print(f"mnemosyne hermes: {problem}", file=sys.stderr)
        return 1
    return 0
