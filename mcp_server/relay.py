"""`mnemosyne mcp --url URL`: Mnemosyne as an MCP server on stdio, for MCP clients that start
their servers as subprocesses (Claude Code, Cursor, Codex, Zed, ...).

It holds no data and no database credentials and loads neither Django nor a model: every
request is relayed to the server's `/mcp` endpoint over HTTP with the MCP SDK's own client and
the tenant's API key (`MNEMOSYNE_API_KEY`), so the tools, their checks and the tenant's
isolation live on the server alone. One client session to the server is kept open (HTTP
keep-alive) and opened again after a failure. A server that is down, slow or refusing the key
gives the calling agent a tool error (`{"error": ...}`) within `--timeout` seconds, never a hang.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import httpx
import mcp.types as types
from anyio.abc import TaskStatus
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import McpError

from agentspec import mcp as catalog
from agentspec.mcp import KEY_VARIABLE

T = TypeVar("T")
DEFAULT_TIMEOUT = 15.0


def _version() -> str:
    try:
        return version("mnemosyne")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "0"


class Unreachable(Exception):
    """The server could not answer this request (down, slow, or refusing the key)."""


def _leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _http_problem(response: httpx.Response) -> str:
    try:
        message = str(response.json().get("message") or "")
    except (ValueError, AttributeError):
        message = response.text[:200].strip()
    status = response.status_code
    if status == 401:
        return f"the API key in {KEY_VARIABLE} is unknown or revoked (HTTP 401)"
    if status == 429:
        wait = response.headers.get("Retry-After")
        return "too many requests for this API key" + (
            f"; retry in {wait} s" if wait else ""
        ) + " (HTTP 429)"  # fmt: skip
    return f"HTTP {status}" + (f": {message}" if message else "")


class _Recorder(httpx.AsyncBaseTransport):
    """Keeps why the last exchange with the server failed. The SDK's client turns a failed
    POST into a closed session, which is all a waiting request gets to see; this says why."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.problem: str | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self.inner.handle_async_request(request)
        except httpx.TimeoutException:
            self.problem = "the server did not answer in time"
            raise
        except httpx.TransportError as error:
            self.problem = f"cannot connect ({error or type(error).__name__}); is it running?"
            raise
        if response.status_code >= 400:
            await response.aread()
            self.problem = _http_problem(response)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class Upstream:
    """The client session to the server's /mcp: opened on first use by `run` (the task that
    owns it, as the SDK's context managers require), dropped after any failure."""

    def __init__(
        self, url: str, key: str, timeout: float, verify: ssl.SSLContext | bool = True
    ) -> None:
        self.url = url
        self.key = key
        self.timeout = timeout
        self.verify = verify
        self._session: ClientSession | None = None
        self._recorder: _Recorder | None = None
        self._failure: str | None = None
        self._lock = anyio.Lock()
        self._wanted = anyio.Event()
        self._attempt = anyio.Event()
        self._drop = anyio.Event()
        self._ended = anyio.Event()  # set when the current session is gone

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._wanted.wait()
            self._wanted = anyio.Event()
            attempt, drop, ended = self._attempt, anyio.Event(), anyio.Event()
            self._drop, self._ended = drop, ended
            recorder = self._recorder = _Recorder(httpx.AsyncHTTPTransport(verify=self.verify))
            try:
                await self._connect(recorder, attempt, drop)
            except TimeoutError:
                self._failure = f"no answer within {self.timeout:g} s"
            except Exception as error:  # noqa: BLE001 - every failure becomes the reason given
                leaf = _leaf(error)
                self._failure = recorder.problem or f"{type(leaf).__name__}: {leaf}"
            finally:
                self._session = None
                attempt.set()
                ended.set()

    async def _connect(self, recorder: _Recorder, attempt: anyio.Event, drop: anyio.Event) -> None:
        headers = {
            "Authorization": f"Bearer {self.key}",
            "User-Agent": f"mnemosyne-mcp/{_version()}",
        }
        # httpx waits a little longer than a request may take, so the request's own timeout
        # is the one that speaks.
        limit = httpx.Timeout(self.timeout + 5)
        async with (
            httpx.AsyncClient(transport=recorder, headers=headers, timeout=limit) as http,
            streamable_http_client(self.url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            with anyio.fail_after(self.timeout):
                await session.initialize()
            self._session, self._failure = session, None
            attempt.set()
            await drop.wait()

    async def _connected(self) -> tuple[ClientSession, anyio.Event]:
        async with self._lock:
            if self._session is None:
                attempt = self._attempt = anyio.Event()
                self._wanted.set()
                await attempt.wait()
            if self._session is None:
                raise Unreachable(self._failure or "the connection failed")
            return self._session, self._ended

    def _forget(self) -> None:
        self._session = None
        self._drop.set()

    async def call(self, request: Callable[[ClientSession], Awaitable[T]]) -> T:
        """One request to the server; Unreachable, saying why, when it cannot answer."""
        try:
            with anyio.fail_after(self.timeout):
                session, ended = await self._connected()
                return await _unless(ended, request(session))
        except McpError as error:
            if error.error.code != types.CONNECTION_CLOSED:
                raise  # the server's own answer (e.g. a resource that is not there)
            problem = self._problem() or "the connection to the server closed"
        except _SessionEnded:
            problem = self._problem() or self._failure or "the connection to the server closed"
        except TimeoutError:
            problem = f"no answer within {self.timeout:g} s"
        except Unreachable as error:
            problem = str(error)
        except (httpx.HTTPError, OSError) as error:
            problem = self._problem() or f"{type(error).__name__}: {error}"
        self._forget()
        raise Unreachable(f"Mnemosyne at {self.url}: {problem}")

    def _problem(self) -> str | None:
        return self._recorder.problem if self._recorder is not None else None


class _SessionEnded(Exception):
    pass


async def _unless(ended: anyio.Event, work: Awaitable[T]) -> T:
    """`work`'s result, or _SessionEnded as soon as the session it waits on is gone. (A
    session that fails in the middle of a request does not always wake the request.)"""
    outcome: list[tuple[bool, Any]] = []
    async with anyio.create_task_group() as tasks:

        async def do() -> None:
            try:
                outcome.append((True, await work))
            except Exception as error:  # noqa: BLE001 - raised again below, unwrapped
                outcome.append((False, error))
            tasks.cancel_scope.cancel()

        async def watch() -> None:
            await ended.wait()
            tasks.cancel_scope.cancel()

        tasks.start_soon(do)
        tasks.start_soon(watch)
    if not outcome:
        raise _SessionEnded
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    return value


# Every request the relay answers, with the result type the server answers it with.
FORWARDED: dict[type, type] = {
    types.ListToolsRequest: types.ListToolsResult,
    types.CallToolRequest: types.CallToolResult,
    types.ListResourcesRequest: types.ListResourcesResult,
    types.ListResourceTemplatesRequest: types.ListResourceTemplatesResult,
    types.ReadResourceRequest: types.ReadResourceResult,
    types.ListPromptsRequest: types.ListPromptsResult,
    types.GetPromptRequest: types.GetPromptResult,
}


def build_relay(upstream: Upstream) -> Server[Any, Any]:
    """A server whose every request is the server's: sent on as it came (arguments, cursors),
    answered with what came back. Only a failure to reach the server is the relay's own: a
    tool error for a tool call, a JSON-RPC error for the rest."""
    relay: Server[Any, Any] = Server(
        catalog.SERVER_NAME, version=_version(), instructions=catalog.INSTRUCTIONS
    )

    def forward(result_type: type) -> Callable[[Any], Awaitable[types.ServerResult]]:
        async def handler(request: Any) -> types.ServerResult:
            # Method and parameters only: the client's JSON-RPC id is not the server's.
            same = type(request)(method=request.method, params=request.params)
            onward = types.ClientRequest(same)
            try:
                result = await upstream.call(
                    lambda session: session.send_request(onward, result_type)
                )
            except Unreachable as error:
                if result_type is not types.CallToolResult:
                    raise McpError(
                        types.ErrorData(code=types.INTERNAL_ERROR, message=str(error))
                    ) from None
                text = json.dumps({"error": str(error)}, ensure_ascii=False)
                result = types.CallToolResult(
                    content=[types.TextContent(type="text", text=text)], isError=True
                )
            return types.ServerResult(result)

        return handler

    # Registered as the SDK's decorators do, minus their extras (a tool cache that lists the
    # tools again before a call, argument checks): the server does both.
    for request_type, result_type in FORWARDED.items():
        relay.request_handlers[request_type] = forward(result_type)
    return relay


async def serve(url: str, key: str, timeout: float, verify: ssl.SSLContext | bool) -> None:
    upstream = Upstream(url, key, timeout, verify)
    relay = build_relay(upstream)
    async with anyio.create_task_group() as tasks:
        await tasks.start(upstream.run)
        async with stdio_server() as (read, write):
            await relay.run(read, write, relay.create_initialization_options())
        tasks.cancel_scope.cancel()


def endpoint(url: str) -> str:
    """The server's MCP endpoint: the URL as given when it ends in /mcp, else URL + /mcp."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"--url must be http(s)://host[:port], not {url!r}")
    path = parts.path.rstrip("/")
    if not path.endswith("/mcp"):
        path += "/mcp"
    return f"{parts.scheme}://{parts.netloc}{path}"


def main(
    argv: list[str], parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> int:
    """`mnemosyne mcp` (no Django). `parser_class`: the command line's parser (the `mnemosyne`
    command's makes errors one line)."""
    parser = parser_class(
        prog="mnemosyne mcp",
        description="Serve Mnemosyne's MCP tools on stdio, relayed to a Mnemosyne server. "
        f"The tenant's API key is read from {KEY_VARIABLE}.",
    )
    parser.add_argument(
        "--url", required=True, help="the Mnemosyne server, e.g. https://memory.example.com"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds a request may take before the agent gets an error "
        f"(default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--ca-file", help="CA certificates (PEM) that sign the server's TLS certificate"
    )
    options = parser.parse_args(argv)
    key = os.environ.get(KEY_VARIABLE, "").strip()
    if not key:
        print(
            f"mnemosyne mcp: set {KEY_VARIABLE} to an API key of the tenant (mnm_...)",
            file=sys.stderr,
        )
        return 2
    try:
        url = endpoint(options.url)
    except ValueError as error:
        print(f"mnemosyne mcp: {error}", file=sys.stderr)
        return 2
    if not 0 < options.timeout <= 600:
        print("mnemosyne mcp: --timeout must be from 0 to 600 seconds", file=sys.stderr)
        return 2
    verify: ssl.SSLContext | bool = True
    if options.ca_file:
        try:
            verify = ssl.create_default_context(cafile=options.ca_file)
        except (OSError, ssl.SSLError) as error:
            print(f"mnemosyne mcp: --ca-file {options.ca_file}: {error}", file=sys.stderr)
            return 2
    print(f"mnemosyne mcp: relaying to {url}", file=sys.stderr)
    anyio.run(serve, url, key, options.timeout, verify)
    return 0
