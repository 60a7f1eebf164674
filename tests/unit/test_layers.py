"""The package's imports point one way: no cycles, and no layer reaching up to one above it.

Every module of server/sessiontree is parsed (not imported) and each import becomes an edge,
wherever it stands: at the top, inside a function, or under `if TYPE_CHECKING:`. Type-only
imports count: a cycle the type checker needs is still a cycle in the design, to be removed
rather than hidden. `from pkg import name` is an edge to the module `pkg.name` when there is one,
else to `pkg` itself (its `__init__`). The parent packages Python runs on the way to a module
are not edges: they are where the module lives, not what it uses (counting them would tie every
module of a package to whatever its `__init__` re-exports).

Layers, lowest first; a module may import its own layer and those below it:

- the domain: the format, store/, tree/, search/, backend/ (where sessions are kept) and everything
  not listed below;
- rpc/: JSON-RPC framing and dispatch, knowing nothing of the methods;
- protocol: the wire types, built on the domain's own types;
- the service (service, open_session, summaries, export_input): its methods take and return the protocol's
  params and results;
- the adapters: the daemon's handlers (server, client_summary, watch), and the front ends (client,
  cli, cli_store, output, render, schema, __main__).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "sessiontree"

LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("rpc", frozenset({"sessiontree.rpc"})),
    ("protocol", frozenset({"sessiontree.protocol"})),
    ("service", frozenset({"sessiontree.service", "sessiontree.open_session", "sessiontree.summaries",
                           "sessiontree.export_input"})),
    (
        "adapters",
        frozenset(
            {
                "sessiontree.server",
                "sessiontree.client_summary",
                "sessiontree.watch",
                "sessiontree.client",
                "sessiontree.cli",
                "sessiontree.cli_store",
                "sessiontree.output",
                "sessiontree.render",
                "sessiontree.schema",
                "sessiontree.__main__",
            }
        ),
    ),
)
LAYER_NAMES = ("domain", *(name for name, _ in LAYERS))


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    for rank, (_name, prefixes) in enumerate(LAYERS, start=1):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return 0


def _imported(tree: ast.Module, module: str, is_package: bool, known: set[str]) -> Iterator[str]:
    """The package's modules one module imports, resolved against the modules that exist."""
    here = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    yield target
                elif base in known:
                    yield base


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    files = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    known = set(files)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[module] = set(_imported(tree, module, path.name == "__init__.py", known)) - {module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module, as a chain
    that ends where it starts (Tarjan's algorithm, then a walk inside the component)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_chain(graph, component) for component in components]


def _chain(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest way from the component's first module back to itself (breadth first)."""
    start = min(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for nxt in sorted(graph[node] & component):
                if nxt == start:
                    chain = [node]
                    while chain[-1] != start:
                        chain.append(came_from[chain[-1]])
                    return [start, *reversed(chain[:-1]), start]
                if nxt not in came_from:
                    came_from[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle in {sorted(component)}")


def violations(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if layer_of(target) > layer_of(module):
                found.append(
                    f"{module} ({LAYER_NAMES[layer_of(module)]}) imports {target} ({LAYER_NAMES[layer_of(target)]})"
                )
    return found


def test_the_package_has_no_import_cycle() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(chain) for chain in found)


def test_no_module_imports_a_layer_above_its_own() -> None:
    found = violations(import_graph())
    assert not found, "imports against the layers:\n" + "\n".join(found)


def test_the_graph_sees_relative_type_only_and_package_imports(tmp_path: Path) -> None:
    """The checks above are only as good as the graph: a cycle hidden under TYPE_CHECKING, a
    relative import two levels up and an import of a package's __init__ must all be edges."""
    root = tmp_path / "sessiontree"
    (root / "store").mkdir(parents=True)
    (root / "tree").mkdir()
    (root / "__init__.py").write_text("")
    (root / "protocol.py").write_text("from .store import Session\n")
    (root / "store" / "__init__.py").write_text("from .session import Session\n")
    (root / "store" / "session.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..tree.fork import Plan\n"
    )
    (root / "tree" / "__init__.py").write_text("")
    (root / "tree" / "fork.py").write_text("from .. import protocol\nfrom ..store import Session\n")
    graph = import_graph(root)
    assert graph["sessiontree.store.session"] == {"sessiontree.tree.fork"}
    assert graph["sessiontree.tree.fork"] == {"sessiontree.protocol", "sessiontree.store"}
    assert cycles(graph) == [
        ["sessiontree.protocol", "sessiontree.store", "sessiontree.store.session", "sessiontree.tree.fork", "sessiontree.protocol"]
    ]
    assert violations(graph) == ["sessiontree.tree.fork (domain) imports sessiontree.protocol (protocol)"]
