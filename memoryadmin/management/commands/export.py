from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


def _since(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date like 2026-01-31") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = (
        "Export a tenant's facts (entities, feedback, history, vectors) into a bundle: "
        "PATH.dat, PATH.idx and PATH.manifest.json."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="the tenant's slug")
        parser.add_argument(
            "--scope", default=None, metavar="PATH", help="only this scope path and below"
        )
        parser.add_argument(
            "--since", type=_since, default=None, metavar="DATE",
            help="only facts changed since this date (2026-01-31, UTC)",
        )  # fmt: skip
        parser.add_argument("--out", required=True, help="where to write the bundle")

    def handle(self, *args: Any, **options: Any) -> None:
        from facts.bundles import bundle_stem
        from facts.transfer import tenant_export
        from memoryadmin.progress import ProgressBar
        from tenants.actors import Actor
        from tenants.models import Tenant

        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {options['tenant']!r}")
        since = options["since"]
        out = bundle_stem(Path(options["out"]).expanduser().resolve())
        bar = ProgressBar("exporting", self.stderr._out)
        started = time.monotonic()
        summary = tenant_export(
            tenant=tenant, out=out, actor=Actor.job("cli.export"), scope=options["scope"],
            since=since, progress=bar,
        )  # fmt: skip
        bar.close()
        names = {"fact": "facts", "entity": "entities", "vector": "vectors"}
        counts = ", ".join(f"{n:,} {names.get(kind, kind)}" for kind, n in summary.counts.items())
        seconds = time.monotonic() - started
        self.stdout.write(
            f"Exported {counts or 'nothing'} from {tenant.slug} in {seconds:.1f} s: "
            f"{summary.bytes / 1e6:.1f} MB at {out}.* (vectors of {summary.model})"
        )
