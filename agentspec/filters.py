"""The recall filters every agent surface offers (Hermes' `fact_store` search, MCP's
`memory_search`), as JSON-schema properties: defined once, `retrieval.inputs.recall_query`
checks their values."""

from __future__ import annotations

from typing import Any

from agentspec import limits

RECALL_FILTERS: dict[str, dict[str, Any]] = {
    "scopes": {
        "type": "array",
        "items": {"type": "string", "maxLength": limits.MAX_SCOPE_CHARS},
        "maxItems": limits.MAX_SCOPES,
        "description": "Optional, instead of scope: several scopes read together, e.g. "
        "['user:alice', 'team:infra'] (each with what lies under it).",
    },
    "scope_exact": {
        "type": "boolean",
        "description": "Optional: true = only memories in the scope(s) themselves, not in "
        "scopes under them.",
    },
    "metadata": {
        "type": "object",
        "maxProperties": limits.MAX_METADATA_FILTERS,
        "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
        "description": "Optional: only memories whose metadata has these values, e.g. "
        "{'source': 'standup'}.",
    },
    "since": {
        "type": "string",
        "maxLength": limits.MAX_TIME_CHARS,
        "description": "Optional: only memories from this time on: ISO 8601 "
        "('2026-12-01', '2026-12-01T09:00:00Z') or a span back from now ('7d', '24h', "
        "'30m', '2w').",
    },
    "until": {
        "type": "string",
        "maxLength": limits.MAX_TIME_CHARS,
        "description": "Optional: only memories from before this time (same forms as since).",
    },
}
