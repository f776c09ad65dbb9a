"""Compile the web admin's translations (.po -> .mo) without GNU gettext, or check them.

    python scripts/compile_messages.py          # write every locale's django.mo
    python scripts/compile_messages.py --check  # fail if a .mo is stale or a message untranslated

The compiled .mo files are committed, so a fresh clone and CI need no gettext tools; the test
suite runs the check. To add messages: `python -m django makemessages -l zh_Hans` (needs GNU
gettext's xgettext), translate them in the .po file, then run this.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po

LOCALE = Path(__file__).resolve().parent.parent / "memoryadmin" / "locale"


def problems(po_path: Path) -> list[str]:
    with po_path.open("rb") as handle:
        catalog = read_po(handle)
    found = []
    for message in catalog:
        if not message.id:
            continue
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if message.fuzzy:
            found.append(f"{po_path}: fuzzy: {message.id!r}")
        elif not all(strings):
            found.append(f"{po_path}: untranslated: {message.id!r}")
    return found


def compiled(po_path: Path) -> bytes:
    with po_path.open("rb") as handle:
        catalog = read_po(handle)
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    return buffer.getvalue()


def _key(value: object) -> object:
    return tuple(value) if isinstance(value, list | tuple) else value


def messages(catalog: Catalog) -> dict[object, object]:
    return {_key(m.id): _key(m.string) for m in catalog if m.id}


def up_to_date(po_path: Path, mo_path: Path) -> bool:
    """The .mo holds exactly the .po's translations (compared as messages, not as bytes, so
    another Babel version writing them in another order is no difference)."""
    if not mo_path.exists():
        return False
    with po_path.open("rb") as po, mo_path.open("rb") as mo:
        return messages(read_po(po)) == messages(read_mo(mo))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="check instead of writing")
    args = parser.parse_args()
    failures = []
    for po_path in sorted(LOCALE.glob("*/LC_MESSAGES/django.po")):
        mo_path = po_path.with_suffix(".mo")
        failures += problems(po_path)
        if args.check:
            if not up_to_date(po_path, mo_path):
                failures.append(f"{mo_path} is not compiled from {po_path.name}: run {__file__}")
        else:
            mo_path.write_bytes(compiled(po_path))
            print(f"wrote {mo_path}")
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
