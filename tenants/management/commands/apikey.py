"""`mnemosyne apikey create|list|revoke`.

Nothing of the models is imported at the top: `--help` and argument errors answer before
Django's set-up (memoryadmin/cli.py). "scope" means a scope path here as everywhere else; what a
key may do is its access: --read-only or --write-only (default: read and write).
"""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

_OLD_SCOPE_WORDS = {"read", "write"}
# InvalidInput's field names as this command's arguments.
_ARGUMENTS = {"scope": "--scope", "expires_at": "--expires", "name": "NAME", "scopes": "access"}


def expiry(value: str) -> datetime:
    """`--expires`: a number of days (`90d`) or a date or time (`2026-12-31`, ISO 8601, UTC
    unless it says otherwise)."""
    text = value.strip()
    if match := re.fullmatch(r"(\d{1,4})\s*d(ays?)?", text, flags=re.IGNORECASE):
        days = int(match.group(1))
        if not 1 <= days <= 3650:
            raise argparse.ArgumentTypeError(f"{value!r}: from 1 to 3650 days")
        return datetime.now(UTC) + timedelta(days=days)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is neither a number of days (90d) nor a date (2026-12-31)"
        ) from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if moment <= datetime.now(UTC):
        raise argparse.ArgumentTypeError(f"{value!r} is not in the future")
    return moment


def scope_limit(value: str) -> str:
    """`--scope`: the scope path the key is limited to (its older meaning, read or write, is
    refused with a pointer, so an old script never makes a key limited to a scope "read")."""
    if value.strip().lower() in _OLD_SCOPE_WORDS:
        raise argparse.ArgumentTypeError(
            f"{value!r}: --scope is the scope path the key is limited to (e.g. team:research); "
            "for what it may do use --read-only or --write-only"
        )
    return value


class Command(BaseCommand):
    help = (
        "API keys from the command line: `apikey create TENANT NAME` (prints the secret once), "
        "`apikey list TENANT`, `apikey revoke TENANT KEY_ID`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="create|list|revoke")
        create = actions.add_parser(
            "create",
            help="create a key; its secret is printed once",
            description="Create an API key of TENANT. The secret goes to standard output, "
            "once; only its hash is kept.",
        )
        create.add_argument("tenant", help="the tenant's slug")
        create.add_argument("name", help="what uses it, e.g. the Hermes profile")
        create.add_argument(
            "--scope", type=scope_limit, default="", metavar="PATH",
            help="limit the key to this scope path and below, e.g. team:research "
            "(default: the whole tenant)",
        )  # fmt: skip
        access = create.add_mutually_exclusive_group()
        access.add_argument(
            "--read-only", action="store_true", help="the key recalls and lists, never writes"
        )
        access.add_argument(
            "--write-only", action="store_true", help="the key stores and rates, never reads"
        )
        create.add_argument(
            "--expires", type=expiry, default=None, metavar="WHEN",
            help="when the key stops working: a number of days (90d) or a date (2026-12-31, "
            "UTC); default: never",
        )  # fmt: skip
        listing = actions.add_parser(
            "list",
            help="list a tenant's keys",
            description="List TENANT's API keys, one a line, tab-separated: id, name, prefix, "
            "access, state, scope limit, expiry.",
        )
        listing.add_argument("tenant", help="the tenant's slug")
        revoke = actions.add_parser(
            "revoke",
            help="revoke a key: it stops working at once",
            description="Revoke an API key of TENANT: it stops working at once.",
        )
        revoke.add_argument("tenant", help="the tenant's slug")
        revoke.add_argument("key_id", type=int, help="the key's id (`apikey list` shows it)")

    def handle(self, *args: Any, action: str, tenant: str, **options: Any) -> None:
        from tenants.errors import InvalidInput, NotFound
        from tenants.selectors import tenant_get

        try:
            found = tenant_get(slug=tenant)
            if action == "create":
                self._create(found, options)
            elif action == "list":
                self._list(found)
            else:
                self._revoke(found, options["key_id"])
        except NotFound as error:
            raise CommandError(str(error)) from None
        except InvalidInput as error:
            argument = _ARGUMENTS.get(error.field, error.field)
            raise CommandError(f"{argument}: {error.message}") from None

    def _create(self, tenant: Any, options: dict[str, Any]) -> None:
        from tenants.actors import Actor
        from tenants.services import apikey_create

        scopes = ["read"] if options["read_only"] else ["write"] if options["write_only"] else None
        created = apikey_create(
            tenant=tenant, name=options["name"], actor=Actor.job("command-line"), scopes=scopes,
            expires_at=options["expires"], scope_prefix=options["scope"],
        )  # fmt: skip
        key = created.key
        self.stdout.write(created.token)
        limits = [", ".join(key.scopes)]
        if key.scope_prefix:
            limits.append(f"scope {key.scope_prefix} and below")
        if key.expires_at:
            limits.append(f"expires {key.expires_at:%Y-%m-%d %H:%M} UTC")
        self.stderr.write(
            f"API key {key.pk} ({'; '.join(limits)}) for {tenant.slug}: "
            "the secret above is shown once; keep it now."
        )

    def _list(self, tenant: Any) -> None:
        from tenants.selectors import apikey_list

        for key in apikey_list(tenant=tenant):
            if key.revoked_at:
                state = f"revoked {key.revoked_at:%Y-%m-%d}"
            else:
                state = "expired" if key.is_expired else "active"
            expires = f"{key.expires_at:%Y-%m-%d}" if key.expires_at else "never"
            self.stdout.write(
                f"{key.pk}\t{key.name}\tmnm_{key.prefix}_…\t{','.join(key.scopes)}\t{state}\t"
                f"{key.scope_prefix or '(whole tenant)'}\t{expires}"
            )

    def _revoke(self, tenant: Any, key_id: int) -> None:
        from tenants.actors import Actor
        from tenants.services import apikey_revoke

        key = apikey_revoke(tenant=tenant, key_id=key_id, actor=Actor.job("command-line"))
        self.stdout.write(f"API key {key.pk} ({key.name}) revoked")
