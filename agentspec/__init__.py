"""What agents and API clients are told: the limits and choices of their input, the tools'
definitions (the Hermes plugin's `fact_store` and `fact_feedback`, MCP's `memory_*`) and the
rules that pick facts out of a conversation.

Plain Python, no Django and nothing else of the server's: the Hermes plugin reads it inside
Hermes, `mnemosyne mcp` where no database runs, and the server everywhere. The bottom of the
layers (docs/architecture.md): every package may read it; it reads none of them.
"""
