"""The filesystem broker of a single machine, with its taken messages kept private.

kombu's filesystem transport takes a message by moving its file to the system's temporary
folder (`/tmp`) and reading it there. When the queue folder cannot be written, the move
becomes a copy whose source cannot be removed: every queued message was left in `/tmp`,
readable by anyone, and taken again and again. Here a message is taken by renaming it into
our own `processed` folder (same file system, mode 0700): a rename either happens whole or not
at all, so an unwritable queue leaves the message where it is and nothing elsewhere.

Celery's blocking loop acknowledges a finished task only between two calls of
`drain_events(timeout=2.0)`, and kombu's virtual transport waits out that whole timeout while
every prefetch slot is taken. With late acknowledgement and one slot, each message held its
worker for about two seconds however short its task: a backlog of 1,000 quick nudges took a
worker half an hour. Here a worker whose slots are all taken looks again after `BUSY_POLL_S`.
"""

from __future__ import annotations

import os
from queue import Empty
from typing import Any

from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads


class Channel(filesystem.Channel):
    def _get(self, queue: str) -> Any:
        wanted = f".{queue}.msg"
        taken_folder = self.processed_folder
        for filename in sorted(os.listdir(self.data_folder_in)):
            if not filename.endswith(wanted):
                continue
            taken = os.path.join(taken_folder, filename)
            try:
                os.rename(os.path.join(self.data_folder_in, filename), taken)
            except OSError:
                continue  # taken by another consumer, or the folder is unwritable
            try:
                with open(taken, "rb") as handle:
                    payload = handle.read()
            finally:
                if not self.store_processed:
                    try:
                        os.remove(taken)
                    except OSError:
                        pass
            return loads(bytes_to_str(payload))
        raise Empty()


BUSY_POLL_S = 0.02


class Transport(filesystem.Transport):
    Channel = Channel

    def drain_events(self, connection: Any, timeout: float | None = None) -> Any:
        if timeout and any(not channel.qos.can_consume() for channel in self.channels):
            timeout = min(timeout, BUSY_POLL_S)  # return soon: the finished task's ack waits
        return super().drain_events(connection, timeout=timeout)
