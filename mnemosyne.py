"""The `mnemosyne` command: memoryadmin/cli.py.

`--help`, `status`, `stop`, `mcp` (the MCP stdio relay) and `hermes` (connecting a Hermes
profile) start without Django, settings or a database; `mcp` and `hermes` run on agents'
machines. memoryadmin/commandline.py lists every command.
"""

from __future__ import annotations


def main() -> None:
    from memoryadmin.cli import main as run

    run()


if __name__ == "__main__":
    main()
