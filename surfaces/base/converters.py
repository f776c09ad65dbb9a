"""The URL converters of the API and the pages: `<id:...>` and `<username:...>`."""

from __future__ import annotations

from django.urls import register_converter


class IdConverter:
    """A positive id that fits PostgreSQL's bigint (18 digits always do); others are 404."""

    regex = "[1-9][0-9]{0,17}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


class UsernameConverter:
    regex = r"[\w.@+-]{1,150}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(IdConverter, "id")
register_converter(UsernameConverter, "username")
