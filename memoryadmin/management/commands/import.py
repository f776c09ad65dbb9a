from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = (
        "Import a bundle (an export or an archive) into a tenant: all or nothing; importing "
        "twice adds nothing; archived facts in it come back."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the bundle (its stem or any of its three files)")
        parser.add_argument("--tenant", required=True, help="the tenant's slug")

    def handle(self, *args: Any, **options: Any) -> None:
        from facts.bundles import BundleError
        from facts.transfer import tenant_import
        from memoryadmin.progress import ProgressBar
        from tenants.actors import Actor
        from tenants.errors import InvalidInput
        from tenants.models import Tenant

        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {options['tenant']!r}")
        bar = ProgressBar("importing", self.stderr._out)
        started = time.monotonic()
        try:
            summary = tenant_import(
                tenant=tenant, path=Path(options["path"]).expanduser(),
                actor=Actor.job("cli.import"), progress=bar,
            )  # fmt: skip
        except BundleError as error:
            raise CommandError(f"refused, nothing imported: {error}") from None
        except InvalidInput as error:
            raise CommandError(f"refused, nothing imported: {error.message}") from None
        finally:
            bar.close()
        self.stdout.write(
            f"Imported into {tenant.slug} in {time.monotonic() - started:.1f} s: "
            f"{summary.added:,} facts added, {summary.exists:,} already there, "
            f"{summary.restored:,} restored from the archive, {summary.entities_added:,} new "
            f"entities; {summary.vectors_kept:,} vectors kept, {summary.to_embed:,} facts to embed."
        )
