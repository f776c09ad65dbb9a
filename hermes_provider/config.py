"""The provider's configuration: `plugins: mnemosyne:` in a Hermes profile's config.yaml.

    memory:
      provider: mnemosyne
    plugins:
      mnemosyne:
        url: https://mnemosyne.example.com   # the server; the provider talks only to its API
        api_key: mnm_...                 # or ${MNEMOSYNE_API_KEY}
        ca_file: /etc/ssl/private-ca.pem # optional: the CA of a server with a private certificate
        prefetch_timeout: 2              # seconds a turn waits for its memories at most
        scope: project:beta              # where this profile writes, and what it reads
        read_scopes: [user:alice, team:infra]  # optional: what it reads instead (several scopes)
        auto_extract: true               # candidate facts at the end of a session
        budget: 1300                     # tokens of memory per turn (system prompt + recall)
        min_trust: 0.3
        half_life_days: 0
        weights: {fts: 0.3, vec: 0.5, entity: 0}

Reading never raises: a value that makes no sense is reported by name and left out, so the
tenant's own setting applies. Writing keeps everything else in the file as it was, comments
included.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NAME = "mnemosyne"
API_KEY_ENV = "MNEMOSYNE_API_KEY"
URL_ENV = "MNEMOSYNE_URL"
# Set by installs of earlier releases, whose provider opened the database itself.
LEGACY_KEYS = ("database_url", "model_dir", "embedder", "broker_url")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WEIGHTS = ("fts", "vec", "entity")
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0", ""}
# Per-profile overrides: config key -> (tenant setting, minimum, maximum, whole number?)
_OVERRIDES: dict[str, tuple[str, float, float, bool]] = {
    "budget": ("token_budget", 100, 32000, True),
    "min_trust": ("min_trust", 0.0, 1.0, False),
    "half_life_days": ("half_life_days", 0.0, 36500.0, False),
}


@dataclass
class ProviderConfig:
    url: str = ""
    api_key: str = ""
    ca_file: str = ""
    scope: str = ""
    # Scopes recall reads together, instead of `scope` alone (writes still go to `scope`).
    read_scopes: list[str] = field(default_factory=list)
    auto_extract: bool = False
    # Seconds a turn waits for its memories; then it goes on without them.
    prefetch_timeout: float = 2.0
    # Seconds a tool call (fact_store, fact_feedback) may take.
    tool_timeout: float = 15.0
    # An install of an earlier release: the profile still holds a database URL.
    legacy_database_url: bool = False
    # How long Hermes' exit waits for buffered memories to be written (the rest wait on disk).
    flush_seconds: float = 10.0
    # Tenant settings this profile sees differently (never saved to the tenant).
    overrides: dict[str, float | int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return bool(self.url and self.api_key)


def hermes_config_path(hermes_home: str | Path) -> Path:
    return Path(hermes_home).expanduser() / "config.yaml"


def _expand(value: Any) -> Any:
    """`${NAME}` references to the environment, as Hermes itself expands them."""
    if isinstance(value, str):
        return _ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), value).strip()
    return value


def read_section(hermes_home: str | Path, plugin: str = NAME) -> dict[str, Any]:
    """`plugins.<plugin>` (ours by default) of the profile's config.yaml ({} when absent or
    unreadable)."""
    import yaml

    path = hermes_config_path(hermes_home)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8-sig")) or {}
    except (OSError, yaml.YAMLError):
        return {}
    plugins = document.get("plugins") if isinstance(document, dict) else None
    section = plugins.get(plugin) if isinstance(plugins, dict) else None
    return section if isinstance(section, dict) else {}


def _text(section: dict[str, Any], key: str, problems: list[str]) -> str:
    value = _expand(section.get(key))
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.append(f"plugins.{NAME}.{key} must be text; ignored")
        return ""
    return value


def _number(key: str, value: Any, low: float, high: float, whole: bool) -> float | int | str:
    """The number, or why it is not one."""
    value = _expand(value)
    if isinstance(value, str):
        try:
            value = float(value) if not whole else int(value)
        except ValueError:
            return f"plugins.{NAME}.{key}={value!r} is not a number; ignored"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"plugins.{NAME}.{key} must be a number; ignored"
    if whole and value != int(value):
        return f"plugins.{NAME}.{key}={value} must be a whole number; ignored"
    if not low <= value <= high:
        return f"plugins.{NAME}.{key}={value} must be between {low:g} and {high:g}; ignored"
    return int(value) if whole else float(value)


def _flag(section: dict[str, Any], key: str, problems: list[str]) -> bool:
    value = _expand(section.get(key, False))
    if isinstance(value, str) and value.lower() in {
        "true",
        "yes",
        "on",
        "1",
        "false",
        "no",
        "off",
        "0",
        "",
    }:
        return value.lower() in {"true", "yes", "on", "1"}
    if isinstance(value, bool):
        return value
    problems.append(f"plugins.{NAME}.{key} must be true or false; off")
    return False


def _scopes(section: dict[str, Any], key: str, problems: list[str]) -> list[str]:
    """A list of scope paths, or one text of them separated by commas."""
    value = _expand(section.get(key))
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"plugins.{NAME}.{key} must be a list of scopes; ignored")
        return []
    return [scope.strip().strip("/") for scope in map(_expand, value) if scope.strip()]


def parse_section(section: dict[str, Any], hermes_home: str | Path) -> ProviderConfig:
    problems: list[str] = []
    config = ProviderConfig(
        url=(_text(section, "url", problems) or os.environ.get(URL_ENV, "")).rstrip("/"),
        api_key=_text(section, "api_key", problems) or os.environ.get(API_KEY_ENV, ""),
        ca_file=_text(section, "ca_file", problems),
        scope=_text(section, "scope", problems).strip("/"),
        read_scopes=_scopes(section, "read_scopes", problems),
        auto_extract=_flag(section, "auto_extract", problems),
        legacy_database_url=bool(section.get("database_url")),
        problems=problems,
    )
    if config.url and not config.url.startswith(("http://", "https://")):
        problems.append(f"plugins.{NAME}.url must start with http:// or https://; ignored")
        config.url = ""
    for key, low, high in (
        ("flush_seconds", 0.0, 300.0),
        ("prefetch_timeout", 0.1, 30.0),
        ("tool_timeout", 1.0, 300.0),
    ):
        if section.get(key) is not None:
            value = _number(key, section[key], low, high, False)
            if isinstance(value, str):
                problems.append(value)
            else:
                setattr(config, key, value)
    for key, (setting, low, high, whole) in _OVERRIDES.items():
        if section.get(key) is not None:
            value = _number(key, section[key], low, high, whole)
            if isinstance(value, str):
                problems.append(value)
            else:
                config.overrides[setting] = value
    weights = section.get("weights")
    if weights is not None:
        if not isinstance(weights, dict) or set(weights) - set(_WEIGHTS):
            problems.append(f"plugins.{NAME}.weights must map fts, vec, entity to numbers; ignored")
        else:
            chosen: dict[str, float | int] = {}
            for channel, raw in weights.items():
                value = _number(f"weights.{channel}", raw, 0.0, 100.0, False)
                if isinstance(value, str):
                    problems.append(value)
                else:
                    chosen[f"weight_{channel}"] = value
            if chosen and sum(chosen.values()) <= 0 and len(chosen) == len(_WEIGHTS):
                problems.append(f"plugins.{NAME}.weights are all 0; ignored")
            else:
                config.overrides.update(chosen)
    return config


def load_config(hermes_home: str | Path) -> ProviderConfig:
    return parse_section(read_section(hermes_home), hermes_home)


# -- writing ----------------------------------------------------------------------------------


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML()  # round trip: comments, order and quoting stay as the user wrote them
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def _load_document(path: Path) -> Any:
    from ruamel.yaml.comments import CommentedMap

    if not path.exists() or not path.read_text(encoding="utf-8-sig").strip():
        return CommentedMap()
    document = _yaml().load(path.read_text(encoding="utf-8-sig"))
    if not isinstance(document, dict):
        raise ValueError(f"{path} does not hold a mapping at its top level")
    return document


CONFIG_MODE = 0o600  # config.yaml holds the API key: its owner alone reads it


def _write_document(path: Path, document: Any) -> None:
    """Write atomically (a crash leaves the old file or the new one, never half of one),
    readable by its owner alone: it holds the API key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = CONFIG_MODE
    handle = tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, prefix=".config-", suffix=".yaml", delete=False
    )
    try:
        with handle:
            _yaml().dump(document, handle)
        os.chmod(handle.name, mode)
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def update_config(path: Path, changes: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Set dotted keys (`memory.provider`, `plugins.mnemosyne.scope`; a value of None removes the
    key) and return what changed: key -> (before, after)."""
    from ruamel.yaml.comments import CommentedMap

    document = _load_document(path)
    changed: dict[str, tuple[Any, Any]] = {}
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        node = document
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                if value is None:
                    node = None
                    break
                child = CommentedMap()
                node[part] = child
            node = child
        if node is None:
            continue
        before = node.get(leaf)
        if value is None:
            if leaf in node:
                del node[leaf]
                changed[dotted] = (before, None)
        elif before != value:
            node[leaf] = value
            changed[dotted] = (before, value)
    if changed:
        _prune_empty(document, ["plugins", NAME])
        _prune_empty(document, ["plugins"])
        _write_document(path, document)
    elif path.exists() and path.stat().st_mode & 0o777 != CONFIG_MODE:
        os.chmod(path, CONFIG_MODE)  # unchanged, but it holds the API key all the same
    return changed


def _prune_empty(document: Any, keys: list[str]) -> None:
    node = document
    for key in keys[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict) and isinstance(node.get(keys[-1]), dict) and not node[keys[-1]]:
        del node[keys[-1]]


def read_value(path: Path, dotted: str) -> Any:
    node: Any = _load_document(path)
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node
