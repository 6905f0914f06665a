"""Every name a benchmark script imports from `lab_assets` exists: a rename in the package that
forgets a script under benchmarks/ fails here, not the next time someone measures."""

import ast
import importlib

import pytest

from lab_assets_tests.conftest import REPO

SCRIPTS = sorted((REPO / "benchmarks").glob("*.py"))


def _imports(tree: ast.AST):
    """(module, name or None) of every `lab_assets` import, those inside functions too."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "lab_assets":
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "lab_assets":
                    yield alias.name, None


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_a_benchmarks_lab_assets_imports_exist(script):
    missing = []
    for module, name in _imports(ast.parse(script.read_text(), str(script))):
        try:
            found = importlib.import_module(module)
        except ImportError as e:
            missing.append(f"{module}: {e}")
            continue
        if name is not None and not hasattr(found, name):
            try:  # a submodule imported by name
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    assert not missing, f"{script.name} imports what lab_assets no longer has: {missing}"
