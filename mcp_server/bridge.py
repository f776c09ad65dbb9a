"""Serve an ASGI application (the MCP SDK's Streamable HTTP transport) from WSGI requests.

The web processes are WSGI (gunicorn's sync workers), and the MCP SDK speaks ASGI. Each web
process runs one asyncio event loop on a thread of its own, with the SDK's session manager
inside it. A request's thread hands its request to that loop and then does not merely wait:
it runs, in its own thread, every function the MCP handlers send back to it (`hop`), so the
tools' Django code (the ORM, the tenant scope, the request's database connection) runs exactly
as in any other view, while the SDK does the protocol on the loop. The request ends when the
ASGI application has sent the whole response.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
Context = Any
Hop = Callable[[Callable[[Context], T]], Awaitable[T]]
AsgiHandler = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
# Where a request's scope carries its `hop`.
HOP_KEY = "mnemosyne.hop"


class BridgeTimeout(Exception):
    """The ASGI application did not finish the response in time."""


@dataclass
class AsgiResponse:
    status: int = 500
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the awaiting handler was cancelled meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class AsgiBridge:
    """One event loop thread per process, started on first use (so after gunicorn forks).

    `serving` is an async context manager that yields the ASGI handler and keeps whatever it
    needs running (the SDK's session manager) until the process ends."""

    def __init__(
        self, serving: Callable[[], contextlib.AbstractAsyncContextManager[AsgiHandler]]
    ) -> None:
        self._serving = serving
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handler: AsgiHandler | None = None

    def _started(self) -> tuple[asyncio.AbstractEventLoop, AsgiHandler]:
        with self._lock:
            if self._pid != os.getpid() or self._loop is None or self._handler is None:
                self._start()
            assert self._loop is not None and self._handler is not None  # noqa: S101
            return self._loop, self._handler

    def _start(self) -> None:
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()

        async def serve() -> None:
            try:
                async with self._serving() as handler:
                    self._handler = handler
                    ready.set()
                    await asyncio.Event().wait()  # until the process ends
            except BaseException as error:
                failure.append(error)
                ready.set()
                raise

        def run() -> None:
            asyncio.set_event_loop(loop)
            with contextlib.suppress(BaseException):
                loop.run_until_complete(serve())

        thread = threading.Thread(target=run, name="mcp-asgi-loop", daemon=True)
        thread.start()
        ready.wait(timeout=30)
        if failure or self._handler is None:
            raise RuntimeError("the MCP transport did not start") from (failure or [None])[0]
        self._loop, self._pid = loop, os.getpid()

    def call(
        self,
        scope: dict[str, Any],
        body: bytes,
        *,
        context: Context,
        timeout: float,
    ) -> AsgiResponse:
        """Serve one request; functions the handlers `hop` here are called with `context`."""
        loop, handler = self._started()
        jobs: queue.SimpleQueue[tuple[Callable[[Context], Any], asyncio.Future[Any]] | None] = (
            queue.SimpleQueue()
        )

        async def hop(function: Callable[[Context], T]) -> T:
            result: asyncio.Future[T] = asyncio.get_running_loop().create_future()
            jobs.put((function, result))
            return await result

        response = AsgiResponse()
        future = asyncio.run_coroutine_threadsafe(
            _serve_one(handler, {**scope, HOP_KEY: hop}, body, response), loop
        )
        future.add_done_callback(lambda _: jobs.put(None))
        deadline = time.monotonic() + timeout
        while True:
            try:
                job = jobs.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                future.cancel()
                raise BridgeTimeout(f"no answer within {timeout:g} s") from None
            if job is None:
                break
            function, result = job
            try:
                value = function(context)
            except Exception as error:  # handed to the awaiting handler, which decides
                loop.call_soon_threadsafe(_settle, result, None, error)
            else:
                loop.call_soon_threadsafe(_settle, result, value, None)
        future.result()  # the application's own failure, if any
        return response


async def _serve_one(
    handler: AsgiHandler, scope: dict[str, Any], body: bytes, response: AsgiResponse
) -> None:
    complete = asyncio.Event()
    body_sent = False

    async def receive() -> dict[str, Any]:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await complete.wait()  # nobody hangs up before the answer is whole
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            response.status = message["status"]
            response.headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            response.body += message.get("body", b"")
            if not message.get("more_body", False):
                complete.set()

    await handler(scope, receive, send)
