"""What `mnemosyne up` leaves in the data directory so `status` and `stop` can find it.

`run/up.lock` is held (flock) by the running `up` for its whole life, so a crashed `up` never
leaves a stale "running" behind; `run/up.json` says where it serves and which children it runs.
"""

from __future__ import annotations

import fcntl
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

# How long `up` gives each child to stop before it is killed (`stop` waits for all of them).
STOP_TIMEOUT_S = 30.0


class RunLock:
    def __init__(self, home: Path) -> None:
        self.lock_path = home / "run" / "up.lock"
        self.info_path = home / "run" / "up.json"
        self._handle: IO[str] | None = None

    def acquire(self) -> bool:
        """Take the lock without waiting. False when another `up` holds it."""
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.lock_path, "a")  # noqa: SIM115 - held open for the life of `up`
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._handle = handle
        return True

    def release(self) -> None:
        self.info_path.unlink(missing_ok=True)
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None

    def is_held_elsewhere(self) -> bool:
        if not self.lock_path.exists():
            return False
        with open(self.lock_path, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False

    def write_info(self, info: dict[str, Any]) -> None:
        temporary = self.info_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(info, indent=2))
        os.replace(temporary, self.info_path)

    def read_info(self) -> dict[str, Any]:
        try:
            return json.loads(self.info_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}


def fetch_health(url: str) -> dict[str, Any] | None:
    """The JSON of a /healthz answer (503 included); None when the server does not answer."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - our own URL
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        try:
            return json.loads(error.read())
        except ValueError:
            return None
    except (OSError, ValueError):
        return None
