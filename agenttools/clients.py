"""How MCP clients are configured to reach Mnemosyne: the snippets the web admin's "Connect an
agent" page and the docs (docs/mcp.md) show. One place, so the two never disagree with the code."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from agentspec.mcp import KEY_VARIABLE

SERVER = "mnemosyne"


def stdio_config(*, url: str, token: str) -> dict[str, Any]:
    """`mcpServers` entry for clients that start `mnemosyne mcp` (Claude Code, Cursor, ...)."""
    return {
        "mcpServers": {
            SERVER: {
                "command": "mnemosyne",
                "args": ["mcp", "--url", url],
                "env": {KEY_VARIABLE: token},
            }
        }
    }


def http_config(*, url: str, token: str) -> dict[str, Any]:
    """`mcpServers` entry for clients that speak Streamable HTTP themselves."""
    return {
        "mcpServers": {
            SERVER: {
                "type": "http",
                "url": f"{url}/mcp",
                "headers": {"Authorization": f"Bearer {token}"},
            }
        }
    }


def as_json(config: dict[str, Any]) -> str:
    """Indented JSON with each list of plain values on one line, as people write it."""
    text = json.dumps(config, indent=2, ensure_ascii=False)
    # JSON strings hold no raw line breaks, so ",\n" only ever separates items.
    return re.sub(
        r"\[\n\s+([^\[\]{}]*?)\n\s*\]",
        lambda found: "[" + ", ".join(item.strip() for item in found.group(1).split(",\n")) + "]",
        text,
    )


def claude_code_commands(*, url: str, token: str) -> list[str]:
    """`claude mcp add` for each transport (stdio first)."""
    quote = shlex.quote
    return [
        f"claude mcp add --env {KEY_VARIABLE}={quote(token)} {SERVER} -- "
        f"mnemosyne mcp --url {quote(url)}",
        f"claude mcp add --transport http {SERVER} {quote(url + '/mcp')} "
        f"--header {quote('Authorization: Bearer ' + token)}",
    ]
