"""The MCP catalog keeps its own copies of the limits and choices its tools' schemas state (the
stdio relay loads it where there is no Django): they must be the ones the server parses with."""

from __future__ import annotations

from agentspec import mcp as catalog
from facts import inputs as fact_inputs
from facts.models import Category, Kind
from retrieval import inputs as recall_inputs


def test_the_catalogs_limits_are_the_parsers() -> None:
    assert catalog.MAX_K == recall_inputs.MAX_K
    assert catalog.MAX_QUERY_CHARS == recall_inputs.MAX_QUERY_CHARS


def test_the_catalogs_choices_are_the_models() -> None:
    assert catalog.KINDS == list(Kind.values) == fact_inputs.KINDS
    assert catalog.CATEGORIES == list(Category.values) == fact_inputs.CATEGORIES


def test_the_schemas_state_the_limits_of_a_fact() -> None:
    tools = catalog.TOOLS_BY_NAME
    for name in ("memory_store", "memory_update"):
        properties = tools[name].properties
        assert properties["content"]["maxLength"] == fact_inputs.MAX_CONTENT_CHARS, name
        assert properties["scope"]["maxLength"] == fact_inputs.MAX_SCOPE_CHARS, name
        assert properties["category"]["enum"] == fact_inputs.CATEGORIES, name
        tags = properties["tags"]
        assert tags["maxItems"] == fact_inputs.MAX_TAGS, name
        assert tags["items"]["maxLength"] == fact_inputs.MAX_TAG_CHARS, name
    for tool in catalog.TOOLS:
        properties = tool.properties
        if "limit" in properties:
            assert properties["limit"]["maximum"] == recall_inputs.MAX_K, tool.name
        if "kind" in properties:
            assert properties["kind"]["enum"] == fact_inputs.KINDS, tool.name
        for text in ("query", "task"):
            if text in properties:
                assert properties[text]["maxLength"] == recall_inputs.MAX_QUERY_CHARS, tool.name
