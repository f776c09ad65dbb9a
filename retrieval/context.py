"""Context assembly: the block of memories an agent reads before a turn, within a token budget.

Three levels, deduplicated across them:
1. hot restore (first turn of a resumed session): the last turns of that session, in order;
2. the tenant's most important facts (importance, then trust, then helpful feedback);
3. the query's hybrid recall results above the relevance floor (retrieval.floor).

A fact in an open conflict is shown with the other side beside it, both dated and the newer
first, so the agent can tell which statement is newer; a resolved conflict leaves only the fact
that stands (a superseded fact is no longer active, so nothing shows it).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypedDict

from django.conf import settings
from django.core.cache import caches
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from facts.models import Conflict, ConflictStatus, Fact, Kind, Status
from indexing.tokens import count_tokens
from observability.metrics import context_observe
from retrieval.inputs import recall_query
from retrieval.latency import recall_latency_note
from retrieval.search import recall_search
from tenants.errors import InvalidInput
from tenants.jobs import job_send
from tenants.models import Tenant
from tenants.scope import current_scope_limit, scope_path, scope_q, scopes_q, tenant_scope

logger = logging.getLogger(__name__)

HOT_RESTORE_TURNS = 10
IMPORTANT_FACTS = 20
RECALL_RESULTS = 20
# Shares of the budget levels 1 and 2 may take at most; recall gets the rest.
HOT_SHARE, IMPORTANT_SHARE = 0.4, 0.25


@dataclass
class ContextBlock:
    text: str
    tokens: int
    levels: dict[str, list[int]] = field(default_factory=dict)
    # Milliseconds: "total", and recall's own ("recall", "embed_query") when it ran.
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def fact_ids(self) -> list[int]:
        return [i for ids in self.levels.values() for i in ids]


def _turn_line(fact: Fact) -> str:
    said = fact.content
    if fact.speaker and not said.startswith(f"{fact.speaker}:"):
        said = f"{fact.speaker}: {said}"
    return f"[{fact.created_at:%Y-%m-%d}] {said}"


def _fact_line(fact: Fact) -> str:
    if fact.kind == Kind.TURN:
        return f"- {_turn_line(fact)}"
    return f"- {fact.content}" + (f" ({fact.category})" if fact.category != "general" else "")


def _dated(fact: Fact) -> str:
    return f"[{fact.created_at:%Y-%m-%d}] {fact.content}"


def _disputed_line(fact: Fact, others: list[Fact]) -> str:
    group = sorted([fact, *others], key=lambda f: (f.created_at, f.pk), reverse=True)
    return "- Unresolved conflict, newest first: " + " | ".join(_dated(f) for f in group)


def _disputes(
    tenant: Tenant, facts: QuerySet[Fact], shown: list[Fact], open_conflicts: bool | None
) -> dict[int, list[Fact]]:
    """The other sides of the open conflicts of the facts in `shown`, among `facts` (active,
    within the reader's scope): one query for the pairs, one for the facts not at hand; none
    when the caller knows the tenant has no open conflict (`open_conflicts` False)."""
    ids = {f.pk for f in shown if f.kind == Kind.FACT}
    if not ids or open_conflicts is False:
        return {}
    pairs = list(
        Conflict.objects.for_tenant(tenant)
        .filter(status=ConflictStatus.OPEN)
        .filter(Q(fact_a_id__in=ids) | Q(fact_b_id__in=ids))
        .values_list("fact_a_id", "fact_b_id")
    )
    if not pairs:
        return {}
    at_hand = {f.pk: f for f in shown}
    wanted = {i for pair in pairs for i in pair} - set(at_hand)
    if wanted:
        at_hand.update((f.pk, f) for f in facts.filter(pk__in=wanted, kind=Kind.FACT))
    others: dict[int, list[Fact]] = {}
    for a, b in pairs:
        if a in at_hand and b in at_hand:  # the other side may be outside the reader's scope
            others.setdefault(a, []).append(at_hand[b])
            others.setdefault(b, []).append(at_hand[a])
    return others


class _Budget:
    def __init__(self, total: int, disputes: dict[int, list[Fact]] | None = None) -> None:
        self.left = total
        self.used = 0
        self.disputes = disputes or {}
        self.shown: set[int] = set()  # ids shown so far, the other sides of disputes too

    def take(
        self,
        lines: list[str],
        header: str,
        facts: list[Fact],
        limit: int,
        line_of: Callable[[Fact], str] = _fact_line,
    ) -> list[int]:
        """Add whole lines while they fit both the level's limit and what is left."""
        cost = count_tokens(header) + 1
        if not facts or cost > min(limit, self.left):
            return []
        kept: list[int] = []
        section = [header]
        for fact in facts:
            if fact.pk in self.shown:
                continue
            others = [f for f in self.disputes.get(fact.pk, ()) if f.pk not in self.shown]
            line = _disputed_line(fact, others) if others else line_of(fact)
            line_cost = count_tokens(line) + 1
            if cost + line_cost > min(limit, self.left):
                break
            section.append(line)
            kept.extend([fact.pk, *(f.pk for f in others)])
            self.shown.update(kept)
            cost += line_cost
        if kept:
            lines.extend(section)
            self.left -= cost
            self.used += cost
        return kept


def _budget_total(tenant: Tenant, budget: int | None) -> int:
    """The block's budget in tokens: the tenant's setting unless the caller names one."""
    total = tenant.setting("token_budget") if budget is None else budget
    if isinstance(total, bool) or not isinstance(total, int) or not 50 <= total <= 32000:
        raise InvalidInput("budget", "must be a whole number of tokens from 50 to 32000")
    return total


def _readable(tenant: Tenant, prefix: str, scopes: tuple[str, ...]) -> QuerySet[Fact]:
    """The active facts and turns the reader may see: within `scopes`, or below `prefix`."""
    facts = Fact.objects.for_tenant(tenant).filter(status=Status.ACTIVE)
    facts = facts.filter(scopes_q(scopes) if scopes else scope_q(prefix))
    return facts.defer("search_vector")


def _recent_turns(facts: QuerySet[Fact], session_id: str) -> list[Fact]:
    """Level 1: the session's last turns, oldest first."""
    turns = facts.filter(kind=Kind.TURN, session_id=session_id).order_by("-position")
    return list(turns[:HOT_RESTORE_TURNS])[::-1]


def _important_facts(tenant: Tenant, facts: QuerySet[Fact], seen: set[int]) -> list[Fact]:
    """Level 2: the most important facts trusted enough, except those the reader has seen."""
    trusted = facts.filter(kind=Kind.FACT, trust_score__gte=tenant.setting("min_trust"))
    ranked = trusted.order_by("-importance", "-trust_score", "-helpful_count", "-created_at")
    return [f for f in ranked[:IMPORTANT_FACTS] if f.pk not in seen]


def _relevant_facts(
    tenant: Tenant,
    query: str,
    where: dict[str, object],
    seen: set[int],
    timings: dict[str, float],
) -> list[Fact]:
    """Level 3: the query's recall hits above the relevance floor, except those the reader has
    seen; recall's timings go into `timings`. `where`: the recall query's scope or scopes."""
    hits = recall_search(
        tenant=tenant, query=recall_query({"query": query, "k": RECALL_RESULTS} | where)
    )
    timings["recall"] = hits.timings_ms["total"]
    if "embed_query" in hits.timings_ms:
        timings["embed_query"] = hits.timings_ms["embed_query"]
    # Only memories above the relevance floor (retrieval.floor): small talk, or a question
    # about what the tenant never heard of, gets nothing rather than the best of whatever is
    # there.
    return [h.fact for h in hits.hits if not h.weak and h.fact.pk not in seen]


@dataclass
class _Gathered:
    """What each level may show before the budget is applied; None: the level is not asked
    for (it is then left out of the block's levels, not given an empty list)."""

    recent: list[Fact] | None
    important: list[Fact] | None
    relevant: list[Fact] | None

    def facts(self) -> list[Fact]:
        """The facts whose open conflicts the block shows beside them."""
        return [*(self.important or []), *(self.relevant or [])]


def _assemble(
    room: _Budget, gathered: _Gathered, total: int
) -> tuple[list[str], dict[str, list[int]]]:
    """The block's lines and the ids each level shows, level by level within `room`."""
    lines: list[str] = []
    levels: dict[str, list[int]] = {}
    if gathered.recent is not None:
        levels["recent"] = room.take(
            lines, "## Recent conversation", gathered.recent, int(total * HOT_SHARE), _turn_line
        )
    if gathered.important is not None:
        share = total if gathered.relevant is None else int(total * IMPORTANT_SHARE)
        levels["important"] = room.take(lines, "## Known facts", gathered.important, share)
    if gathered.relevant is not None:
        levels["relevant"] = room.take(lines, "## Relevant memories", gathered.relevant, room.left)
    return lines, levels


def context_build(
    *,
    tenant: Tenant,
    query: str | None = None,
    scope: str | None = None,
    session_id: str | None = None,
    hot_restore: bool = False,
    important: bool = True,
    budget: int | None = None,
    exclude: Iterable[int] = (),
    scopes: tuple[str, ...] = (),
    open_conflicts: bool | None = None,
) -> ContextBlock:
    """`exclude`: ids the reader has already been shown (e.g. the facts of a system prompt).
    `scopes`: several scopes read together, instead of `scope`. `open_conflicts`: whether the
    tenant has any open conflict, when the caller knows (None: look)."""
    started = time.perf_counter()
    timings: dict[str, float] = {}
    total = _budget_total(tenant, budget)
    seen: set[int] = set(exclude)
    prefix = scope_path(scope)
    where: dict[str, object] = {"scopes": list(scopes)} if scopes else {"scope": prefix}
    with tenant_scope(tenant):
        facts = _readable(tenant, prefix, scopes)
        gathered = _Gathered(
            recent=_recent_turns(facts, session_id) if hot_restore and session_id else None,
            important=_important_facts(tenant, facts, seen) if important else None,
            relevant=_relevant_facts(tenant, query, where, seen, timings) if query else None,
        )
        room = _Budget(total, _disputes(tenant, facts, gathered.facts(), open_conflicts))
        room.shown.update(seen)
        lines, levels = _assemble(room, gathered, total)
    timings["total"] = (time.perf_counter() - started) * 1000
    return ContextBlock(text="\n".join(lines), tokens=room.used, levels=levels, timings_ms=timings)


def _generation(tenant_id: int) -> tuple[str, bool]:
    """What changes with every audited write to the tenant (the newest audit event's id) and
    with every conflict raised (the newest open conflict and how many are open, as a conflict
    found by the check writes no event until it is decided), in one round trip; and whether
    any conflict is open (if none, a block asks nothing about conflicts)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT coalesce(max(id), 0) FROM facts_factevent WHERE tenant_id = %s), "
            "count(c.id), coalesce(max(c.id), 0) FROM facts_conflict c "
            "WHERE c.tenant_id = %s AND c.status = 'open'",
            [tenant_id, tenant_id],
        )
        events, open_count, newest_open = cursor.fetchone()
    return f"{events}.{open_count}.{newest_open}", open_count > 0


class _ContextArguments(TypedDict):
    """context_build's arguments besides the tenant: what a cached block is keyed by."""

    query: str | None
    scope: str | None
    session_id: str | None
    hot_restore: bool
    important: bool
    budget: int | None
    exclude: tuple[int, ...]
    scopes: tuple[str, ...]


def context_cached(
    *,
    tenant: Tenant,
    query: str | None = None,
    scope: str | None = None,
    session_id: str | None = None,
    hot_restore: bool = False,
    important: bool = True,
    budget: int | None = None,
    exclude: Iterable[int] = (),
    scopes: tuple[str, ...] = (),
) -> ContextBlock:
    """context_build, cached per (tenant, scope, query, ...) for the tenant's prefetch TTL.

    The key carries the tenant's write generation, so any write to the tenant (from any
    process) makes the old entries unreachable at once, and the tenant's effective settings, so
    a changed weight or budget (or a caller's per-profile override) never reads another's block.
    """
    started = time.perf_counter()
    ttl = int(tenant.setting("prefetch_ttl_s"))
    arguments = _ContextArguments(
        query=query,
        scope=scope,
        session_id=session_id,
        hot_restore=hot_restore,
        important=important,
        budget=budget,
        exclude=tuple(sorted(set(exclude))),
        scopes=tuple(scopes),
    )
    # A key limited to a scope prefix sees less: its blocks are its own.
    limit = current_scope_limit()
    if ttl <= 0:
        block = context_build(tenant=tenant, **arguments)
        recall_latency_note(tenant=tenant, ms=(time.perf_counter() - started) * 1000)
        context_observe(cache="off", seconds=time.perf_counter() - started)
        return block
    with tenant_scope(tenant) as tenant_id:
        generation, open_conflicts = _generation(tenant_id)
        keyed = [
            *sorted(arguments.items()),
            *sorted(tenant.effective_settings.items()),
            ("scope_limit", limit),
        ]
        digest = hashlib.sha256(repr(keyed).encode()).hexdigest()[:32]
        key = f"mnemosyne:{tenant_id}:context:{generation}:{digest}"
        block = caches["blocks"].get(key)
        hit = block is not None
        if block is None:
            block = context_build(tenant=tenant, open_conflicts=open_conflicts, **arguments)
            caches["blocks"].set(key, block, ttl)
    retrievals_record(tenant=tenant, fact_ids=block.fact_ids)
    # What the agent waited for, cache hits included (the dashboard's latency chart).
    recall_latency_note(tenant=tenant, ms=(time.perf_counter() - started) * 1000)
    context_observe(cache="hit" if hit else "miss", seconds=time.perf_counter() - started)
    return block


_counted_lock = threading.Lock()
_counted: dict[int, Counter[int]] = {}  # tenant id -> fact id -> times shown, not yet sent
_counted_since: float | None = None


def retrievals_record(*, tenant: Tenant, fact_ids: list[int]) -> None:
    """Count what agents were shown, off the read path. Each process adds up the facts it
    served and, at most every MNEMOSYNE_RETRIEVAL_FLUSH_SECONDS, sends one task per tenant that
    does the UPDATE (a message and an UPDATE per recall cost the worker and the database more
    than the recall's own queries). A process that dies loses its last interval's counts."""
    global _counted_since
    if not fact_ids:
        return
    now = time.monotonic()
    with _counted_lock:
        _counted.setdefault(tenant.pk, Counter()).update(fact_ids)
        if _counted_since is None:
            _counted_since = now
        if now - _counted_since < settings.MNEMOSYNE_RETRIEVAL_FLUSH_SECONDS:
            return
        batches = {tenant_id: sorted(counts.items()) for tenant_id, counts in _counted.items()}
        _counted.clear()
        _counted_since = now
    at = timezone.now().isoformat()

    def send() -> None:
        for tenant_id, counts in batches.items():
            ids, times = [i for i, _ in counts], [n for _, n in counts]
            try:
                job_send("facts.tasks.facts_record_retrievals", tenant_id, ids, at, times)
            except Exception:  # noqa: BLE001 - a broker outage must not fail recall; count lost
                logger.warning("tenant %s: retrieval counts not sent", tenant_id, exc_info=True)

    # After commit, like every task: at once in autocommit (a request), never for a
    # transaction that rolls back (nor for a test's, which would leave messages queued).
    transaction.on_commit(send)
