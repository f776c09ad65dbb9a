"""`mnemosyne tenant create|list|rename|delete`.

Nothing of the models is imported at the top: `--help` and argument errors answer before
Django's set-up (memoryadmin/cli.py). Deleting follows the web page's rules (its service,
`tenants.services.tenant_delete`): the tenant's slug typed to confirm, refused under legal hold.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

# InvalidInput's field names as this command's arguments.
_ARGUMENTS = {"slug": "SLUG", "name": "NAME", "confirm": "--confirm", "legal_hold": "legal hold"}


class Command(BaseCommand):
    help = (
        "Tenants from the command line: `tenant create SLUG NAME`, `tenant list`, "
        "`tenant rename SLUG NAME`, `tenant delete SLUG`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(
            dest="action", required=True, metavar="create|list|rename|delete"
        )
        create = actions.add_parser(
            "create", help="create a tenant", description="Create a tenant."
        )
        create.add_argument("slug", help="its short name: lowercase letters, digits and hyphens")
        create.add_argument("name", help="its name as people read it")
        actions.add_parser(
            "list", help="list every tenant", description="List every tenant: slug, then name."
        )
        rename = actions.add_parser(
            "rename",
            help="give a tenant another name (its slug stays)",
            description="Give a tenant another name; its slug, in URLs and keys, stays.",
        )
        rename.add_argument("slug", help="the tenant's slug")
        rename.add_argument("name", help="the new name")
        delete = actions.add_parser(
            "delete",
            help="delete a tenant and everything it holds, for good",
            description="Delete a tenant and everything it holds (facts, history, keys, "
            "members, archives), for good; a deletion record (who, when, how much) stays. "
            "Refused while the tenant is under legal hold. Confirm by typing the tenant's slug "
            "when asked, or with --confirm SLUG.",
        )
        delete.add_argument("slug", help="the tenant's slug")
        delete.add_argument(
            "--confirm", metavar="SLUG", help="the tenant's slug again, to confirm without a prompt"
        )

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        from tenants.errors import InvalidInput, NotFound

        try:
            getattr(self, f"_{action}")(options)
        except NotFound as error:
            raise CommandError(str(error)) from None
        except InvalidInput as error:
            raise CommandError(
                f"{_ARGUMENTS.get(error.field, error.field)}: {error.message}"
            ) from None

    def _create(self, options: dict[str, Any]) -> None:
        from tenants.actors import Actor
        from tenants.inputs import tenant_draft
        from tenants.services import tenant_create

        tenant = tenant_create(
            actor=Actor.job("command-line"),
            draft=tenant_draft({"slug": options["slug"], "name": options["name"]}),
        )
        self.stdout.write(f"tenant {tenant.slug} created")

    def _list(self, options: dict[str, Any]) -> None:
        from tenants.selectors import tenant_list

        for tenant in tenant_list():
            self.stdout.write(f"{tenant.slug}\t{tenant.name}")

    def _rename(self, options: dict[str, Any]) -> None:
        from tenants.actors import Actor
        from tenants.selectors import tenant_get
        from tenants.services import tenant_rename

        tenant = tenant_get(slug=options["slug"])
        renamed = tenant_rename(
            tenant=tenant, name=options["name"], actor=Actor.job("command-line")
        )
        self.stdout.write(f"tenant {renamed.slug} is now called {renamed.name}")

    def _delete(self, options: dict[str, Any]) -> None:
        from tenants.actors import Actor
        from tenants.selectors import tenant_get
        from tenants.services import tenant_delete

        tenant = tenant_get(slug=options["slug"])
        confirm = options["confirm"]
        if confirm is None:
            if not sys.stdin.isatty():
                raise CommandError(
                    f"--confirm: type the tenant's short name, {tenant.slug}, to delete it "
                    "(no terminal to ask in)"
                )
            confirm = input(
                f"Delete tenant {tenant.slug} ({tenant.name}) and everything it holds, for good? "
                "Type its short name to confirm: "
            )
        deletion = tenant_delete(tenant=tenant, actor=Actor.job("command-line"), confirm=confirm)
        held = ", ".join(f"{n:,} {label}" for label, n in sorted(deletion.counts.items()))
        self.stdout.write(
            f"tenant {deletion.slug} deleted ({held or 'it held nothing'}); a deletion record stays"
        )
