"""Input errors in the caller's language.

Services raise `InvalidInput(field, message)` with an English message, often with values in it
(an f-string). `localized` gives the message in the active language (the request's, through
LocaleMiddleware): a message without values is looked up as it is; one with values is matched
against TEMPLATES, the same sentence with each value written as %(name)s, and its translation
gets the values back. tests/test_error_language.py reads every `InvalidInput(...)` in the code
and fails when a message has no translation, so a new message cannot be forgotten here.
"""

from __future__ import annotations

import re
from functools import cache

from django.conf import settings
from django.utils.translation import gettext
from django.utils.translation import gettext_noop as _noop

# Messages without values (listed so that makemessages keeps them in the catalogue).
PLAIN: tuple[str, ...] = (
    _noop("a purge needs a reason for the audit trail"),
    _noop("the tenant is under legal hold: lift the hold before deleting it"),
    _noop("the tenant is under legal hold: nothing is purged until it is lifted"),
    _noop("a revoked or expired key cannot be rotated"),
    _noop("a turn belongs to a session"),
    _noop("an entity cannot be merged into itself"),
    _noop("another entity is already called this"),
    _noop("another fact in this scope says the same"),
    _noop("at least one of the fusion weights must be above 0"),
    _noop("each tag is at most 64 characters"),
    _noop("give content, category, tags, scope or trust_delta"),
    _noop("give what changes: content, scope, category or tags"),
    _noop("give what changes: content, scope, category, tags or pin"),
    _noop("give content, category, tags, scope, trust_delta or pin"),
    _noop("must be a whole number of hours from 1 to 720"),
    _noop("nothing to update: give content, category, tags, scope, trust_delta or pin"),
    _noop("send the bundle as application/x-tar"),
    _noop("must be a list of [speaker, text] pairs"),
    _noop("must be a list of texts"),
    _noop("must be an ISO 8601 date and time"),
    _noop("is longer than 200 characters"),
    _noop("is longer than 255 characters"),
    _noop("is nested too deeply"),
    _noop("is not a cursor this list gave out"),
    _noop("is not an e-mail address"),
    _noop("is required"),
    _noop("is required for this action"),
    _noop("is required: helpful or unhelpful"),
    _noop("is required: true or false"),
    _noop("must be 1 or 2"),
    _noop("must be 1-100 characters"),
    _noop("must be 1-200 characters"),
    _noop("must be 1-64 characters"),
    _noop("must be JSON"),
    _noop("must be a JSON object"),
    _noop("must be a JSON object, one fact per line"),
    _noop("must be a finite number"),
    _noop("must be a list of names"),
    _noop("must be a list of text"),
    _noop("must be a list of text (or comma-separated text)"),
    _noop("must be a non-empty list of names"),
    _noop("must be a non-empty name"),
    _noop("must be a number from 0 to 1"),
    _noop("must be a number or null"),
    _noop("must be a whole number from 0 to 2147483647"),
    _noop("must be a whole number of tokens from 50 to 32000"),
    _noop("must be an ISO 8601 time, e.g. 2026-01-31T09:30:00Z"),
    _noop("must be an object of setting: value"),
    _noop("must be between 0 and 720 hours"),
    _noop("must be fact ids"),
    _noop("must be in the future"),
    _noop("must be non-empty text"),
    _noop("must be text like user:alice/project:beta"),
    _noop("must be text of at most 1000 characters"),
    _noop("must be true (helpful) or false (unhelpful)"),
    _noop("must name at least one entity"),
    _noop("must not be empty"),
    _noop("name at least one field to change"),
    _noop("no active user has this name"),
    _noop("no facts: send one JSON object per line"),
    _noop("nothing to change: give name or type"),
    _noop("nothing to update: give content, category, tags, scope or trust_delta"),
    _noop("select at least one fact"),
    _noop("that session already has a turn there"),
    _noop(
        "this person belongs to other tenants too (or is staff): a superuser resets their password"
    ),
    _noop("this username is taken"),
    _noop("unknown retention field"),
    _noop("use 1-150 letters, digits and @ . + - _"),
    _noop("use 1-63 lowercase letters, digits and inner hyphens"),
    _noop("is not a field of this import"),
    _noop("send memory_store, memory_md or user_md"),
    _noop("is not a holographic memory_store.db"),
    _noop("must be a list of [speaker, text] pairs"),
    _noop("must be a list of texts"),
    _noop("must be an ISO 8601 date and time"),
    _noop("an entity is always its own alias"),
    _noop("give scope or scopes, not both"),
    _noop("needs a scope or scopes"),
    _noop("must be later than since"),
    _noop("must be a list of scope paths like user:alice"),
    _noop("must be an object of field: value"),
    _noop("must be an ISO 8601 time or a span like 7d"),
    _noop("field names must be non-empty text"),
    _noop("must be an ISO 8601 time (2026-12-01T09:00:00Z) or a span like 7d"),
    _noop("reaches back too far"),
)

# Messages with values, each value as %(name)s.
TEMPLATES: tuple[str, ...] = (
    _noop(
        "%(entity)s (entity %(id)s) already answers to this name; merge the two entities instead"
    ),
    _noop("%(entity)s has no alias %(alias)s"),
    _noop(
        "%(user)s is the last admin of %(tenant)s and cannot be made an auditor: "
        "make another member an admin first"
    ),
    _noop(
        "%(user)s is the last admin of %(tenant)s and cannot be removed: "
        "make another member an admin first"
    ),
    _noop("a dictionary holds at most %(limit)s terms"),
    _noop("a tenant named %(slug)s exists already"),
    _noop("an entity has at most %(limit)s aliases"),
    _noop("at most %(limit)s facts at once"),
    _noop("at most %(limit)s lines per import; split the file"),
    _noop("at most %(limit)s names"),
    _noop("at most %(limit)s tags"),
    _noop("choose from %(choices)s"),
    _noop("conflict %(id)s was decided already"),
    _noop("fact %(id)s is %(status)s: nothing to supersede"),
    _noop("fact %(id)s is %(status)s; cannot %(action)s it"),
    _noop("fact %(id)s not found"),
    _noop("has a key that %(problem)s"),
    _noop("is larger than %(size)s KiB"),
    _noop("is longer than %(limit)s characters"),
    _noop("is nested deeper than %(limit)s levels"),
    _noop("is not JSON (%(error)s)"),
    _noop("is not an argument of %(tool)s (it takes %(known)s)"),
    _noop("is outside this API key's scope %(scope)s"),
    _noop("%(path)s is outside this API key's scope %(scope)s"),
    _noop("may name at most %(count)s scopes"),
    _noop("may hold at most %(count)s fields"),
    _noop("%(name)s: must be text, a number, true, false or null"),
    _noop("a scope is longer than %(limit)s characters"),
    _noop("is required: one of %(choices)s"),
    _noop("must be a number between %(low)s and %(high)s, or null"),
    _noop("must be a whole number between %(low)s and %(high)s, or null"),
    _noop("must be a whole number from 1 to %(high)s"),
    _noop("must be between %(low)s and %(high)s"),
    _noop("must be from %(low)s to %(high)s"),
    _noop("must be one of %(choices)s"),
    _noop("must be one of %(codes)s, or empty for the browser's"),
    _noop("must be text of at most %(limit)s characters"),
    _noop("no entity is called %(name)s"),
    _noop("no holographic store at %(path)s"),
    _noop("%(path)s is not a holographic store (%(error)s)"),
    _noop("not a tar of a bundle (%(error)s)"),
    _noop("record of fact %(id)s lacks %(field)s"),
    _noop("refused, nothing imported: %(error)s"),
    _noop("the tar lacks %(missing)s"),
    _noop("unexpected member %(name)s in the tar"),
    _noop(
        "segment %(segment)s is not type:name (e.g. user:alice/project:beta; the type is "
        "lowercase letters, digits, _ or -; the name has no spaces, '/' or ':')"
    ),
    _noop("type the tenant's short name, %(slug)s, to delete it"),
    _noop("unknown field (known: %(known)s)"),
    _noop("unknown setting (known: %(known)s)"),
    _noop("is larger than %(size)s MiB"),
)


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each template as a pattern; the one with the most fixed text is tried first."""
    found = []
    for template in TEMPLATES:
        parts = re.split(r"%\((\w+)\)s", template)
        fixed = parts[0::2]
        pattern = "".join(
            re.escape(part) if index % 2 == 0 else f"(?P<{part}>.+?)"
            for index, part in enumerate(parts)
        )
        found.append((sum(map(len, fixed)), template, re.compile(pattern, re.DOTALL)))
    found.sort(key=lambda item: -item[0])
    return tuple((template, pattern) for _, template, pattern in found)


def localized(message: str) -> str:
    """`message` in the active language; as it is when there is no translation (or no Django)."""
    if not settings.configured:
        return message
    translated = gettext(message)
    if translated != message:
        return translated
    for template, pattern in _patterns():
        match = pattern.fullmatch(message)
        if match:
            return gettext(template) % match.groupdict()
    return message
