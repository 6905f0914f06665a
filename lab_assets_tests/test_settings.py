"""Every `LAB_*` variable and DAGSTER_HOME is read in `lab_assets/core/settings.py` only: an AST scan
of the package fails on a read of one elsewhere (writes, a child process's environment, stay free)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from lab_assets.core import settings, settings_doc

PACKAGE = Path(settings.__file__).resolve().parents[1]
THE_READER = PACKAGE / "core" / "settings.py"


def governed(name: str) -> bool:
    return name.startswith("LAB_") or name == "DAGSTER_HOME"


class _Reads(ast.NodeVisitor):
    """Reads of the environment whose key is (or may be) a governed name: `os.environ.get(k)`,
    `os.environ[k]`, `os.getenv(k)`, `k in os.environ`, a `pop` whose value is used. A key is
    resolved when it is a string, a module-level string constant, a settings constant, or a loop
    variable over a literal sequence of those."""

    def __init__(self, tree: ast.Module):
        self.found: list[tuple[int, str]] = []
        self.environ = {"os.environ", "os.environb"}
        self.getenv = {"os.getenv", "os.getenvb"}
        self.constants: dict[str, set[str]] = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "os":
                for alias in node.names:
                    local = alias.asname or alias.name
                    if alias.name in ("environ", "environb"):
                        self.environ.add(local)
                    if alias.name in ("getenv", "getenvb"):
                        self.getenv.add(local)
            if isinstance(node, ast.ImportFrom) and node.module == "lab_assets.core.settings":
                for alias in node.names:
                    value = getattr(settings, alias.name, None)
                    if isinstance(value, str):
                        self.constants[alias.asname or alias.name] = {value}
            value = node.value if isinstance(node, ast.Assign) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.constants[target.id] = {value.value}
        for node in ast.walk(tree):  # loop variables: `for var in ("LAB_X", "LAB_Y")`, comprehensions alike
            if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
                values = self._sequence(node.iter)
                if values:
                    self.constants.setdefault(node.target.id, set()).update(values)
        self._parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        self.visit(tree)

    def _sequence(self, node: ast.expr) -> set[str]:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return set().union(*(self.keys(e) for e in node.elts)) if node.elts else set()
        return self.keys(node)

    def keys(self, node: ast.expr) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, ast.Name):
            return self.constants.get(node.id, set())
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) in ("settings", "lab_assets.core.settings"):
            value = getattr(settings, node.attr, None)
            if isinstance(value, str):
                return {value}
            if isinstance(value, tuple):
                return {v for v in value if isinstance(v, str)}
        return set()

    def _flag(self, node: ast.AST, key: ast.expr) -> None:
        names = sorted(k for k in self.keys(key) if governed(k))
        if names:
            self.found.append((node.lineno, f"{ast.unparse(node)} (reads {', '.join(names)})"))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if node.args and ast.unparse(func) in self.getenv:
            self._flag(node, node.args[0])
        if node.args and isinstance(func, ast.Attribute) and ast.unparse(func.value) in self.environ:
            used = not isinstance(self._parents.get(node), ast.Expr)  # `os.environ.pop(k)` alone removes
            if func.attr in ("get", "setdefault") or (func.attr == "pop" and used):
                self._flag(node, node.args[0])
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load) and ast.unparse(node.value) in self.environ:
            self._flag(node, node.slice)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)) and ast.unparse(right) in self.environ:
                self._flag(node, node.left)
        self.generic_visit(node)


def reads(source: str) -> list[tuple[int, str]]:
    return _Reads(ast.parse(source)).found


def test_lab_variables_and_dagster_home_are_read_in_settings_only():
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != THE_READER
        for line, what in reads(path.read_text())
    ]
    assert not offenders, "read these through lab_assets/core/settings.py:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "source",
    [
        "import os\nos.environ.get('LAB_HOME')",
        "import os\nos.environ['DAGSTER_HOME']",
        "import os\nos.getenv('LAB_EXECUTOR', 'in_process')",
        "from os import environ\nif 'LAB_STORAGE_URL' in environ: pass",
        "from os import getenv\ngetenv('LAB_DEVICE')",
        "import os\nIDLE = 'LAB_SERVICE_IDLE'\nfloat(os.environ.get(IDLE, '1800'))",
        "import os\nfrom lab_assets.core.settings import SERVICE_VAR as SWITCH\nos.environ.get(SWITCH)",
        "import os\nfrom lab_assets.core import settings\nos.environ[settings.HOME_VAR]",
        "import os\n{k: os.environ.get(k) for k in ('LAB_STORAGE_OPTIONS', 'LAB_EXECUTOR')}",
        "import os\nurl = os.environ.pop('LAB_STORAGE_URL', None)",
    ],
)
def test_the_scan_finds_a_read(source):
    assert reads(source), source


@pytest.mark.parametrize(
    "source",
    [
        "import os\nos.environ['DAGSTER_HOME'] = '/x'",  # a write: this process's children inherit it
        "import os\nenv = {**os.environ, 'LAB_HOME': '/x'}",  # a child's environment
        "import os\nfor var in ('LAB_HOME', 'LAB_EXECUTOR'):\n    os.environ.pop(var, None)",
        "import os\nos.environ.get('WANDB_MODE')",  # not a lab setting
        "import os\ndict(os.environ)",
    ],
)
def test_the_scan_leaves_writes_and_other_variables_alone(source):
    assert not reads(source), source


# ---- docs/settings.md: generated from settings.py (core/settings_doc.py) and kept current here


def test_docs_settings_md_is_what_settings_py_generates():
    assert settings_doc.DOC.read_text() == settings_doc.render(), (
        f"docs/settings.md is out of date: `{settings_doc.COMMAND}`"
    )


def test_every_variable_settings_py_names_has_a_documented_reader():
    # A name read another way than `_get` in a public function (os.environ directly) would be missing from the page.
    source = THE_READER.read_text()
    named = {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"LAB_[A-Z_]+|DAGSTER_HOME", node.value)
    }
    documented = {r.variable for r in settings_doc.readers(source)} | set(settings.TESTS_ONLY)
    assert not named - documented, (
        f"read these through a documented function of settings.py: {sorted(named - documented)}"
    )


def test_every_variable_the_tests_benchmarks_and_run_py_read_is_on_the_page():
    repo = PACKAGE.parent
    files = [
        *sorted((repo / "lab_assets_tests").rglob("*.py")),
        *sorted((repo / "benchmarks").rglob("*.py")),
        repo / "run.py",
    ]
    read = {
        name
        for path in files
        for _, what in reads(path.read_text())
        for name in what.rpartition("(reads ")[2][:-1].split(", ")
    }
    page = settings_doc.DOC.read_text()
    assert read, "the scan found no read at all: it is broken"
    missing = sorted(name for name in read if f"| `{name}` |" not in page)
    assert not missing, f"add these to settings.TESTS_ONLY (or read them through settings.py): {missing}"


def test_a_new_reader_is_on_the_page_without_being_registered():
    source = (
        THE_READER.read_text()
        + '\n\ndef gpus() -> int:\n    """LAB_GPUS: how many GPUs a run may use."""\n    return int(_get("LAB_GPUS", "1"))\n'
    )
    assert "| `LAB_GPUS` | `gpus()` | how many GPUs a run may use. |" in settings_doc.render(source)


def test_a_reader_without_a_docstring_is_refused():
    with pytest.raises(settings_doc.UndocumentedError, match=r"gpus\(\) reads LAB_GPUS but has no docstring"):
        settings_doc.readers('GPUS = "LAB_GPUS"\n\ndef gpus():\n    return _get(GPUS)\n')


@pytest.mark.parametrize(
    "text",
    [
        '[tool.lab_assets]\nplugins = ["mylab.entries"]\n',
        "[tool.'lab_assets']\nplugins = ['mylab.entries']\n",
        '[tool]\nlab_assets.plugins = ["mylab.entries"]\n',
        'tool.lab_assets = {plugins = ["mylab.entries"]}\n',
    ],
)
def test_the_project_names_its_plugins_in_any_toml_form(tmp_path, monkeypatch, text):
    monkeypatch.setenv(settings.PROJECT_DIR_VAR, str(tmp_path))
    monkeypatch.setenv(settings.PLUGINS_VAR, "extra, mylab.entries")
    (tmp_path / "pyproject.toml").write_text(text + '\n[project]\nname = "mylab"\ndependencies = ["lab-assets"]\n')
    assert settings.project_plugins() == ["mylab.entries"]
    assert settings.lab_plugins() == ["mylab.entries", "extra"]  # the project's first, each once


def test_a_pyproject_without_a_table_of_ours_names_no_plugin(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.PROJECT_DIR_VAR, str(tmp_path))
    assert settings.project_plugins() == []  # no pyproject.toml at all
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mylab"\ndependencies = ["lab-assets>=1"]\n')
    assert settings.project_plugins() == []
