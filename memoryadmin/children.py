"""The processes `mnemosyne up` runs (web, worker, beat): each in its own process group, sent
SIGTERM if `up` dies without cleaning up (PR_SET_PDEATHSIG), started again after a pause that
doubles with each quick death."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

_PR_SET_PDEATHSIG = 1
# A child that dies is started again after RESTART_MIN_S, doubling with each death that came
# within RESTART_STABLE_S of its start, up to RESTART_MAX_S.
RESTART_MIN_S = 1.0
RESTART_MAX_S = 30.0
RESTART_STABLE_S = 60.0


class SupervisorError(RuntimeError):
    """`up` cannot go on; the message says why and what to do."""


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass  # not Linux: children then rely on our orderly shutdown alone


@dataclass
class Child:
    name: str
    argv: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = field(default=None, repr=False)
    started_at: float = 0.0
    restarts: int = 0
    last_exit: int | None = None
    restart_at: float | None = None  # when a dead child is due to start again
    backoff: float = RESTART_MIN_S
    env: dict[str, str] = field(default_factory=dict)  # over the shared environment

    def start(self, env: dict[str, str]) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self.log is None:
            self.log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and modules
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**env, **self.env},
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - no threads run before this
        )

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def exited(self) -> int | None:
        return self.process.poll() if self.process else None

    def signal(self, signum: int) -> None:
        if self.process and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signum)
            except ProcessLookupError:
                pass

    def wait(self, timeout: float) -> bool:
        if not self.process:
            return True
        try:
            self.process.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def stop(self, timeout: float) -> None:
        # The stop signal goes to the main process alone: it stops its own pool (Celery's warm
        # shutdown lets running tasks finish; signalled directly, they would die mid-task).
        if self.process and self.process.poll() is None:
            try:
                os.kill(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if not self.wait(timeout):
            self.signal(signal.SIGKILL)
            self.wait(5)
        # Whatever the child left in its group (pool processes) goes too.
        self.kill_group()
        if self.log:
            self.log.close()
            self.log = None

    def note_exit(self, code: int, now: float) -> float:
        """Record a death; returns the pause before the restart."""
        self.last_exit = code
        if now - self.started_at >= RESTART_STABLE_S:
            self.backoff = RESTART_MIN_S  # it ran well for a while: this is a fresh failure
        delay = self.backoff
        self.backoff = min(self.backoff * 2, RESTART_MAX_S)
        self.restart_at = now + delay
        # Pool processes of a dead worker main process must not keep running tasks.
        self.kill_group()
        return delay

    def kill_group(self) -> None:
        if self.process:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
