from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants.actors import Actor
from tenants.errors import InvalidInput
from tenants.inputs import tenant_draft
from tenants.selectors import tenant_list
from tenants.services import tenant_create


class Command(BaseCommand):
    help = "Tenants from the command line: `tenant create SLUG NAME`, `tenant list`."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="create a tenant")
        create.add_argument("slug", help="lowercase letters, digits and inner hyphens")
        create.add_argument("name")
        actions.add_parser("list", help="list every tenant")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "create":
            try:
                tenant = tenant_create(
                    actor=Actor.job("command-line"),
                    draft=tenant_draft({"slug": options["slug"], "name": options["name"]}),
                )
            except InvalidInput as error:
                raise CommandError(str(error)) from None
            self.stdout.write(f"tenant {tenant.slug} created")
            return
        for tenant in tenant_list():
            self.stdout.write(f"{tenant.slug}\t{tenant.name}")
