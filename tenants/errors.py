"""Errors every surface (REST API, Hermes tools, admin pages) maps to a clear answer."""

from __future__ import annotations

from tenants.error_messages import localized


class InvalidInput(ValueError):
    """Bad input: the REST API answers 400, a tool answers {"error": ...}. Names the field.

    The message is written in English and kept in the active language (a request's, through
    LocaleMiddleware; English for agents, jobs and the command line)."""

    def __init__(self, field: str, message: str) -> None:
        message = localized(message)
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class NotFound(LookupError):
    """Missing, or another tenant's: the two are indistinguishable on purpose (404)."""

    def __init__(self, what: str, ident: object) -> None:
        super().__init__(f"{what} {ident} not found")
        self.what = what
        self.ident = ident
