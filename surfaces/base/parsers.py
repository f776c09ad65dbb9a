"""Request parsers that refuse, with a 400 naming the field, what PostgreSQL could not store."""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser, JSONParser

from tenants.validation import check_storable


class StorableJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        check_storable(data, "")
        return data


class JSONLinesParser(BaseParser):
    """The raw text of a JSON Lines body (one JSON object per line); lines are parsed later,
    one by one, so that one bad line is reported instead of failing the whole body."""

    media_type = "application/x-ndjson"

    def parse(  # type: ignore[override]  # the raw text: its lines are parsed one by one later
        self, stream: Any, media_type: str | None = None, parser_context: Any = None
    ) -> str:
        raw = stream.read() if stream is not None else b""
        try:
            return codecs.decode(raw, "utf-8")
        except UnicodeDecodeError as error:
            message = f"the body is not UTF-8 text ({error.reason} at byte {error.start})"
            raise ParseError(message) from None


class JSONLParser(JSONLinesParser):
    media_type = "application/jsonl"


class FirstRenderer(BaseContentNegotiation):
    """Answer in the view's own format whatever the Accept header says: an API whose errors
    depend on Accept (406) helps nobody, and exports say their type themselves."""

    def select_parser(self, request: Any, parsers: Iterable[BaseParser]) -> BaseParser | None:
        content_type = request.content_type.split(";")[0].strip().lower()
        for parser in parsers:
            if parser.media_type == content_type:
                return parser
        return None

    def select_renderer(
        self, request: Any, renderers: Iterable[Any], format_suffix: str | None = None
    ) -> tuple[Any, str]:
        first = next(iter(renderers))
        return first, first.media_type


class TarParser(BaseParser):
    """An uploaded tar (a bundle), spooled to a temporary file as it arrives."""

    media_type = "application/x-tar"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        import tempfile

        spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115 - returned open
        while stream is not None and (chunk := stream.read(1 << 20)):
            spool.write(chunk)
        spool.seek(0)
        return spool
