"""The audit chain: verify a tenant's trail, and take and check digests of it.

The database chains every audit row as it is inserted (tenants/migrations/0008_audit_chain.py):
each row of facts_factevent, facts_entityevent and tenants_tenantevent takes its tenant's next
position and chain_hash = sha256(previous hash || sha256(record)), the record being the row as
text with any fact text replaced by "[purged]" and a salted digest of that text beside it. A
purge changes the text and forgets the salt, never the digest: the chain still verifies, and
no one can confirm a guessed text against it.

`audit_chain_verify` walks the chain here, in Python, from the rows as they are now, and
names the first event that does not verify. It uses none of the database's own functions
(only built-in ones, to read each row as text), so an owner who replaced the trigger or its
helpers does not change what it checks. A rewrite that recomputed every later hash verifies
as a chain; a digest taken before (position and hash, kept elsewhere) does not.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection
from django.utils import timezone
from django.utils.translation import gettext as _

from tenants.errors import InvalidInput
from tenants.models import AuditDigest, Tenant
from tenants.scope import tenant_scope

logger = logging.getLogger(__name__)

ZERO = bytes(32)
_FETCH = 2000

# A jsonb value as a purge leaves it: the "content" of an object replaced by "[purged]".
_REDACTED = (
    "CASE WHEN jsonb_typeof({v}) = 'object' AND {v} ? 'content' "
    'THEN {v} || \'{{"content": "[purged]"}}\'::jsonb ELSE {v} END'
)


def _record(table: str, obj: str, target: str, digest: str) -> str:
    """The text a link hashes: the same expression as the database's trigger (tenants 0008)."""
    return (
        f"jsonb_build_array('{table}'::text, e.id, e.tenant_id, e.chain_seq, {obj}, e.action, "
        f"e.actor, {target}, (extract(epoch FROM e.at) * 1000000)::bigint, "
        f"{_REDACTED.format(v='e.before')}, {_REDACTED.format(v='e.after')}, "
        f"encode({digest}, 'hex'))::text"
    )


_WALK = f"""
SELECT * FROM (
  SELECT 'fact' AS source, e.id, e.chain_seq, e.chain_hash,
         {_record("facts_factevent", "e.fact_id", "''::text", "e.content_digest")} AS record,
         e.content_digest, e.content_salt,
         jsonb_build_array(e.before -> 'content', e.after -> 'content')::text AS content,
         (e.before IS NOT DISTINCT FROM {_REDACTED.format(v="e.before")}
          AND e.after IS NOT DISTINCT FROM {_REDACTED.format(v="e.after")}) AS purged_form,
         e.fact_id
    FROM facts_factevent e WHERE e.tenant_id = %(tenant)s
  UNION ALL
  SELECT 'entity', e.id, e.chain_seq, e.chain_hash,
         {_record("facts_entityevent", "e.entity_id", "''::text", "NULL::bytea")},
         NULL::bytea, NULL::bytea, NULL::text, true, NULL::bigint
    FROM facts_entityevent e WHERE e.tenant_id = %(tenant)s
  UNION ALL
  SELECT 'tenant', e.id, e.chain_seq, e.chain_hash,
         {_record("tenants_tenantevent", "NULL::bigint", "e.target", "NULL::bytea")},
         NULL::bytea, NULL::bytea, NULL::text, true, NULL::bigint
    FROM tenants_tenantevent e WHERE e.tenant_id = %(tenant)s
) c ORDER BY c.chain_seq NULLS FIRST, c.source, c.id
"""  # noqa: S608 - constant SQL, the tenant is a parameter

# The position of the last purge of each fact: a text may be taken out only by a purge.
_PURGES = """
SELECT fact_id, max(chain_seq) FROM facts_factevent
 WHERE tenant_id = %s AND action = 'purge' AND fact_id IS NOT NULL GROUP BY fact_id
"""


@dataclass(frozen=True)
class Digest:
    """A tenant's chain at a moment: how many events, and the hash of the last (hex)."""

    count: int
    head: str
    at: datetime | None = None

    def __str__(self) -> str:
        return f"{self.count}:{self.head}"


@dataclass(frozen=True)
class ChainBreak:
    """The first event that does not verify (or the position where one is missing)."""

    position: int
    source: str  # fact | entity | tenant; "" when the event is missing altogether
    event_id: int | None
    reason: str


@dataclass
class ChainReport:
    tenant: str
    count: int = 0  # events walked before the first break (all, when none)
    head: str = ""
    broken: ChainBreak | None = None
    digest: Digest | None = None  # the digest checked, if one was given
    digest_ok: bool | None = None
    digest_problem: str = ""
    _links: dict[int, bytes] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.broken is None and self.digest_ok is not False


def digest_parse(text: str) -> Digest:
    """`COUNT:HEAD` (as `mnemosyne audit verify` and exports print it) or InvalidInput."""
    found = re.fullmatch(r"\s*(\d{1,18}):([0-9a-fA-F]{64})?\s*", text or "")
    if found is None:
        raise InvalidInput("digest", _("a digest is COUNT:HEAD, e.g. 120:9f86d0…(64 hex digits)"))
    count, head = int(found.group(1)), (found.group(2) or "").lower()
    if bool(count) != bool(head):
        raise InvalidInput("digest", _("a digest of an empty chain is 0:, of any other COUNT:HEAD"))
    return Digest(count=count, head=head)


def audit_digest_current(*, tenant: Tenant) -> Digest:
    """The chain's head now (committed events only)."""
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute(
            "SELECT seq, hash FROM tenants_auditchainhead WHERE tenant_id = %s", [tenant.pk]
        )
        row = cursor.fetchone()
    if row is None:
        return Digest(count=0, head="", at=timezone.now())
    return Digest(count=int(row[0]), head=bytes(row[1]).hex(), at=timezone.now())


def audit_digest_take(*, tenant: Tenant, reason: str) -> Digest:
    """Publish the chain's digest: kept in AuditDigest and written to the log."""
    digest = audit_digest_current(tenant=tenant)
    with tenant_scope(tenant):
        AuditDigest.objects.create(
            tenant=tenant,
            count=digest.count,
            head=digest.head,
            at=digest.at or timezone.now(),
            reason=reason,
        )
    logger.info(
        "audit digest tenant=%s count=%d head=%s at=%s reason=%s",
        tenant.slug, digest.count, digest.head or "-", digest.at.isoformat() if digest.at else "",
        reason,
    )  # fmt: skip
    return digest


def audit_digest_last(*, tenant: Tenant) -> AuditDigest | None:
    with tenant_scope(tenant):
        row: AuditDigest | None = (
            AuditDigest.objects.for_tenant(tenant).order_by("-at", "-id").first()
        )
    return row


def _rows(tenant: Tenant) -> Iterator[tuple[Any, ...]]:
    with connection.chunked_cursor() as cursor:
        cursor.execute(_WALK, {"tenant": tenant.pk})
        while batch := cursor.fetchmany(_FETCH):
            yield from batch


def _content_problem(row: tuple[Any, ...], purges: dict[int, int]) -> str:
    """Why a fact event's text does not match its digest ("" when it does)."""
    _source, _id, seq, _hash, _record, digest, salt, content, purged_form, fact_id = row
    if digest is None:
        return ""
    if salt is not None:
        if hashlib.sha256(bytes(salt) + content.encode()).digest() != bytes(digest):
            return _("its fact text was changed")
        return ""
    if not purged_form:
        return _("its fact text was changed after a purge")
    if purges.get(fact_id, 0) <= seq:
        return _("its fact text was taken out, but no purge of the fact follows")
    return ""


def _walk(tenant: Tenant, report: ChainReport, purges: dict[int, int], keep: set[int]) -> None:
    previous, expected = ZERO, 1
    for row in _rows(tenant):
        source, event_id, seq, stored = row[0], row[1], row[2], row[3]
        if seq is None or seq < expected:
            why = _("it has no place in the chain") if seq is None else _("its place is taken")
            report.broken = ChainBreak(expected, source, event_id, why)
            return
        if seq > expected:
            missing = _("the events at positions %(first)d to %(last)d are missing") % {
                "first": expected, "last": seq - 1}  # fmt: skip
            report.broken = ChainBreak(expected, source, event_id, missing)
            return
        link = hashlib.sha256(previous + hashlib.sha256(row[4].encode()).digest()).digest()
        problem = _content_problem(row, purges)
        if not problem and (stored is None or bytes(stored) != link):
            problem = _("it does not match its hash: it was changed, or one before it was")
        if problem:
            report.broken = ChainBreak(seq, source, event_id, problem)
            return
        if seq in keep:
            report._links[seq] = link
        previous, expected = link, expected + 1
        report.count, report.head = seq, link.hex()


def _check_against(report: ChainReport, digest: Digest) -> str:
    """Why the chain does not extend `digest` ("" when it does)."""
    if digest.count == 0:
        return ""
    if digest.count > report.count:
        if report.broken is not None:
            return _("the chain breaks before the digest's position %(n)d") % {"n": digest.count}
        removed = _("the digest names %(n)d events; the chain now holds %(m)d: events were removed")
        return removed % {"n": digest.count, "m": report.count}
    link = report._links.get(digest.count)
    if link is None or link.hex() != digest.head:
        return _("event %(n)d no longer has the digest's hash: the chain was rewritten") % {
            "n": digest.count}  # fmt: skip
    return ""


def audit_chain_verify(*, tenant: Tenant, digest: Digest | None = None) -> ChainReport:
    """Walk the tenant's audit chain from its first event; name the first that does not verify.
    With `digest`, also check that the chain still holds it (nothing before it was rewritten
    or removed). The head row the trigger keeps is checked as one more digest."""
    report = ChainReport(tenant=tenant.slug, digest=digest)
    head = audit_digest_current(tenant=tenant)  # before the walk: the walk sees at least it
    keep = {head.count} | ({digest.count} if digest else set())
    with tenant_scope(tenant):
        with connection.cursor() as cursor:
            cursor.execute(_PURGES, [tenant.pk])
            purges = {int(fact_id): int(seq or 0) for fact_id, seq in cursor.fetchall()}
        _walk(tenant, report, purges, keep)
    if report.broken is None and (problem := _check_against(report, head)):
        report.broken = ChainBreak(head.count, "", None, _("the chain's head row: ") + problem)
    if digest is not None:
        report.digest_problem = _check_against(report, digest)
        report.digest_ok = not report.digest_problem
    return report


def audit_digests_publish() -> int:
    """Beat: publish the digest of every tenant whose chain moved since its last published one
    (an unchanged chain's last digest still holds). Returns how many were published."""
    published = 0
    for tenant in Tenant.objects.order_by("pk"):
        current = audit_digest_current(tenant=tenant)
        last = audit_digest_last(tenant=tenant)
        if current.count and (last is None or (last.count, last.head) != (
                current.count, current.head)):  # fmt: skip
            audit_digest_take(tenant=tenant, reason="schedule")
            published += 1
    return published


def chain_report_data(report: ChainReport) -> dict[str, Any]:
    """The report as the API answers it."""
    broken = report.broken
    return {
        "tenant": report.tenant,
        "ok": report.ok,
        "verified_events": report.count,
        "head": f"{report.count}:{report.head}" if report.head else "0:",
        "first_bad": None if broken is None else {
            "position": broken.position, "source": broken.source or None,
            "id": broken.event_id, "reason": broken.reason,
        },
        "digest": None if report.digest is None else {
            "digest": str(report.digest), "holds": report.digest_ok,
            "problem": report.digest_problem or None,
        },
    }  # fmt: skip
