"""The agent-tool core: who calls (`Binding`), what a key may do, and the operations every
agent surface offers, written once. The tools' definitions are `agentspec`'s; the adapters
(`agenttools.hermes` for the Hermes plugin's `fact_store` / `fact_feedback` over the REST agent
endpoints, `agenttools.mcp` for MCP over HTTP and stdio) only parse their arguments, call these
functions and shape the answer their clients expect.

The tenant, the author of every change and the scope limit come from the API key, never from an
argument. Another tenant's fact, or one outside the key's scope, is "not found" exactly like a
missing one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from facts.inputs import clean_scope
from facts.models import Fact
from facts.selectors.facts import fact_get
from retrieval.inputs import recall_query
from retrieval.search import RecallResult, recall_search
from tenants.actors import Actor
from tenants.errors import NotFound
from tenants.inputs import scope_outside
from tenants.models import ApiKey, Tenant
from tenants.scope import scope_within

READ, WRITE = "read", "write"


class Refused(Exception):
    """A well-formed call this key may not make (e.g. a read-only key writes)."""


@dataclass(frozen=True)
class Binding:
    """Who calls: fixed by the request's API key, never by an argument."""

    tenant: Tenant  # with a Hermes profile's setting overrides applied (never saved)
    actor: Actor
    rights: frozenset[str]  # "read", "write"
    scope: str = ""  # where calls read and write by default ("" is the whole tenant)
    # The key's scope prefix, when it differs from `scope` (a Hermes profile's scope may lie
    # inside it).
    scope_limit: str | None = None
    session_id: str = ""  # a Hermes profile's session, for the turns it stores
    key_prefix: str = ""

    @property
    def limit(self) -> str:
        """The key's scope prefix: nothing outside it is seen or written."""
        return self.scope if self.scope_limit is None else self.scope_limit

    @classmethod
    def of_key(cls, key: ApiKey, **given: Any) -> Binding:
        limit = key_scope_prefix(key)
        return cls(
            tenant=given.pop("tenant", key.tenant),
            actor=Actor.api_key(key),
            rights=given.pop("rights", frozenset(r for r in key.scopes if r in (READ, WRITE))),
            scope=given.pop("scope", limit),
            scope_limit=limit,
            key_prefix=key.prefix,
            **given,
        )

    def may(self, need: str) -> bool:
        return need in self.rights


def key_scope_prefix(key: ApiKey) -> str:
    """The scope prefix a key is restricted to ("" when it is not restricted)."""
    return clean_scope(key.scope_prefix or "")


def scope_of(binding: Binding, given: str | None) -> str:
    """The scope a call reads or writes: the one given (inside the key's), else the binding's."""
    scope = clean_scope(given) if given else ""
    if not scope:
        return binding.scope
    if not scope_within(scope, binding.limit):
        raise scope_outside(binding.limit)
    return scope


def visible(binding: Binding, fact_id: int) -> Fact:
    """The fact, if this key may see it; otherwise NotFound, as for a missing one."""
    fact = fact_get(tenant=binding.tenant, fact_id=fact_id)
    if not scope_within(fact.scope, binding.limit):
        raise NotFound("fact", fact_id)
    return fact


def results(rows: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """The answer of every tool that lists memories: {"results": [...], "count": n, ...}."""
    return {"results": rows, "count": len(rows), **extra}


# -- reading --------------------------------------------------------------------------------------


def recall(binding: Binding, **query: Any) -> RecallResult:
    """Hybrid recall in the given scope (else the binding's): the fields of a RecallQuery."""
    query["scope"] = scope_of(binding, query.get("scope"))
    return recall_search(tenant=binding.tenant, query=recall_query(query))


def entity_recall(
    binding: Binding,
    selector: Callable[..., list[Any]],
    *,
    name: str,
    limit: int,
    fallback: bool,
    **filters: Any,
) -> tuple[list[Any], str]:
    """What `selector` (a graph selector of facts.graph) finds about the entity `name`, with
    how it was matched: "entity", or "text" when no such entity is known and `fallback` asks for
    what the words find instead (as Hermes' holographic provider does)."""
    scope = scope_of(binding, filters.pop("scope", None))
    hits = selector(tenant=binding.tenant, name=name, limit=limit, scope=scope or None, **filters)
    if hits or not fallback:
        return hits, "entity"
    return recall(binding, query=name, k=limit, scope=scope, **filters).hits, "text"
