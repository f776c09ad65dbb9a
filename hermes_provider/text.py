"""What the provider reads out of Hermes' messages and keys."""

from __future__ import annotations

from typing import Any

from agentspec.limits import MAX_CONTENT_CHARS  # what one memory holds (in characters)

_CUT = " […]"


def fit(text: str) -> str:
    """Text cut to what one memory holds."""
    if len(text) <= MAX_CONTENT_CHARS:
        return text
    return text[: MAX_CONTENT_CHARS - len(_CUT)].rstrip() + _CUT


def text_of(content: Any) -> str:
    """The text of a message's content (a string, or a list of typed parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def key_prefix(token: str) -> str:
    # mnm_<prefix>_<secret>: the prefix is public and names the key without asking the server.
    parts = token.strip().split("_", 2)
    return parts[1] if len(parts) == 3 else ""
