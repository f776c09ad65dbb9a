"""The MCP server: the SDK's low-level `Server` with Mnemosyne's tools, resources and prompt,
served over the SDK's Streamable HTTP transport (stateless, JSON responses).

Every handler is a thin coroutine that hands the real work (`agenttools.mcp`, synchronous
Django code) to the web request's own thread through the bridge's `hop`, where the request's
API key is bound. The SDK parses and answers the protocol; nothing here knows the key.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

import mcp.types as types
from django.db import InterfaceError, OperationalError
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import McpError

from agentspec import mcp as catalog
from agentspec.mcp import ToolSpec
from agenttools import mcp as tools
from mcp_server.bridge import HOP_KEY, AsgiHandler
from tenants.errors import NotFound

T = TypeVar("T")
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for a resource that is not there


def _version() -> str:
    try:
        return version("mnemosyne")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "0"


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        inputSchema=spec.input_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            readOnlyHint=spec.need == "read",
            destructiveHint=spec.destructive,
            idempotentHint=spec.idempotent,
            openWorldHint=False,
        ),
    )


def _json_text(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, default=str)


KNOWN_FACTS = types.Resource(
    uri=catalog.KNOWN_FACTS_URI,  # type: ignore[arg-type]
    name="known-facts",
    title="Known facts",
    description="The team's most important facts, each with its fact id: what an agent should "
    "know before it starts.",
    mimeType="text/markdown",
)
FACT_TEMPLATE = types.ResourceTemplate(
    uriTemplate=catalog.FACT_URI_TEMPLATE,
    name="fact",
    title="A fact by id",
    description="One memory with its metadata (trust, feedback, author, times).",
    mimeType="application/json",
)
USE_MEMORY = types.Prompt(
    name=catalog.PROMPT_NAME,
    title="Use the team's memory",
    description="How to use Mnemosyne's memory tools well, optionally for a task.",
    arguments=[
        types.PromptArgument(name="task", description="What you are about to do", required=False)
    ],
)

InRequest = Callable[[Callable[[tools.Binding], T]], Awaitable[T]]


def _in_request(server: Server[Any, Any]) -> InRequest[Any]:
    """`await in_request(work)` runs `work` with the caller's binding in the web request's
    thread; a database outage is a protocol error saying so."""

    async def in_request(work: Callable[[tools.Binding], T]) -> T:
        request = server.request_context.request
        hop = request.scope[HOP_KEY] if request is not None else None
        if hop is None:  # pragma: no cover - only ever served through the bridge
            raise McpError(types.ErrorData(code=types.INTERNAL_ERROR, message="no caller"))

        def bound(binding: tools.Binding | None) -> T:
            if binding is None:  # the key could not be checked: the database is down
                raise tools.StoreUnavailable
            return work(binding)

        try:
            return await hop(bound)
        except (OperationalError, InterfaceError, tools.StoreUnavailable):
            raise McpError(
                types.ErrorData(code=types.INTERNAL_ERROR, message=tools.UNAVAILABLE)
            ) from None

    return in_request


def _serve_tools(server: Server[Any, Any], in_request: InRequest[Any]) -> None:
    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [_tool(spec) for spec in await in_request(tools.tools_for)]

    async def call_tool(request: types.CallToolRequest) -> types.ServerResult:
        name, arguments = request.params.name, request.params.arguments
        try:
            outcome = await in_request(lambda binding: tools.tool_call(binding, name, arguments))
        except McpError as failure:  # an agent gets a tool error it can read, not a protocol one
            outcome = tools.Outcome({"error": failure.error.message}, is_error=True)
        return types.ServerResult(
            types.CallToolResult(
                content=[types.TextContent(type="text", text=_json_text(outcome.payload))],
                structuredContent=None if outcome.is_error else outcome.payload,
                isError=outcome.is_error,
            )
        )

    # Registered without the SDK's decorator, whose extras do not fit: its tool cache, shared
    # by every key, lists the tools again before a call, and its schema check does not name
    # the argument (agenttools.arguments does).
    server.request_handlers[types.CallToolRequest] = call_tool


def _not_found(message: str) -> McpError:
    return McpError(types.ErrorData(code=RESOURCE_NOT_FOUND, message=message))


def _serve_resources(server: Server[Any, Any], in_request: InRequest[Any]) -> None:
    @server.list_resources()
    async def list_resources() -> list[types.Resource]:
        return [KNOWN_FACTS]

    @server.list_resource_templates()
    async def list_resource_templates() -> list[types.ResourceTemplate]:
        return [FACT_TEMPLATE]

    @server.read_resource()
    async def read_resource(uri: Any) -> list[ReadResourceContents]:
        address = str(uri)
        if address == catalog.KNOWN_FACTS_URI:
            document = await in_request(tools.known_facts)
        elif address.startswith(catalog.FACT_URI_PREFIX):
            ident = address.removeprefix(catalog.FACT_URI_PREFIX)
            try:
                document = await in_request(lambda binding: tools.fact_document(binding, ident))
            except NotFound as missing:
                raise _not_found(str(missing)) from None
        else:
            raise _not_found(f"no resource {address}")
        return [ReadResourceContents(content=document.text, mime_type=document.mime_type)]


def _serve_prompt(server: Server[Any, Any], in_request: InRequest[Any]) -> None:
    @server.list_prompts()
    async def list_prompts() -> list[types.Prompt]:
        return [USE_MEMORY]

    @server.get_prompt()
    async def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        if name != catalog.PROMPT_NAME:
            raise McpError(
                types.ErrorData(code=types.INVALID_PARAMS, message=f"no prompt named {name!r}")
            )
        task = ((arguments or {}).get("task") or "").strip() or None
        text = await in_request(lambda binding: tools.prompt_text(binding, task))
        return types.GetPromptResult(
            description="How to use the team's memory",
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
            ],
        )


def build_server() -> Server[Any, Any]:
    """The SDK's server with Mnemosyne's tools, resources and prompt."""
    server: Server[Any, Any] = Server(
        catalog.SERVER_NAME, version=_version(), instructions=catalog.INSTRUCTIONS
    )
    in_request = _in_request(server)
    _serve_tools(server, in_request)
    _serve_resources(server, in_request)
    _serve_prompt(server, in_request)
    return server


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[AsgiHandler]:
    """The SDK's Streamable HTTP transport, stateless with JSON answers: every POST stands
    alone (any web process can answer it), and one response body answers it."""
    manager = StreamableHTTPSessionManager(app=build_server(), json_response=True, stateless=True)
    async with manager.run():
        yield manager.handle_request
