"""The agent tools' arguments, parsed once into typed values; a bad one raises InvalidInput
naming it. `ToolArguments` reads each argument, for the Hermes tools and the MCP tools alike;
every limit is `agentspec.limits`' (the tools' schemas state the same ones); the values a fact
may hold are checked by `facts.inputs` when the tool stores them.

Models send numbers as text ("5") or as 5.0 now and then: both are taken. Everything else
that the tool's JSON schema does not allow is refused with the argument's name, so a model can
correct itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentspec.limits import (
    CATEGORIES,
    KINDS,
    MAX_BUDGET,
    MAX_CONTENT_CHARS,
    MAX_CURSOR_CHARS,
    MAX_ID,
    MAX_K,
    MAX_QUERY_CHARS,
    MAX_SCOPE_CHARS,
    MAX_SCOPES,
    MAX_TIME_CHARS,
    MIN_BUDGET,
)
from agentspec.mcp import ToolSpec
from facts.inputs import clean_entity_name
from tenants.errors import InvalidInput
from tenants.validation import check_choice


class ToolArguments:
    """One tool call's arguments, read by name into typed values. Models send numbers as text
    ("5") or as 5.0 now and then: both are taken. With `known`, other names are refused up
    front."""

    def __init__(
        self,
        raw: Any,
        *,
        known: Iterable[str] | None = None,
        tool: str = "",
        required: str = "is required",
    ) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise InvalidInput("arguments", "must be a JSON object")
        if known is not None:
            names = list(known)
            unknown = sorted(set(raw) - set(names))
            if unknown:
                listed = ", ".join(names) or "none"
                raise InvalidInput(unknown[0], f"is not an argument of {tool} (it takes {listed})")
        self.raw = raw
        self._required = required

    def given(self, name: str) -> Any:
        value = self.raw.get(name)
        return None if value is None or (isinstance(value, str) and not value.strip()) else value

    def has(self, name: str) -> bool:
        return name in self.raw and self.raw[name] is not None

    def required(self, name: str) -> InvalidInput:
        return InvalidInput(name, self._required)

    def text(self, name: str, *, limit: int | None = None, required: bool = False) -> str | None:
        value = self.given(name)
        if value is None:
            if required:
                raise self.required(name)
            return None
        if not isinstance(value, str):
            raise InvalidInput(name, "must be text")
        if limit is not None and len(value) > limit:
            raise InvalidInput(name, f"is longer than {limit} characters")
        return value.strip()

    def whole(self, name: str, *, low: int, high: int, default: int | None = None) -> int:
        value = self.given(name)
        if value is None:
            if default is None:
                raise self.required(name)
            return default
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInput(name, "must be a whole number")
        if not low <= value <= high:
            raise InvalidInput(name, f"must be from {low} to {high}")
        return value

    def optional_whole(self, name: str, *, low: int, high: int) -> int | None:
        if self.given(name) is None:
            return None
        return self.whole(name, low=low, high=high)

    def number(self, name: str, *, low: float, high: float) -> float | None:
        value = self.given(name)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise InvalidInput(name, "must be a number") from None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise InvalidInput(name, "must be a number")
        if not low <= value <= high:
            raise InvalidInput(name, f"must be from {low:g} to {high:g}")
        return float(value)

    def flag(self, name: str) -> bool:
        value = self.raw.get(name)
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise InvalidInput(name, "is required: true or false")
        return value

    def scopes(self, name: str) -> list[str] | None:
        """Scope paths, as a list or as "a, b" from a model that forgot it is a list."""
        value = self.given(name)
        if value is None:
            return None
        if isinstance(value, str):
            value = value.split(",")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidInput(name, "must be a list of scope paths like user:alice")
        if len(value) > MAX_SCOPES:
            raise InvalidInput(name, f"may name at most {MAX_SCOPES} scopes")
        if any(len(v) > MAX_SCOPE_CHARS for v in value):
            raise InvalidInput(name, f"a scope is longer than {MAX_SCOPE_CHARS} characters")
        return [v.strip() for v in value if v.strip()] or None

    def fields(self, name: str) -> dict[str, Any] | None:
        """An object of field: value (checked further by the parser that uses it)."""
        value = self.raw.get(name)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise InvalidInput(name, "must be an object of field: value")
        return value

    def optional_flag(self, name: str) -> bool | None:
        return self.flag(name) if self.has(name) else None

    def choice(self, name: str, allowed: list[str]) -> str | None:
        value = check_choice(name, self.given(name), allowed)
        return None if value is None else str(value)

    def tags(self, name: str) -> list[str] | None:
        value = self.raw.get(name)
        if value is None:
            return None
        if isinstance(value, str):  # "a, b" from a model that forgot it is a list
            value = value.split(",")
        if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
            raise InvalidInput(name, "must be a list of text")
        return value

    def names(self, name: str) -> list[str]:
        value = self.given(name)
        if isinstance(value, str):
            value = [part for part in value.split(",")]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidInput(name, "must be a list of names")
        names = [v.strip() for v in value if v.strip()]
        if not names:
            raise InvalidInput(name, "must name at least one entity")
        return names

    def fact_id(self) -> int:
        return self.whole("fact_id", low=1, high=MAX_ID)


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
    filters: dict[str, Any]  # scopes, scope_exact, metadata, since, until: those given


@dataclass(frozen=True)
class ContextArgs:
    task: str | None
    scope: str | None
    budget: int | None
    scopes: list[str] | None = None


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
        filters=recall_filters(args),
    )


def recall_filters(args: ToolArguments) -> dict[str, Any]:
    """The recall filters a tool call gives (scopes, scope_exact, metadata, since, until), by
    the names of `retrieval.inputs.recall_query`, which checks their values."""
    given = {
        "scopes": args.scopes("scopes"),
        "scope_exact": args.optional_flag("scope_exact"),
        "metadata": args.fields("metadata"),
        "since": args.text("since", limit=MAX_TIME_CHARS),
        "until": args.text("until", limit=MAX_TIME_CHARS),
    }
    return {name: value for name, value in given.items() if value is not None}


def context_args(args: Arguments) -> ContextArgs:
    return ContextArgs(
        task=args.text("task", limit=MAX_QUERY_CHARS),
        scope=args.text("scope", limit=MAX_SCOPE_CHARS),
        budget=args.optional_whole("budget", low=MIN_BUDGET, high=MAX_BUDGET),
        scopes=args.scopes("scopes"),
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
