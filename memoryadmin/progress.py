"""A progress bar for long commands: one line, redrawn in place on a terminal, a line every
tenth otherwise (logs stay short)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    def __init__(self, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.started = time.monotonic()
        self._tty = self.stream.isatty()
        self._last_tenth = -1

    def __call__(self, done: int, total: int) -> None:
        share = 1.0 if total <= 0 else min(1.0, done / total)
        if not self._tty:
            tenth = int(share * 10)
            if tenth == self._last_tenth:
                return
            self._last_tenth = tenth
        filled = int(share * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        rate = done / max(1e-6, time.monotonic() - self.started)
        line = f"{self.label} [{bar}] {done:,}/{total:,} ({rate:,.0f}/s)"
        self.stream.write(("\r" + line) if self._tty else line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._tty:
            self.stream.write("\n")
            self.stream.flush()
