"""The documentation says what the code does: docs/configuration.md has a row for every
environment variable the code reads (and none for a variable nothing reads), and the README stays
a short way in. (The site's links, anchors and pages are checked by `mkdocs build --strict`, which
scripts/test.sh runs before pytest.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGURATION = ROOT / "docs" / "configuration.md"
README_MAX_LINES = 200
# Folders whose Python is not Mnemosyne's: the tests (below), benchmarks, environments, data.
NOT_PRODUCT = {"tests", "bench", "docs", "build", "dist", "site", "node_modules", "__pycache__"}
# The typed readers of memoryadmin/env.py (and os.getenv): their first argument is a name.
READERS = {
    "env_str",
    "env_bool",
    "env_int",
    "env_float",
    "env_choice",
    "env_list",
    "env_rate",
    "env_path",
    "getenv",
}
# Set by tests for the child processes they start, read back by those children: not settings.
TEST_CHILD_VARIABLES = {"BASE_URL", "SESSION_ID", "WORKERS", "DJANGO_ALLOW_ASYNC_UNSAFE"}
_NAME = re.compile(r"^[A-Z][A-Z0-9_]+$")
_MNEMOSYNE = re.compile(r"^MNEMOSYNE_[A-Z0-9_]+$")


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _literal(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _read_name(node: ast.AST) -> str | None:
    """The variable an expression reads from the environment, when it names it literally."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in READERS:
            return _literal(node.args[0])
        if name in {"get", "setdefault", "pop"} and _is_environ(getattr(func, "value", None)):
            return _literal(node.args[0])
    if isinstance(node, ast.Subscript) and _is_environ(node.value):
        return _literal(node.slice)
    if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
        if _is_environ(node.comparators[0]):
            return _literal(node.left)
    return None


def _names_in(path: Path, *, mnemosyne_literals: bool) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        name = _read_name(node)
        if name and _NAME.match(name):
            names.add(name)
        # A name kept in a constant (THREADS_ENV = "MNEMOSYNE_EMBED_THREADS") and read through it.
        literal = _literal(node) if isinstance(node, ast.expr) else None
        if mnemosyne_literals and literal and _MNEMOSYNE.match(literal):
            names.add(literal)
    return names


def _python_files(folder: Path, *, skip: set[str]) -> list[Path]:
    return [
        path
        for path in folder.rglob("*.py")
        if not any(p.startswith(".") or p in skip for p in path.relative_to(folder).parts)
    ]


def code_variables() -> set[str]:
    """Every variable Mnemosyne's code and scripts read (tests and benchmarks aside)."""
    names: set[str] = set()
    for path in _python_files(ROOT, skip=NOT_PRODUCT):
        names |= _names_in(path, mnemosyne_literals=True)
    for script in (ROOT / "scripts").glob("*.sh"):
        names |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]+):-", script.read_text(encoding="utf-8")))
    return names


def suite_variables() -> set[str]:
    """The variables the test suite itself reads (TEST_DATABASE_URL, CI, ...)."""
    names: set[str] = set()
    for path in _python_files(ROOT / "tests", skip={"__pycache__"}):
        names |= _names_in(path, mnemosyne_literals=False)
    return names - TEST_CHILD_VARIABLES


def documented_variables() -> set[str]:
    """The names in the first column of docs/configuration.md's table."""
    names = set()
    for line in CONFIGURATION.read_text(encoding="utf-8").splitlines():
        cells = line.split(" | ")
        if line.startswith("| `") and len(cells) >= 3:
            names |= {n for n in re.findall(r"`([^`]+)`", cells[0]) if _NAME.match(n)}
    return names


def test_every_variable_the_code_reads_has_a_row() -> None:
    code = code_variables()
    # The scan finds what it should: names read through each kind of reader.
    assert {"DATABASE_URL", "MNEMOSYNE_BIND", "MNEMOSYNE_EMBED_THREADS", "HERMES_HOME"} <= code
    missing = sorted(code - documented_variables())
    assert not missing, f"docs/configuration.md has no row for {', '.join(missing)}"


def test_every_row_names_a_variable_something_reads() -> None:
    read = code_variables() | suite_variables()
    assert {"TEST_DATABASE_URL", "CI"} <= read
    unread = sorted(documented_variables() - read)
    assert not unread, f"docs/configuration.md documents {', '.join(unread)}, which nothing reads"


def test_the_readme_is_a_short_way_in() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    text = "\n".join(lines)
    for command in ("./scripts/up.sh", "./scripts/test.sh"):
        assert command in text
