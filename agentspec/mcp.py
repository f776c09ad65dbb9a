"""What the MCP server offers: its tools (names, descriptions, JSON schemas with their limits),
resources and prompt, each defined here once.

Plain data, no Django: the server (`mcp_server.server`, over `agenttools.mcp`) lists these, and
`mnemosyne mcp` (the stdio relay, which runs where no database or Django is) takes its
instructions from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agentspec import limits
from agentspec.filters import RECALL_FILTERS

SERVER_NAME = "mnemosyne"
KEY_VARIABLE = "MNEMOSYNE_API_KEY"  # where `mnemosyne mcp` reads the tenant's API key
CATEGORIES = list(limits.CATEGORIES)
KINDS = list(limits.KINDS)
MAX_K = limits.MAX_K
MAX_QUERY_CHARS = limits.MAX_QUERY_CHARS

INSTRUCTIONS = (
    "Mnemosyne is your team's shared long-term memory: curated facts and past conversation "
    "turns, in any language, kept across sessions and shared with the team's other agents. "
    "Before answering anything about the user, the team, its projects or its conventions, call "
    "memory_context with the task (or memory_search with a question). Every result carries a "
    "fact_id: after you relied on a fact, rate it with memory_feedback. Store durable, "
    "self-contained facts with memory_store (one fact per call), never secrets."
)

Need = Literal["read", "write"]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    properties: dict[str, Any]
    required: list[str] = field(default_factory=list)
    need: Need = "read"
    destructive: bool = False
    idempotent: bool = True

    @property
    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": self.properties,
            "required": self.required,
            "additionalProperties": False,
        }


# -- argument schemas shared by several tools --------------------------------------------------

_SCOPE_READ = {
    "type": "string",
    "maxLength": limits.MAX_SCOPE_CHARS,
    "description": "Only memories in this scope and below, a path like 'project:beta' (which "
    "covers 'project:beta/...'). Default: everything this API key may see.",
}
_SCOPE_WRITE = {
    "type": "string",
    "maxLength": limits.MAX_SCOPE_CHARS,
    "description": "Where the memory belongs, a path of type:name segments like "
    "'user:alice/project:beta'. Default: this API key's scope (the whole team if it has none).",
}
_KIND = {
    "type": "string",
    "enum": KINDS,
    "description": "'fact' (curated statements) or 'turn' (past conversation turns). "
    "Default: both.",
}
_CATEGORY = {
    "type": "string",
    "enum": CATEGORIES,
    "description": "user_pref (a person's preference), project, tool, or general.",
}
_TAGS = {
    "type": "array",
    "items": {"type": "string", "maxLength": limits.MAX_TAG_CHARS},
    "maxItems": limits.MAX_TAGS,
    "description": "Short labels, e.g. ['deploy', 'ci'].",
}
_FACT_ID = {
    "type": "integer",
    "minimum": 1,
    "description": "The fact_id a search, context or list result gave.",
}
_ENTITY = {
    "type": "string",
    "minLength": 1,
    "maxLength": limits.MAX_ENTITY_NAME_CHARS,
    "description": "A person, place, organisation or product, e.g. 'Alice' or '王总'.",
}


def _limit(default: int) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_K,
        "default": default,
        "description": f"How many results at most (1 to {MAX_K}; default {default}).",
    }


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="memory_search",
        title="Search memory",
        description=(
            "Find the memories that best answer a question, by meaning and by keywords (hybrid "
            "search; English, Chinese and mixed text). Returns the best first, each with its "
            "fact_id, content, scope, kind, category, trust, score (ranks this query's hits, 0 "
            "or more), relevance (0 to 1: how likely the memory is what was asked) and weak "
            "(true below the relevance floor: likely unrelated; memory_context leaves such "
            "memories out). Use it before answering anything about the user, the team or its "
            "projects."
        ),
        properties={
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "description": "What to remember, as a question or keywords: 'what editor does "
                "Alice use?', '部署流程'.",
            },
            "scope": _SCOPE_READ,
            "kind": _KIND,
            "k": _limit(10),
            "category": _CATEGORY,
            "min_trust": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "Leave out memories trusted less than this (0 to 1). Default: "
                "the team's setting.",
            },
            **RECALL_FILTERS,
        },
        required=["query"],
    ),
    ToolSpec(
        name="memory_context",
        title="Memory context for a task",
        description=(
            "The block of memories to read before working on a task: the team's most "
            "important facts, then the memories most relevant to the task, deduplicated and "
            "cut to a token budget. Returns the text and the fact_ids of each part. Call it "
            "once at the start of a task."
        ),
        properties={
            "task": {
                "type": "string",
                "maxLength": MAX_QUERY_CHARS,
                "description": "The task or the user's message. Empty: the important facts only.",
            },
            "scope": _SCOPE_READ,
            "scopes": RECALL_FILTERS["scopes"],
            "budget": {
                "type": "integer",
                "minimum": limits.MIN_BUDGET,
                "maximum": limits.MAX_BUDGET,
                "description": f"Tokens the block may take ({limits.MIN_BUDGET} to "
                f"{limits.MAX_BUDGET}). Default: the team's "
                "setting (1300 unless changed).",
            },
        },
    ),
    ToolSpec(
        name="memory_probe",
        title="Everything about an entity",
        description=(
            "All memories about one person, place, organisation or product, most trusted "
            "first. Finds aliases the team recorded. When no such entity is known, falls back "
            "to a text search for the name (the result then says matched_by: 'text')."
        ),
        properties={"entity": _ENTITY, "scope": _SCOPE_READ, "kind": _KIND, "limit": _limit(10)},
        required=["entity"],
    ),
    ToolSpec(
        name="memory_related",
        title="Related memories",
        description=(
            "What connects to an entity: the memories that mention it together with other "
            "entities, then the memories of those entities (two hops). Each result names the "
            "entities that tie it to the question."
        ),
        properties={"entity": _ENTITY, "scope": _SCOPE_READ, "kind": _KIND, "limit": _limit(10)},
        required=["entity"],
    ),
    ToolSpec(
        name="memory_recent",
        title="Recent memories",
        description=(
            "The newest memories, newest first, in pages: pass next_cursor from one answer to "
            "get the next page. Curated facts by default; kind 'turn' lists conversation turns."
        ),
        properties={
            "scope": _SCOPE_READ,
            "kind": {**_KIND, "description": "'fact' (default) or 'turn'."},
            "category": _CATEGORY,
            "limit": _limit(20),
            "cursor": {
                "type": "string",
                "maxLength": limits.MAX_CURSOR_CHARS,
                "description": "next_cursor of the previous page.",
            },
        },
    ),
    ToolSpec(
        name="memory_store",
        title="Store a fact",
        description=(
            "Remember a fact for the team: one self-contained statement that will still make "
            "sense later and to others ('Alice prefers tabs over spaces in Go code'). Storing "
            "the same fact again returns the existing one (status 'exists'). Never store "
            "secrets such as passwords or keys."
        ),
        properties={
            "content": {
                "type": "string",
                "minLength": 1,
                "maxLength": limits.MAX_CONTENT_CHARS,
                "description": "The fact, in any language.",
            },
            "scope": _SCOPE_WRITE,
            "category": _CATEGORY,
            "tags": _TAGS,
            "pin": {
                "type": "boolean",
                "description": "true: always remember this (it leads the known facts and is "
                "never archived); false: unpin.",
            },
        },
        required=["content"],
        need="write",
        idempotent=True,
    ),
    ToolSpec(
        name="memory_feedback",
        title="Rate a memory",
        description=(
            "Say whether a memory you used was right: helpful raises its trust (+0.05), "
            "unhelpful (wrong or outdated) lowers it (-0.10). Trusted memories rank higher; "
            "distrusted ones drop out of results."
        ),
        properties={
            "fact_id": _FACT_ID,
            "helpful": {
                "type": "boolean",
                "description": "true: it was accurate and useful; false: wrong or outdated.",
            },
        },
        required=["fact_id", "helpful"],
        need="write",
        idempotent=False,
    ),
    ToolSpec(
        name="memory_update",
        title="Correct a memory",
        description=(
            "Change a stored fact: its content, category, tags, scope or pin (give only what "
            "changes). The change is recorded in the fact's history with this API key as its "
            "author."
        ),
        properties={
            "fact_id": _FACT_ID,
            "content": {"type": "string", "minLength": 1, "maxLength": limits.MAX_CONTENT_CHARS},
            "scope": _SCOPE_WRITE,
            "category": _CATEGORY,
            "tags": _TAGS,
            "pin": {
                "type": "boolean",
                "description": "true: always remember this (it leads the known facts and is "
                "never archived); false: unpin.",
            },
        },
        required=["fact_id"],
        need="write",
    ),
    ToolSpec(
        name="memory_remove",
        title="Remove a memory",
        description=(
            "Remove a fact that is wrong or no longer true: it leaves search and context at "
            "once. Its history is kept, and a team admin can restore it."
        ),
        properties={"fact_id": _FACT_ID},
        required=["fact_id"],
        need="write",
        destructive=True,
    ),
]

TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}

# -- resources and the prompt ------------------------------------------------------------------

KNOWN_FACTS_URI = "mnemosyne://facts"
FACT_URI_PREFIX = "mnemosyne://facts/"
FACT_URI_TEMPLATE = FACT_URI_PREFIX + "{fact_id}"
PROMPT_NAME = "use_memory"
