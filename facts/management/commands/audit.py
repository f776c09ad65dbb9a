"""`mnemosyne audit verify|digest` (docs/audit-chain.md).

Nothing of the models is imported at the top: `--help` and argument errors answer before
Django's set-up (memoryadmin/cli.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

if TYPE_CHECKING:
    from facts.audit_chain import ChainReport


def _events(n: int) -> str:
    return f"{n} event" if n == 1 else f"{n} events"


def _report_lines(report: ChainReport) -> list[str]:
    lines = []
    if report.broken is None:
        lines.append(f"{report.tenant}: the audit chain verifies: {_events(report.count)}")
        lines.append(f"head: {report.count}:{report.head}")
    else:
        where = (
            f"{report.broken.source} event {report.broken.event_id}"
            if report.broken.event_id is not None
            else "the chain's head"
        )
        lines.append(
            f"{report.tenant}: the audit chain does not verify at position "
            f"{report.broken.position} ({where}): {report.broken.reason}"
        )
        lines.append(f"verified before it: {_events(report.count)}")
    if report.digest is not None:
        if report.digest_ok:
            lines.append(f"digest {report.digest}: holds")
        else:
            lines.append(f"digest {report.digest}: does not hold: {report.digest_problem}")
    return lines


class Command(BaseCommand):
    help = (
        "The tenant's tamper-evident audit chain: `audit verify TENANT [--digest COUNT:HEAD]` "
        "walks it and names the first event that does not verify, and checks a digest kept "
        "from before (exit 1 if anything fails); `audit digest TENANT` publishes a digest now "
        "(to the log and the digest table) and prints it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="verify|digest")
        verify = actions.add_parser(
            "verify",
            help="verify the chain (and a digest)",
            description="Walk the tenant's audit chain and name the first event that does not "
            "verify; with --digest, also check that the chain still holds a digest taken before. "
            "Exit 1 if either fails.",
        )
        verify.add_argument("tenant", help="the tenant's slug")
        verify.add_argument(
            "--digest", default=None, help="a digest taken before, COUNT:HEAD, to check"
        )
        digest = actions.add_parser(
            "digest",
            help="publish and print the chain's digest",
            description="Publish the tenant's audit chain digest now (log and digest table) "
            "and print it: COUNT:HEAD and the time.",
        )
        digest.add_argument("tenant", help="the tenant's slug")

    def handle(self, *args: Any, action: str, tenant: str, **options: Any) -> None:
        from facts.audit_chain import audit_chain_verify, audit_digest_take, digest_parse
        from tenants.errors import InvalidInput, NotFound
        from tenants.selectors import tenant_get

        try:
            found = tenant_get(slug=tenant)
            if action == "digest":
                taken = audit_digest_take(tenant=found, reason="command")
                stamp = taken.at.isoformat() if taken.at else ""
                self.stdout.write(f"{found.slug} {taken} at {stamp}")
                return
            given = digest_parse(options["digest"]) if options["digest"] else None
        except NotFound as error:
            raise CommandError(str(error)) from None
        except InvalidInput as error:
            raise CommandError(f"--{error.field}: {error.message}") from None
        report = audit_chain_verify(tenant=found, digest=given)
        for line in _report_lines(report):
            self.stdout.write(line)
        if report.broken is not None:
            raise CommandError("the audit chain does not verify")
        if report.digest_ok is False:
            raise CommandError("the chain does not hold the digest given")
