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
from tenants.errors import InvalidInput, NotFound
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
    # Where recall reads when a call names no scope, if not `scope` alone (a Hermes profile's
    # read_scopes: e.g. its user's scope and its team's), each inside the key's scope limit.
    read_scopes: tuple[str, ...] = ()
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


def scopes_of(binding: Binding, given: Any, field: str = "scopes") -> list[str]:
    """Several scopes a call reads, each inside the key's scope limit (one outside is refused,
    never read)."""
    if not isinstance(given, list | tuple) or not all(isinstance(s, str) for s in given):
        raise InvalidInput(field, "must be a list of scope paths like user:alice")
    try:
        scopes = [clean_scope(s) for s in given]
    except InvalidInput as problem:
        raise InvalidInput(field, problem.message) from None
    for scope in scopes:
        if not scope_within(scope, binding.limit):
            raise InvalidInput(
                field, f"{scope!r} is outside this API key's scope {binding.limit!r}"
            )
    return scopes


def read_scopes_of(binding: Binding) -> tuple[str, ...]:
    """The binding's read scopes, each inside the key's scope limit (else InvalidInput)."""
    if not binding.read_scopes:
        return ()
    return tuple(scopes_of(binding, list(binding.read_scopes), "read_scopes"))


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
    """Hybrid recall in the given scope or scopes (else the binding's read scopes, else its
    scope): the fields of a RecallQuery; those given as None are left to their defaults."""
    query = {name: value for name, value in query.items() if value is not None}
    if query.get("scopes"):
        query["scopes"] = scopes_of(binding, query["scopes"])
    elif query.get("scope") or not binding.read_scopes:
        query.pop("scopes", None)
        query["scope"] = scope_of(binding, query.get("scope"))
    else:
        query["scopes"] = list(read_scopes_of(binding))
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
