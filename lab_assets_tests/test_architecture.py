"""The architecture as checks: the import-linter contracts of pyproject.toml (layers, no Dagster in
the domain, private Dagster API only in runtime/, no import cycles), `dg` on the definitions, and ruff
(lint and format, configured in pyproject.toml) on the whole tree."""

import os
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import dagster

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*command: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        **(env or {}),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def _contract(contract_id: str) -> dict:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if c.get("id") == contract_id]
    return contract


def test_import_contracts_are_kept():
    result = _run(str(BIN / "lint-imports"), "--no-cache")
    assert result.returncode == 0, (
        f"lint-imports (pyproject.toml [tool.importlinter]):\n{result.stdout[-6000:]}{result.stderr[-3000:]}"
    )


def test_the_private_dagster_contract_names_every_private_dagster_module():
    # Wildcards replace whole module names only, so the contract lists dagster's private
    # subpackages one by one: a Dagster release that adds one must add it there.
    private = {f"dagster.{m.name}" for m in pkgutil.iter_modules(dagster.__path__) if m.name.startswith("_")}
    listed = set(_contract("private-dagster-only-in-runtime")["forbidden_modules"])
    assert private <= listed, f"add to the contract in pyproject.toml: {sorted(private - listed)}"


def test_dg_lists_and_checks_the_definitions(tmp_path):
    dg = BIN / "dg"
    assert dg.exists(), (
        f"{dg} missing: dagster-dg-cli is pinned in constraints.txt (pip install -c constraints.txt -e '.[test]')"
    )
    # From the repository root ([tool.dg] in pyproject.toml); nothing written into the checkout.
    env = {
        "DAGSTER_HOME": str(tmp_path / "dagster"),
        "LAB_PROJECT_DIR": str(tmp_path),
        "LAB_HOME": str(tmp_path / ".lab"),
    }
    (tmp_path / "dagster").mkdir()
    listed = _run(str(dg), "list", "defs", "--json", env=env)
    assert listed.returncode == 0, listed.stdout[-3000:] + listed.stderr[-3000:]
    for asset in ("data_spec", "embedding", "metrics", "report", "gpt_model"):
        assert asset in listed.stdout, f"dg list defs does not show {asset}"
    checked = _run(str(dg), "check", "defs", env=env)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]


def test_the_tree_passes_ruff_lint_and_format():
    lint = _run(str(BIN / "ruff"), "check", ".")
    assert lint.returncode == 0, f"ruff check (pyproject.toml [tool.ruff]):\n{lint.stdout[-6000:]}{lint.stderr[-2000:]}"
    fmt = _run(str(BIN / "ruff"), "format", "--check", ".")
    assert fmt.returncode == 0, f"ruff format --check: run `.venv/bin/ruff format .`\n{fmt.stdout[-6000:]}"


def test_no_docs_line_over_200_characters_outside_tables():
    docs = [REPO / "README.md", REPO / "AGENTS.md", REPO / "BENCHMARKS.md", REPO / "k8s" / "README.md"]
    long = [
        f"{path.relative_to(REPO)}:{n}: {len(line)} characters"
        for path in [*docs, *sorted((REPO / "docs").glob("*.md"))]
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if len(line) > 200 and not line.lstrip().startswith("|")
    ]
    assert not long, "wrap these lines (tables excepted):\n" + "\n".join(long)
