from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.inputs import API_KEY_SCOPES
from tenants.selectors import apikey_list, tenant_get
from tenants.services import apikey_create, apikey_revoke


class Command(BaseCommand):
    help = (
        "API keys from the command line: `apikey create TENANT NAME [--scope read]` (prints the "
        "secret once), `apikey list TENANT`, `apikey revoke TENANT ID`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="create a key; its secret is printed once")
        create.add_argument("tenant", help="the tenant's slug")
        create.add_argument("name", help="what uses it, e.g. the Hermes profile")
        create.add_argument(
            "--scope", action="append", choices=API_KEY_SCOPES, dest="scopes",
            help="read or write (repeat for both; the default is both)",
        )  # fmt: skip
        listing = actions.add_parser("list", help="list a tenant's keys")
        listing.add_argument("tenant")
        revoke = actions.add_parser("revoke", help="revoke a key: it stops working at once")
        revoke.add_argument("tenant")
        revoke.add_argument("key_id", type=int)

    def handle(self, *args: Any, action: str, tenant: str, **options: Any) -> None:
        actor = Actor.job("command-line")
        try:
            found = tenant_get(slug=tenant)
            if action == "create":
                created = apikey_create(
                    tenant=found, name=options["name"], actor=actor, scopes=options["scopes"]
                )
                self.stdout.write(created.token)
                self.stderr.write(
                    f"API key {created.key.pk} ({', '.join(created.key.scopes)}) for {found.slug}: "
                    "the secret above is shown once; keep it now."
                )
            elif action == "list":
                for key in apikey_list(tenant=found):
                    state = "active" if key.is_active else f"revoked {key.revoked_at:%Y-%m-%d}"
                    self.stdout.write(
                        f"{key.pk}\t{key.name}\tmnm_{key.prefix}_…\t{','.join(key.scopes)}\t{state}"
                    )
            else:
                key = apikey_revoke(tenant=found, key_id=options["key_id"], actor=actor)
                self.stdout.write(f"API key {key.pk} ({key.name}) revoked")
        except (InvalidInput, NotFound) as error:
            raise CommandError(str(error)) from None
