"""No import cycles in the package, counting imports inside functions too: a lazy import that
closes a cycle still couples the two modules both ways (the issue-13 cycles were one)."""

import ast
from pathlib import Path

from lab_assets_tests.conftest import REPO

PACKAGE = REPO / "lab_assets"


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    return modules


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its body (`from a import b` names
    module a.b when it exists, else a)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets |= {f"{node.module}.{a.name}" for a in node.names}
        graph[module] = {r for t in targets if t.startswith("lab_assets") and (r := resolve(t)) not in (None, module)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_package_has_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_function_level_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = import_graph()
    assert "lab_assets.defs.definitions" in graph["lab_assets.runner.local"]  # imported inside a function


def test_defs_never_import_the_runner():
    """The runner is the layer above defs: it executes what defs describe."""
    graph = import_graph()
    assert {m: sorted(t for t in ts if t.startswith("lab_assets.runner")) for m, ts in graph.items()
            if m.startswith("lab_assets.defs") and any(t.startswith("lab_assets.runner") for t in ts)} == {}
