"""The filesystem broker of a single machine, with its taken messages kept private.

kombu's filesystem transport takes a message by moving its file to the system's temporary
folder (`/tmp`) and reading it there. When the queue folder cannot be written, the move
becomes a copy whose source cannot be removed: every queued message was left in `/tmp`,
readable by anyone, and taken again and again. Here a message is taken by renaming it into
our own `processed` folder (same file system, mode 0700): a rename either happens whole or not
at all, so an unwritable queue leaves the message where it is and nothing elsewhere.

kombu's transport also wrote a message in place: it created the message's file and then wrote
it, so a worker looking at that moment took an empty file, failed to decode it and stopped for
good (seen with two workers and a writer sending a message per fact). Here a message is written
under a name no consumer looks at and renamed into the queue once whole; and a message that still
cannot be decoded (written by something else, damaged on disk) is set aside in the `processed`
folder with a log line naming it, and the worker goes on with the next one. A message file its
sender never finished (stopped between writing and renaming it) is removed by the consumers once
it is ten minutes old.

Celery's blocking loop acknowledges a finished task only between two calls of
`drain_events(timeout=2.0)`, and kombu's virtual transport waits out that whole timeout while
every prefetch slot is taken. With late acknowledgement and one slot, each message held its
worker for about two seconds however short its task: a backlog of 1,000 quick nudges took a
worker half an hour. Here a worker whose slots are all taken looks again after `BUSY_POLL_S`.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

# What a message is set aside as when it cannot be decoded (in the processed folder).
UNREADABLE = ".unreadable"
# A message being written (`Channel._put`) has a name starting with this until it is whole.
WRITING = ".writing-"
# How old such a file is when a consumer removes it: its sender was stopped before renaming it
# (killed, or the disk full). Writing a message takes milliseconds.
WRITING_ABANDONED_S = 600


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        # kombu's name (its clock first, so messages are taken in about the order sent); the
        # file is written whole under a name without `.msg` (kombu's purge and size look for
        # `.QUEUE.msg` anywhere in a name), then renamed: a consumer sees all of it or nothing.
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        folder = self.data_folder_out
        writing = os.path.join(folder, f"{WRITING}{uuid.uuid4().hex}")
        try:
            with open(writing, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.rename(writing, os.path.join(folder, name))
        except OSError as exc:
            try:
                os.remove(writing)
            except OSError:
                pass
            raise ChannelError(f"Cannot add a message to {folder!r}: {exc}") from exc

    def _get(self, queue: str) -> Any:
        wanted = f".{queue}.msg"
        taken_folder = self.processed_folder
        for filename in sorted(os.listdir(self.data_folder_in)):
            if filename.startswith(WRITING):
                _remove_if_abandoned(os.path.join(self.data_folder_in, filename))
                continue
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
                message = loads(bytes_to_str(payload))
            except ValueError:  # not JSON (UnicodeDecodeError is a ValueError too)
                logger.error(
                    "broker: message %s of queue %s cannot be decoded (%d bytes); set aside as "
                    "%s%s",
                    filename, queue, len(payload), taken, UNREADABLE,
                )  # fmt: skip
                try:
                    os.rename(taken, taken + UNREADABLE)
                except OSError:
                    pass
                continue
            finally:
                if not self.store_processed:
                    try:
                        os.remove(taken)
                    except OSError:
                        pass
            return message
        raise Empty()


def _remove_if_abandoned(path: str) -> None:
    """Remove a message file its sender never finished (WRITING_ABANDONED_S old), logging it."""
    try:
        age = time.time() - os.stat(path).st_mtime
        if age < WRITING_ABANDONED_S:
            return
        os.remove(path)
    except OSError:
        return  # renamed into the queue meanwhile, or removed by another consumer
    logger.warning("broker: removed %s, a message its sender left unfinished %.0f s ago", path, age)


BUSY_POLL_S = 0.02


class Transport(filesystem.Transport):
    Channel = Channel

    def drain_events(self, connection: Any, timeout: float | None = None) -> Any:
        if timeout and any(not channel.qos.can_consume() for channel in self.channels):
            timeout = min(timeout, BUSY_POLL_S)  # return soon: the finished task's ack waits
        return super().drain_events(connection, timeout=timeout)
