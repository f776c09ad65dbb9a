from __future__ import annotations

import sys
import time
from typing import Any, NoReturn

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = (
        "Load the configured embedder (MNEMOSYNE_EMBEDDER), preparing its model files on first "
        "use, embed a probe sentence and register the model; say which model serves recall and "
        "how far a switch to a new model is. Exit 1 when the embedder does not work."
    )
    requires_system_checks = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--watch",
            action="store_true",
            help="while a switch to a new model runs, print its progress until it is done",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from facts.embedding import vector_switch_progress
        from indexing.embedders import EmbedderError, embedder_health, get_embedder
        from indexing.vectors import vector_model_register

        spec = settings.MNEMOSYNE_EMBEDDER
        started = time.monotonic()
        try:
            embedder = get_embedder(spec, settings.MNEMOSYNE_MODEL_DIR)
        except EmbedderError as error:
            self._fail(f"embedder {spec!r}: {error}")
        health = embedder_health(embedder)
        if not health["ok"]:
            self._fail(f"embedder {health['name']}: {health['detail']}")
        self.stdout.write(
            f"{health['name']} ({health['dimension']} dimensions) ready in "
            f"{time.monotonic() - started:.1f} s; {health['detail']}"
        )
        try:
            vector_model_register(embedder, spec)
        except EmbedderError as error:
            self._fail(str(error))
        while True:
            progress = vector_switch_progress()
            self.stdout.write(self._describe(progress))
            if not (options["watch"] and progress.filling):
                return
            time.sleep(5)

    def _fail(self, message: str) -> NoReturn:
        """The embedder does not work: not a bad argument (exit 2) but a failure (exit 1)."""
        self.stderr.write(f"mnemosyne embedder: {message}")
        sys.exit(1)

    @staticmethod
    def _describe(progress: Any) -> str:
        if progress.filling:
            share = progress.embedded / progress.active_facts if progress.active_facts else 1.0
            return (
                f"switching models: {progress.serving} serves recall while {progress.filling} "
                f"embeds the facts: {progress.embedded} of {progress.active_facts} ({share:.0%})"
            )
        return (
            f"{progress.serving} serves recall: {progress.embedded} of "
            f"{progress.active_facts} active facts embedded"
        )
