"""Typed readers of the environment that fail loudly on bad values.

Every setting Mnemosyne takes from the environment goes through one of these, so a typo in a
deployment stops the process at start-up with the variable's name instead of misbehaving later.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ValueError):
    """A configuration value from the environment is invalid."""


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str = "") -> str:
    value = _raw(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool = False) -> bool:
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ConfigError(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ConfigError(f"{name}={number} must be at least {minimum}")
    return number


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env_str(name, default).lower()
    if value not in choices:
        raise ConfigError(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


_RATE_PERIODS = ("s", "m", "h", "d")


def env_rate(name: str, default: str | None) -> str | None:
    """A request rate like `600/minute` (`N/second|minute|hour|day`); `off` (or 0) for none."""
    value = _raw(name)
    if value is None or value == "":
        return default
    if value.lower() in {"off", "none", "0"}:
        return None
    count, _, period = value.partition("/")
    if not count.isdigit() or int(count) < 1 or period[:1].lower() not in _RATE_PERIODS:
        raise ConfigError(
            f"{name}={value!r} is not a rate (use N/second, N/minute, N/hour, N/day, or off)"
        )
    return f"{int(count)}/{period.lower()}"


def env_path(name: str, default: str) -> Path:
    return Path(env_str(name, default)).expanduser().resolve()


def data_directory() -> Path:
    """MNEMOSYNE_HOME: the data directory (default `.mnemosyne` in the current directory)."""
    return env_path("MNEMOSYNE_HOME", str(Path.cwd() / ".mnemosyne"))


def parse_database_url(url: str, *, name: str = "DATABASE_URL") -> dict[str, Any]:
    """Turn `postgresql://user:pass@host:port/db?sslmode=...` into a Django DATABASES entry.

    A unix socket directory may be given as `?host=/path` (libpq style) or a percent-encoded host.
    """
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ConfigError(f"{name} must be a postgresql:// URL, got scheme {parts.scheme!r}")
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise ConfigError(f"{name} names no database (postgresql://user@host:5432/DATABASE)")
    options = dict(parse_qsl(parts.query))
    host = options.pop("host", None) or unquote(parts.hostname or "")
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"{name} has an invalid port") from None
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": database,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(port or options.pop("port", "") or ""),
        "OPTIONS": options,
    }
