"""No import cycles between our modules (the layers themselves: `lint-imports`, pyproject.toml).

The graph is grimp's (import-linter's own), with every import in it: at module level, inside a
function, and under `if TYPE_CHECKING:`. A cycle hidden in a function is still a cycle; the way
out is a lower module that both sides use.
"""

from __future__ import annotations

import grimp

PACKAGES = (
    "agentspec",
    "tenants",
    "indexing",
    "facts",
    "retrieval",
    "operations",
    "agenttools",
    "surfaces",
    "memoryadmin",
    "hermes_provider",
    "mcp_server",
)


def _cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """For every import that is part of a cycle, the shortest way back: (a, b, ..., a)."""
    found = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if imported not in graph.modules or imported == importer:
                continue
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                found.append((importer, *back))
    return found


def test_our_modules_import_one_another_without_cycles() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert "facts.services" in graph.modules and "facts.tasks" in graph.modules
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_check_finds_a_cycle_through_other_modules() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=importer, imported=imported)
    assert ("p.a", "p.b", "p.c", "p.a") in _cycles(graph)
    assert all("p.d" not in cycle for cycle in _cycles(graph))
