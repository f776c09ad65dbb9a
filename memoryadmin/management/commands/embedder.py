from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from retrieval.embedders import EmbedderError, embedder_health, get_embedder


class Command(BaseCommand):
    help = (
        "Load the configured embedder (MNEMOSYNE_EMBEDDER), preparing its model files on first "
        "use, and embed a probe sentence. Exit 1 when it does not work."
    )
    requires_system_checks = []

    def handle(self, *args: Any, **options: Any) -> None:
        spec = settings.MNEMOSYNE_EMBEDDER
        started = time.monotonic()
        try:
            embedder = get_embedder(spec, settings.MNEMOSYNE_MODEL_DIR)
        except EmbedderError as error:
            raise CommandError(f"embedder {spec!r}: {error}") from None
        health = embedder_health(embedder)
        if not health["ok"]:
            raise CommandError(f"embedder {health['name']}: {health['detail']}")
        self.stdout.write(
            f"{health['name']} ({health['dimension']} dimensions) ready in "
            f"{time.monotonic() - started:.1f} s; {health['detail']}"
        )
