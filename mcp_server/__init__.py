"""Mnemosyne as a Model Context Protocol server: Streamable HTTP at /mcp, stdio through
`mnemosyne mcp` (a relay to /mcp)."""
