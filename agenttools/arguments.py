"""The MCP tools' arguments, parsed once into typed values; a bad one raises InvalidInput naming
it. The reading of each argument is `facts.inputs.ToolArguments`, shared with the Hermes agent
tools, and every limit is `agentspec.limits`' (the tools' schemas state the same ones); the
values a fact may hold are checked by `facts.inputs` when the tool stores them.

Models send numbers as text ("5") or as 5.0 now and then: both are taken. Everything else
that the tool's JSON schema does not allow is refused with the argument's name, so a model can
correct itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentspec.limits import (
    CATEGORIES,
    KINDS,
    MAX_BUDGET,
    MAX_CONTENT_CHARS,
    MAX_CURSOR_CHARS,
    MAX_K,
    MAX_QUERY_CHARS,
    MAX_SCOPE_CHARS,
    MIN_BUDGET,
)
from agentspec.mcp import ToolSpec
from facts.inputs import ToolArguments, clean_entity_name
from tenants.errors import InvalidInput


class Arguments(ToolArguments):
    """One call's arguments, read by name; names the tool does not take are refused up front."""

    def __init__(self, spec: ToolSpec, raw: Any) -> None:
        super().__init__(raw, known=spec.properties, tool=spec.name)


# -- one typed value per tool --------------------------------------------------------------------


@dataclass(frozen=True)
class SearchArgs:
    query: str
    scope: str | None
    kind: str | None
    k: int
    category: str | None
    min_trust: float | None


@dataclass(frozen=True)
class ContextArgs:
    task: str | None
    scope: str | None
    budget: int | None


@dataclass(frozen=True)
class EntityArgs:
    entity: str
    scope: str | None
    kind: str | None
    limit: int


@dataclass(frozen=True)
class RecentArgs:
    scope: str | None
    kind: str
    category: str | None
    limit: int
    cursor: str | None


@dataclass(frozen=True)
class StoreArgs:
    content: str
    scope: str | None
    category: str | None
    tags: list[str] | None
    pinned: bool = False


@dataclass(frozen=True)
class FeedbackArgs:
    fact_id: int
    helpful: bool


@dataclass(frozen=True)
class UpdateArgs:
    fact_id: int
    changes: dict[str, Any]  # content, scope, category, tags, pinned: only those given


@dataclass(frozen=True)
class FactIdArgs:
    fact_id: int


def fact_id(args: Arguments) -> int:
    return args.fact_id()


def search_args(args: Arguments) -> SearchArgs:
    return SearchArgs(
        query=args.text("query", limit=MAX_QUERY_CHARS, required=True) or "",
        scope=args.text("scope", limit=MAX_SCOPE_CHARS),
        kind=args.choice("kind", list(KINDS)),
        k=args.whole("k", low=1, high=MAX_K, default=10),
        category=args.choice("category", list(CATEGORIES)),
        min_trust=args.number("min_trust", low=0.0, high=1.0),
    )


def context_args(args: Arguments) -> ContextArgs:
    return ContextArgs(
        task=args.text("task", limit=MAX_QUERY_CHARS),
        scope=args.text("scope", limit=MAX_SCOPE_CHARS),
        budget=args.optional_whole("budget", low=MIN_BUDGET, high=MAX_BUDGET),
    )


def entity_args(args: Arguments) -> EntityArgs:
    return EntityArgs(
        entity=clean_entity_name("entity", args.text("entity", required=True)),
        scope=args.text("scope", limit=MAX_SCOPE_CHARS),
        kind=args.choice("kind", list(KINDS)),
        limit=args.whole("limit", low=1, high=MAX_K, default=10),
    )


def recent_args(args: Arguments) -> RecentArgs:
    return RecentArgs(
        scope=args.text("scope", limit=MAX_SCOPE_CHARS),
        kind=args.choice("kind", list(KINDS)) or "fact",
        category=args.choice("category", list(CATEGORIES)),
        limit=args.whole("limit", low=1, high=MAX_K, default=20),
        cursor=args.text("cursor", limit=MAX_CURSOR_CHARS),
    )


def store_args(args: Arguments) -> StoreArgs:
    return StoreArgs(
        content=args.text("content", limit=MAX_CONTENT_CHARS, required=True) or "",
        scope=args.text("scope", limit=MAX_SCOPE_CHARS),
        category=args.choice("category", list(CATEGORIES)),
        tags=args.tags("tags"),
        pinned=args.flag("pin") if args.has("pin") else False,
    )


def feedback_args(args: Arguments) -> FeedbackArgs:
    return FeedbackArgs(fact_id=fact_id(args), helpful=args.flag("helpful"))


def update_args(args: Arguments) -> UpdateArgs:
    ident = fact_id(args)
    changes: dict[str, Any] = {}
    if args.has("content"):
        changes["content"] = args.text("content", limit=MAX_CONTENT_CHARS, required=True)
    if args.has("scope"):
        changes["scope"] = args.text("scope", limit=MAX_SCOPE_CHARS) or ""
    if args.has("category"):
        changes["category"] = args.choice("category", list(CATEGORIES))
    if args.has("tags"):
        changes["tags"] = args.tags("tags")
    if args.has("pin"):
        changes["pinned"] = args.flag("pin")
    if not changes:
        raise InvalidInput("content", "give what changes: content, scope, category, tags or pin")
    return UpdateArgs(fact_id=ident, changes=changes)


def remove_args(args: Arguments) -> FactIdArgs:
    return FactIdArgs(fact_id=fact_id(args))
