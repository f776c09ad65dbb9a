"""Stored codes in the reader's language: kinds, categories, statuses, entity types, context
levels, conflict states, audit actions, roles and key rights. The models keep plain codes (and
English labels); every page and form shows them through `term` and `term_choices`, and the test
suite fails when a code has no Chinese."""

from __future__ import annotations

from collections.abc import Iterable

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

TERMS: dict[str, Promise] = {
    # kinds, categories
    "fact": _("fact"),
    "turn": _("turn"),
    "user_pref": _("user preference"),
    "project": _("project"),
    "tool": _("tool"),
    "general": _("general"),
    # statuses
    "active": _("active"),
    "archived": _("archived"),
    "superseded": _("superseded"),
    "removed": _("removed"),
    # entity types
    "person": _("person"),
    "place": _("place"),
    "organization": _("organization"),
    "product": _("product"),
    "other": _("other"),
    # context levels, conflicts
    "recent": _("recent conversation"),
    "important": _("known facts"),
    "relevant": _("relevant memories"),
    "open": _("open"),
    "resolved": _("resolved"),
    # what a fact's audit event records
    "create": _("created"),
    "update": _("changed"),
    "remove": _("removed"),
    "feedback": _("feedback"),
    "archive": _("archived"),
    "restore": _("restored"),
    "purge": _("purged"),
    "supersede": _("superseded"),
    "export": _("exported"),
    "import": _("imported"),
    "join": _("joined by a near-duplicate"),
    "conflict": _("conflict decided"),
    # what a tenant's audit event records
    "tenant_create": _("tenant created"),
    "tenant_rename": _("tenant renamed"),
    "tenant_delete": _("tenant deleted"),
    "settings_update": _("settings changed"),
    "member_set": _("member added or role changed"),
    "member_remove": _("member removed"),
    "member_invite": _("member invited"),
    "invite_accept": _("invitation accepted"),
    "invite_revoke": _("invitation withdrawn"),
    "password_reset_link": _("password reset link made"),
    "apikey_create": _("API key created"),
    "apikey_revoke": _("API key revoked"),
    "apikey_rotate": _("API key rotated"),
    "retention_update": _("retention policy changed"),
    "retention_dry_run": _("retention dry run"),
    "retention_run": _("retention run started by hand"),
    "audit_export": _("audit log exported"),
    "facts_export": _("facts exported"),
    # why two facts conflict, and what was decided
    "negation": _("one denies the other"),
    "opposite": _("opposite words"),
    "number": _("another number"),
    "date": _("another date or time"),
    "value": _("another value"),
    "keep_both": _("both kept"),
    # why a fact was archived or superseded (the audit log)
    "unretrieved": _("not retrieved for long"),
    "low_trust": _("low trust"),
    "over_limit": _("over the most active facts"),
    "duplicate": _("a duplicate"),
    "dismiss": _("dismissed"),
    # re-link jobs
    "queued": _("queued"),
    "running": _("running"),
    "done": _("done"),
    "failed": _("failed"),
    # an entity's history
    "rename": _("renamed"),
    "retype": _("type changed"),
    "alias_add": _("alias added"),
    "alias_remove": _("alias removed"),
    "merge": _("merged another entity in"),
    "merged": _("merged into another entity"),
    "split": _("alias split off"),
    "split_from": _("made from a split alias"),
    "alias_dismiss": _("alias suggestion dismissed"),
    # entity curation and the user dictionary in the tenant's audit log
    "dictionary_add": _("dictionary term added"),
    "dictionary_change": _("dictionary term changed"),
    "dictionary_remove": _("dictionary term removed"),
    "entity_rename": _("entity renamed"),
    "entity_retype": _("entity type changed"),
    "entity_alias_add": _("entity alias added"),
    "entity_alias_remove": _("entity alias removed"),
    "entity_merge": _("entities merged"),
    "entity_split": _("entity alias split off"),
    "entity_alias_dismiss": _("entity alias suggestion dismissed"),
    # a recall result's factors
    "trust": _("trust"),
    "decay": _("decay"),
    "neighbour": _("neighbouring turns"),
    "session": _("session"),
    "speaker": _("speaker"),
    # roles, key rights
    "admin": _("admin"),
    "auditor": _("auditor"),
    "read": _("read"),
    "write": _("write"),
}


def term(code: str) -> str:
    """The code in the active language (the code itself when it is not one of ours)."""
    return str(TERMS.get(code, code))


def term_choices(codes: Iterable[str]) -> list[tuple[str, Promise | str]]:
    """Form choices for stored codes, labelled in the reader's language."""
    return [(code, TERMS.get(code, code)) for code in codes]
