"""The tools the model sees: `fact_store` and `fact_feedback`, as JSON schemas.

Argument names, enums and descriptions are those of Hermes' bundled holographic provider, so a
profile can switch providers without the model (or its user) relearning anything. Extra optional
arguments: `scope` (where to write, or the scope prefix to read), `kind` (`fact` or `turn`) and
search's filters (`scopes`, `scope_exact`, `metadata`, `since`, `until`).
Plain data: the provider (in the Hermes process) and the server's agent endpoints both read it.
"""

from __future__ import annotations

from typing import Any

from agentspec import limits
from agentspec.filters import RECALL_FILTERS

ACTIONS = ["add", "search", "probe", "related", "reason", "contradict", "update", "remove", "list"]
FEEDBACK_ACTIONS = ["helpful", "unhelpful"]
CATEGORIES = list(limits.CATEGORIES)
FACT, TURN = limits.KINDS
KINDS = [FACT, TURN]
MAX_LIMIT = limits.MAX_K

FACT_STORE_SCHEMA: dict[str, Any] = {
    "name": "fact_store",
    "description": (
        "Long-term memory shared by your team (Mnemosyne): curated facts and past "
        "conversation turns, in any language.\n\n"
        "ACTIONS:\n"
        "• add — Store a fact the user would expect you to remember.\n"
        "• search — Find memories by meaning and keywords ('editor config', '部署流程').\n"
        "• probe — Entity recall: ALL facts about a person/thing.\n"
        "• related — What connects to an entity? Facts linking it to others, and theirs.\n"
        "• reason — Facts connected to MULTIPLE entities at once.\n"
        "• contradict — Memory hygiene: pairs of facts that may make conflicting claims.\n"
        "• update/remove/list — CRUD operations.\n\n"
        "IMPORTANT: Before answering questions about the user or the team, search or probe first."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ACTIONS},
            "content": {"type": "string", "description": "Fact content (required for 'add')."},
            "query": {"type": "string", "description": "Search query (required for 'search')."},
            "entity": {"type": "string", "description": "Entity name for 'probe'/'related'."},
            "entities": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Entity names for 'reason'.",
            },
            "fact_id": {"type": "integer", "description": "Fact ID for 'update'/'remove'."},
            "category": {"type": "string", "enum": CATEGORIES},
            "tags": {"type": "string", "description": "Comma-separated tags."},
            "trust_delta": {"type": "number", "description": "Trust adjustment for 'update'."},
            "pin": {
                "type": "boolean",
                "description": "Optional for 'add'/'update': true = always remember this fact "
                "(it leads the known facts and is never archived); false = unpin.",
            },
            "min_trust": {"type": "number", "description": "Minimum trust filter (default: 0.3)."},
            "limit": {"type": "integer", "description": "Max results (default: 10)."},
            "scope": {
                "type": "string",
                "description": "Optional scope path like 'user:alice/project:beta': where 'add' "
                "stores, the prefix other actions read (default: this profile's scope).",
            },
            "kind": {
                "type": "string",
                "enum": KINDS,
                "description": "Optional: 'fact' (curated statements) or 'turn' (conversation "
                "turns). Default: both for 'search', facts for 'list'.",
            },
            # Filters of 'search'.
            **{
                name: {**schema, "description": f"For 'search'. {schema['description']}"}
                for name, schema in RECALL_FILTERS.items()
            },
        },
        "required": ["action"],
    },
}

FACT_FEEDBACK_SCHEMA: dict[str, Any] = {
    "name": "fact_feedback",
    "description": (
        "Rate a fact after using it. Mark 'helpful' if accurate, 'unhelpful' if outdated. "
        "This trains the memory — good facts rise, bad facts sink."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": FEEDBACK_ACTIONS},
            "fact_id": {"type": "integer", "description": "The fact ID to rate."},
        },
        "required": ["action", "fact_id"],
    },
}

TOOL_SCHEMAS = [FACT_STORE_SCHEMA, FACT_FEEDBACK_SCHEMA]
TOOL_NAMES = {schema["name"] for schema in TOOL_SCHEMAS}
