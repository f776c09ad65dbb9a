#!/usr/bin/env python
"""Django's command-line utility; the same as the `mnemosyne` command."""

from memoryadmin.cli import main

if __name__ == "__main__":
    main()
