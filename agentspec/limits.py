"""The limits and choices of what agents and API clients send, in one place: the server's input
parsers (`facts.inputs`, `retrieval.inputs`, `tenants.inputs`) check against these, and the
tools' JSON schemas and the API's schema state them."""

from __future__ import annotations

# The values of facts.models.Category and facts.models.Kind (a test keeps them equal).
CATEGORIES: tuple[str, ...] = ("user_pref", "project", "tool", "general")
KINDS: tuple[str, ...] = ("fact", "turn")

# In characters, as the schemas state them (a Chinese character is 3 bytes of UTF-8).
MAX_CONTENT_CHARS = 16_384
MAX_SCOPE_CHARS = 255
MAX_QUERY_CHARS = 2000
MAX_ENTITY_NAME_CHARS = 200
MAX_TAGS = 20
MAX_TAG_CHARS = 64
MAX_CURSOR_CHARS = 200
MAX_TIME_CHARS = 64  # an ISO 8601 time, or a span back from now like "7d"

MAX_SCOPES = 20  # scopes one recall reads together
MAX_METADATA_FILTERS = 10  # metadata fields one recall filters on
MAX_K = 100  # results of one recall, search or list
MIN_BUDGET, MAX_BUDGET = 50, 32_000  # tokens of a context block
MAX_ID = 2**63 - 1  # a fact's id is a PostgreSQL bigint
