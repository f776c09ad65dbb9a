"""The documentation says what the code does: docs/configuration.md has a row for every
environment variable the code reads (and none for a variable nothing reads), and the README stays
a short way in. (The site's links, anchors and pages are checked by `mkdocs build --strict`, which
scripts/test.sh runs before pytest.)"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

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


def _hooks() -> ModuleType:
    """scripts/docs_hooks.py, the build's own hooks (mkdocs.yml loads it by path)."""
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_api_pages_show_every_operation_of_the_schema() -> None:
    hooks = _hooks()
    schema_path = ROOT / "tests" / "data" / "openapi.json"
    pages = "\n".join(hooks.api_pages(hooks.load_api(schema_path)).values())
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    for path, item in schema["paths"].items():
        for method in ("get", "post", "put", "patch", "delete"):
            if method in item:
                heading = f"## {item[method]['summary']} {{#{item[method]['operationId']}}}"
                where = f"\n`{method.upper()} {path}`\n"
                # An operation for a key's own tenant is listed once, with its twin's path.
                assert (heading in pages and where in pages) or f"Also at `{path}`" in pages, path
    for name in schema["components"]["schemas"]:
        assert f"{{#schema-{name}}}" in pages


def test_a_readme_link_to_a_missing_page_or_anchor_is_a_problem(tmp_path: Path) -> None:
    hooks = _hooks()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "hermes.md").write_text("# Hermes\n", encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "[ok](docs/hermes.md#hermes) [gone](docs/nothing.md) [bad](docs/hermes.md#nowhere) "
        "[web](https://example.org/x.md)\n",
        encoding="utf-8",
    )
    problems = hooks.readme_problems(tmp_path, {"hermes.md": {"hermes"}})
    assert problems == [
        "README.md links to 'docs/nothing.md': there is no docs/nothing.md",
        "README.md links to 'docs/hermes.md#nowhere': docs/hermes.md has no anchor #nowhere",
    ]
