"""An audit event as a sentence a person reads, in the reader's language.

Facts' events (FactEvent), the tenant's (TenantEvent) and entities' (EntityEvent) keep what
changed as JSON (`before`, `after`). Pages show them through `event_sentence`: a sentence
for the action ("a near-duplicate joined fact #12 (similarity 0.995)") and each other changed
value in words ("trust 0.50 → 0.60"), fact, entity and conflict ids as links. Every action
has a sentence or the generic "<action>: <target>"; every recorded field has a label here;
tests/test_audit_trail.py renders every action in English and Chinese and fails on a raw
field name or an English word left in the Chinese.
"""

from __future__ import annotations

from typing import Any, Protocol

from django.urls import NoReverseMatch
from django.utils.functional import Promise
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from surfaces.base.pages import tenant_url
from surfaces.base.terms import TERMS, term
from tenants.models import Tenant

_SHORT = 80  # a text in a sentence is cut here (the export has it whole)

# Every key a before/after records, in words.
FIELDS: dict[str, Promise] = {
    # facts
    "content": _("text"),
    "kind": _("kind"),
    "scope": _("scope"),
    "category": _("category"),
    "tags": _("tags"),
    "tags_added": _("tags added"),
    "trust_score": _("trust"),
    "status": _("status"),
    "session_id": _("session"),
    "pinned": _("pinned"),
    "helpful": _("helpful"),
    "similarity": _("similarity"),
    "mention_count": _("mentions"),
    "superseded_by": _("superseded by"),
    "reason": _("reason"),
    "conflict": _("conflict"),
    "with": _("with fact"),
    "decision": _("decision"),
    "note": _("note"),
    "bundle": _("bundle"),
    "from_bundle": _("from bundle"),
    "from_tenant": _("from tenant"),
    "content_length": _("text length"),
    "run": _("retention run"),
    "lines": _("lines"),
    "added": _("added"),
    "exists": _("already there"),
    "restored": _("restored"),
    "error": _("errors"),
    "facts": _("facts"),
    "events": _("events"),
    "since": _("since"),
    "until": _("until"),
    "source": _("source"),
    # the tenant
    "name": _("name"),
    "settings": _("settings"),
    "role": _("role"),
    "expires_at": _("expires"),
    "invitation": _("invitation"),
    "scopes": _("rights"),
    "scope_prefix": _("only the scope"),
    "old_secret_valid_until": _("old secret valid until"),
    "filters": _("filters"),
    "action": _("action"),
    "actor": _("actor"),
    "fact_id": _("fact"),
    "type": _("type"),
    "dry_run": _("dry run"),
    "archive": _("to archive"),
    "purge": _("to delete"),
    "legal_hold": _("legal hold"),
    "weight_fts": _("weight of words"),
    "weight_vec": _("weight of meaning"),
    "weight_entity": _("weight of entities"),
    "default_trust": _("trust of a new fact"),
    "min_trust": _("lowest trust recalled"),
    "half_life_days": _("half-life (days)"),
    "token_budget": _("token budget"),
    "prefetch_ttl_s": _("prefetch kept (seconds)"),
    "duplicate_threshold": _("near-duplicate similarity"),
    "conflict_auto_supersede": _("newer statement supersedes at once"),
    "archive_after_days_unretrieved": _("archive when not retrieved for (days)"),
    "archive_below_trust": _("archive below trust"),
    "max_active_facts": _("most active facts"),
    "purge_archived_after_days": _("delete archived after (days)"),
    "run_every_hours": _("run every (hours)"),
    "importance_every_hours": _("importance every (hours)"),
    # entities
    "aliases": _("aliases"),
    "alias": _("alias"),
    "merged": _("merged in"),
    "into": _("merged into"),
    "split": _("split off"),
    "from": _("split from"),
    "relinked_facts": _("facts re-linked"),
    "id": _("id"),
}

_ORDER = {key: n for n, key in enumerate(FIELDS)}


def _order(key: str) -> tuple[int, str]:
    """Fields in the order of FIELDS (the text first), others after them by name."""
    return (_ORDER.get(key, len(_ORDER)), key)


# Values that name a fact, an entity or a conflict: shown as links.
_FACT_KEYS = {"superseded_by", "with", "fact_id"}
_ENTITY_KEYS = {"merged", "into", "split", "from"}
# Values that are codes (a status, a kind, a reason): shown as their term.
_CODE_KEYS = {
    "status", "kind", "category", "reason", "decision", "type", "role", "scopes", "action",
    "source",
}  # fmt: skip


class Event(Protocol):
    action: str
    before: Any
    after: Any


def label(key: str) -> str:
    return str(FIELDS[key]) if key in FIELDS else key


def _url(tenant: Tenant | None, name: str, **kwargs: Any) -> str | None:
    if tenant is None:
        return None
    try:
        return tenant_url(tenant, name, **kwargs)
    except NoReverseMatch:
        return None


def fact_link(tenant: Tenant | None, fact_id: Any) -> SafeString:
    url = _url(tenant, "fact", fact_id=fact_id) if isinstance(fact_id, int) else None
    if url is None:
        return format_html("#{}", fact_id)
    return format_html('<a href="{}">#{}</a>', url, fact_id)


def _entity_link(tenant: Tenant | None, value: Any) -> SafeString:
    ident = value.get("id") if isinstance(value, dict) else value
    name = value.get("name", "") if isinstance(value, dict) else ""
    url = _url(tenant, "entity", entity_id=ident) if isinstance(ident, int) else None
    shown = f"{name} (#{ident})" if name else f"#{ident}"
    if url is None:
        return format_html("{}", shown)
    return format_html('<a href="{}">{}</a>', url, shown)


def _conflict_link(tenant: Tenant | None, conflict_id: Any) -> SafeString:
    url = _url(tenant, "conflicts")
    if url is None:
        return format_html("#{}", conflict_id)
    return format_html('<a href="{}">#{}</a>', url, conflict_id)


def _number(key: str, value: float) -> str:
    if key == "similarity":
        return f"{value:.3f}"
    if key in ("trust_score", "default_trust", "min_trust", "archive_below_trust"):
        return f"{value:.2f}"
    return str(value) if isinstance(value, int) else f"{value:g}"


def value_html(tenant: Tenant | None, key: str, value: Any) -> SafeString:
    """One recorded value in words: codes as terms, ids as links, yes/no, lists joined."""
    if value is None or value == "" or value == []:
        return mark_safe("—")  # noqa: S308 - a constant
    if key in _FACT_KEYS:
        return fact_link(tenant, value)
    if key == "conflict":
        return _conflict_link(tenant, value)
    if key in _ENTITY_KEYS:
        return _entity_link(tenant, value)
    if isinstance(value, bool):
        return format_html("{}", gettext("yes") if value else gettext("no"))
    if isinstance(value, int | float):
        return format_html("{}", _number(key, value))
    if isinstance(value, list):
        return mark_safe(", ".join(str(value_html(tenant, key, v)) for v in value))  # noqa: S308
    if isinstance(value, dict):
        parts = [
            format_html("{} {}", label(k), value_html(tenant, k, v))
            for k, v in sorted(value.items())
            if v not in (None, "", [], {})
        ]
        return mark_safe(_list(parts) or "—")  # noqa: S308 - each part escaped
    text = str(value)
    if text in TERMS and key in _CODE_KEYS:
        return format_html("{}", term(text))
    if key == "content":
        cut = text if len(text) <= _SHORT else text[:_SHORT] + "…"
        return format_html("“{}”", cut)
    return format_html("{}", text)


def changes_html(
    tenant: Tenant | None, before: Any, after: Any, skip: frozenset[str] = frozenset()
) -> list[SafeString]:
    """Each value that changed: "label old → new"; only after: "label new"; only before:
    "label old → —". Nested settings show only their keys that changed."""
    old = before if isinstance(before, dict) else {}
    new = after if isinstance(after, dict) else {}
    skip = skip | {"id"}  # the entity's own id (an entity merged away keeps its state)
    if "alias" in new:
        skip = skip | {"aliases"}  # the alias added or removed says it
    parts: list[SafeString] = []
    for key in sorted(set(old) | set(new), key=_order):
        if key in skip or (key in old and key in new and old[key] == new[key]):
            continue
        if isinstance(old.get(key), dict) and isinstance(new.get(key), dict):
            parts += changes_html(tenant, old[key], new[key])
            continue
        if key in old and key in new:
            parts.append(
                format_html(
                    "{} {} → {}",
                    label(key),
                    value_html(tenant, key, old[key]),
                    value_html(tenant, key, new[key]),
                )
            )
        elif key in new:
            if new[key] in (None, "", [], {}):
                continue
            parts.append(format_html("{} {}", label(key), value_html(tenant, key, new[key])))
        else:
            parts.append(format_html("{} {}", label(key), value_html(tenant, key, old[key])))
    return parts


def _list(parts: list[SafeString]) -> SafeString:
    """Clauses one after another ("; " in English, "；" in Chinese), each already escaped."""
    return mark_safe(conditional_escape(gettext("; ")).join(parts))  # noqa: S308


def _say(message: str, **values: Any) -> SafeString:
    """A sentence (already translated) with its placeholders filled, every value escaped."""
    text = conditional_escape(message)
    return mark_safe(text % {k: conditional_escape(v) for k, v in values.items()})  # noqa: S308


def _join(head: SafeString, parts: list[SafeString]) -> SafeString:
    if not parts:
        return head
    return _say(gettext("%(what)s: %(details)s"), what=head, details=_list(parts))


def _fact_sentence(tenant: Tenant | None, event: Any, old: dict, new: dict) -> SafeString:
    """An audit event of a fact as a sentence, then what changed. One branch per action, each
    with its own sentence to translate: kept in one chain so that the sentences read together."""
    fact = fact_link(tenant, getattr(event, "fact_id", None))
    action = event.action
    skip: set[str] = set()
    head: SafeString
    if action == "create":
        head = _say(gettext("created fact %(fact)s"), fact=fact)
        skip = {"trust_score", "pinned", "session_id", "status"}
        new = {k: v for k, v in new.items() if v not in (None, "", [], False)}
    elif action == "update":
        head = _say(gettext("changed fact %(fact)s"), fact=fact)
    elif action == "remove":
        head = _say(gettext("removed fact %(fact)s"), fact=fact)
        skip = {"status"}
    elif action == "feedback":
        if new.get("helpful"):
            head = _say(gettext("fact %(fact)s marked helpful"), fact=fact)
        else:
            head = _say(gettext("fact %(fact)s marked unhelpful"), fact=fact)
        skip = {"helpful"}
    elif action == "archive":
        head = _say(gettext("archived fact %(fact)s"), fact=fact)
        skip = {"status"}
    elif action == "restore":
        head = _say(gettext("restored fact %(fact)s"), fact=fact)
        skip = {"status"}
    elif action == "purge":
        head = _say(gettext("deleted fact %(fact)s for good"), fact=fact)
    elif action == "supersede" and new.get("superseded_by") is not None:
        head = _say(
            gettext("fact %(fact)s superseded by %(other)s"),
            fact=fact,
            other=fact_link(tenant, new["superseded_by"]),
        )
        skip = {"status", "superseded_by"}
    elif action == "supersede":
        head = _say(gettext("fact %(fact)s superseded"), fact=fact)
    elif action == "join":
        head = _say(
            gettext("a near-duplicate joined fact %(fact)s (similarity %(similarity)s)"),
            fact=fact,
            similarity=value_html(tenant, "similarity", new.get("similarity")),
        )
        skip = {"similarity"}
    elif action == "conflict":
        head = _say(
            gettext("conflict %(conflict)s with fact %(other)s decided (%(decision)s)"),
            conflict=_conflict_link(tenant, new.get("conflict")),
            other=fact_link(tenant, new.get("with")),
            decision=value_html(tenant, "decision", new.get("decision")),
        )
        skip = {"conflict", "with", "decision"}
    elif action == "export":
        head = _say(gettext("exported facts"))
    elif action == "import" and getattr(event, "fact_id", None) is not None:
        head = _say(gettext("imported fact %(fact)s"), fact=fact)
    elif action == "import":
        head = _say(gettext("imported facts"))
    else:
        head = format_html("{} {}", term(action), fact)
    return _join(head, changes_html(tenant, old, new, frozenset(skip)))


def _other_sentence(tenant: Tenant | None, event: Any, old: dict, new: dict) -> SafeString:
    """A tenant's or an entity's event: the action's term, what it touched, what changed."""
    target = getattr(event, "target", "") or ""
    action = event.action
    if action in ("retention_dry_run", "retention_run"):
        if action == "retention_dry_run":
            message = gettext("retention run %(run)s: dry run, nothing changed")
        else:
            message = gettext("retention run %(run)s started by hand")
        head = _say(message, run=new.get("run", "?"))
        return _join(head, changes_html(tenant, old, new, frozenset({"run"})))
    if target.startswith("entity ") and target[7:].isdigit():
        head = format_html("{} {}", term(action), _entity_link(tenant, int(target[7:])))
    elif target.startswith("invitation ") and target[11:].isdigit():
        head = format_html("{}: {} #{}", term(action), label("invitation"), target[11:])
    elif target:
        head = _say(gettext("%(what)s: %(details)s"), what=term(action), details=target)
    else:
        head = format_html("{}", term(action))
    if not target:
        return _join(head, changes_html(tenant, old, new))
    return format_html("{}{}", head, _tail(changes_html(tenant, old, new)))


def _tail(parts: list[SafeString]) -> SafeString:
    if not parts:
        return mark_safe("")  # noqa: S308 - a constant
    return _say(gettext(" (%(details)s)"), details=_list(parts))


def event_sentence(event: Event, tenant: Tenant | None = None, source: str = "") -> SafeString:
    """The event in a sentence, in the active language. `source` is "fact" for a fact's event
    (an AuditEvent says so itself; a FactEvent has a `fact_id`), else a tenant's or entity's."""
    source = (
        source
        or getattr(event, "source", "")
        or ("fact" if hasattr(event, "fact_id") and not hasattr(event, "target") else "other")
    )
    old = event.before if isinstance(event.before, dict) else {}
    new = event.after if isinstance(event.after, dict) else {}
    if source == "fact":
        return _fact_sentence(tenant, event, old, new)
    return _other_sentence(tenant, event, old, new)
