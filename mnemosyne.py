"""The `mnemosyne` command.

`mnemosyne mcp` is the MCP stdio relay and `mnemosyne hermes` connects a Hermes profile; both
run on agents' machines and start without Django, Celery or settings (and so without a
database). Every other command is `memoryadmin.cli`'s (`up`, `status`, `stop` and every
manage.py command).
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["mcp"]:
        from mcp_server.relay import main as relay

        sys.exit(relay(sys.argv[2:]))
    if sys.argv[1:2] == ["hermes"]:
        from hermes_provider.installer import main as hermes

        sys.exit(hermes(sys.argv[2:]))
    from memoryadmin.cli import main as project

    project()


if __name__ == "__main__":
    main()
