"""`mnemosyne hermes install` / `uninstall`: connect a Hermes profile to Mnemosyne, or undo it.

Install writes `$HERMES_HOME/plugins/mnemosyne/` (a plugin.yaml and an __init__.py that imports
this package: Hermes executes every .py file in a plugin's folder, so nothing else goes there)
and sets `memory.provider` and `plugins.mnemosyne` in the profile's config.yaml, leaving the
rest of the file (other settings, comments) as it was. Uninstall removes both, and puts back
the memory provider the profile had before.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hermes_provider import config as provider_config

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


def default_hermes_home() -> Path:
    configured = os.environ.get("HERMES_HOME", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".hermes"


def database_url_of(settings_dict: dict[str, Any]) -> str:
    """A URL for the database Django is connected to (a unix socket as ?host=/dir)."""
    user = quote(settings_dict.get("USER") or "")
    password = f":{quote(settings_dict['PASSWORD'])}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or ""
    port = settings_dict.get("PORT") or "5432"
    name = quote(settings_dict["NAME"])
    options = "".join(
        f"&{quote(str(k))}={quote(str(v))}" for k, v in (settings_dict.get("OPTIONS") or {}).items()
    )
    if host.startswith("/"):
        return f"postgresql://{user}{password}@/{name}?host={quote(host)}&port={port}{options}"
    query = f"?{options[1:]}" if options else ""
    return f"postgresql://{user}{password}@{host}:{port}/{name}{query}"


def verify_key(token: str) -> KeyInfo:
    from tenants.services import apikey_verify

    key = apikey_verify(token=token)
    if key is None:
        raise InstallError(
            "that API key is unknown or revoked: create one in Mnemosyne's admin (Tenants, "
            "API keys) and copy it when it is shown"
        )
    return KeyInfo(key.prefix, key.name, key.tenant.slug, key.tenant.name, list(key.scopes))


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


def install(
    *,
    hermes_home: Path,
    api_key: str,
    scope: str | None,
    database_url: str | None,
    say: Callable[[str], None],
) -> None:
    from django.conf import settings
    from django.db import connection

    from facts.services import clean_scope
    from tenants.errors import InvalidInput

    hermes_home = hermes_home.expanduser().resolve()
    api_key = (api_key or "").strip()
    if not api_key:
        raise InstallError("--api-key is required")
    try:
        scope = clean_scope(scope) if scope else None
    except InvalidInput as problem:
        raise InstallError(f"--scope {problem.message}") from None
    config_path = provider_config.hermes_config_path(hermes_home)
    if not hermes_home.is_dir():
        raise InstallError(f"{hermes_home} is not a directory (is --hermes-home right?)")

    say(f"Connecting the Hermes profile in {hermes_home} to Mnemosyne")
    key = verify_key(api_key)
    say(
        f"  API key {key.prefix}… ({key.name!r}) of tenant {key.tenant_slug} ({key.tenant_name}); "
        f"it may {' and '.join(key.scopes)}"
    )
    url = database_url or database_url_of(connection.settings_dict)

    started = time.monotonic()
    say("  embedder: preparing the model the profile will use (the first time takes ~20 s)")
    from retrieval.embedders import EmbedderError, get_embedder

    try:
        embedder = get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR)
    except EmbedderError as error:
        raise InstallError(
            f"the embedder {settings.MNEMOSYNE_EMBEDDER!r} did not load: {error}"
        ) from None
    say(f"  embedder: {embedder.name} ready in {time.monotonic() - started:.1f} s")

    folder = hermes_home / "plugins" / NAME
    _write_plugin(folder)
    say(f"  plugin: wrote {folder}/plugin.yaml and __init__.py")

    previous = provider_config.read_value(config_path, "memory.provider")
    changes: dict[str, Any] = {
        "memory.provider": NAME,
        f"{_SECTION}.database_url": url,
        f"{_SECTION}.api_key": api_key,
        f"{_SECTION}.model_dir": str(settings.MNEMOSYNE_MODEL_DIR),
        f"{_SECTION}.embedder": settings.MNEMOSYNE_EMBEDDER,
    }
    if scope is not None:
        changes[f"{_SECTION}.scope"] = scope
    if previous and previous != NAME:
        changes[f"{_SECTION}.previous_provider"] = previous
    changed = provider_config.update_config(config_path, changes)
    if "memory.provider" in changed:
        say(f"  config.yaml: memory.provider: {_describe(previous)} -> {NAME}")
    else:
        say(f"  config.yaml: memory.provider is {NAME} already")
    settings_changed = [k.removeprefix(f"{_SECTION}.") for k in changed if k.startswith(_SECTION)]
    if settings_changed:
        say(f"  config.yaml: {_SECTION}: set {', '.join(settings_changed)}")
    else:
        say(f"  config.yaml: {_SECTION} was up to date")
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
                f"  buffer: {waiting} memories in {buffer} were never stored (the database was "
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
