"""`lab check`: everything a lab's CI can know about the project without running a cell. The
definitions load (and `dg check defs` passes where the project declares `[tool.dg]`); every
sweep and study file parses and passes the plan-time checks (`dr/sweep.py`'s limits); every
registry entry has its declarations (`dr/declarations.py`). One `Problem` per file and field."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from lab_assets.core.input_files import InputError
from lab_assets.core.settings import project_dir
from lab_assets.core.yaml_lines import field_line
from lab_assets.dr.declarations import declaration_problems

DG_TIMEOUT = 300  # seconds: `dg check defs` loads the definitions in its own process


@dataclass(frozen=True)
class Problem:
    file: str  # relative to the project folder when inside it (what a CI annotation needs)
    line: int | None
    field: str
    message: str

    def text(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


def _relative(path: str | Path) -> str:
    p = Path(path).resolve()
    try:
        return str(p.relative_to(project_dir()))
    except ValueError:
        return str(p)


def input_problems(path: Path, error: InputError) -> list[Problem]:
    """A sweep or study file's error (lines `<file>: <field>: <problem>`) as problems with the
    line each field is written on."""
    text = path.read_text(errors="replace") if path.exists() else ""
    out = []
    for raw in str(error).splitlines():
        rest = raw.removeprefix(f"{path}: ")
        field, _, problem = rest.partition(": ")
        if " " in field or not problem:  # not a field: the whole file (not YAML, not a mapping)
            field, problem = "", rest
        out.append(Problem(_relative(path), field_line(text, field), field, problem))
    return out


def file_problems() -> list[Problem]:
    """Every sweep file under `sweeps/` and study file under `studies/`, parsed with the
    plan-time checks; two sweeps with one name (their cells and report would be one) too."""
    from lab_assets.defs.sensors import sweep_files
    from lab_assets.defs.study_sensor import study_files
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.training.study import load_study

    out: list[Problem] = []
    names: dict[str, Path] = {}
    for path in sweep_files():
        try:
            sweep = load_sweep(path)
        except InputError as e:
            out += input_problems(path, e)
            continue
        if sweep.name in names:
            out.append(
                Problem(
                    _relative(path),
                    field_line(path.read_text(), "name"),
                    "name",
                    f"{sweep.name!r} is also the name of {_relative(names[sweep.name])}: a sweep's name "
                    "is its report's and its key record's, so give each file its own",
                )
            )
        names.setdefault(sweep.name, path)
    for path in study_files():
        try:
            load_study(path)
        except InputError as e:
            out += input_problems(path, e)
    return out


def definition_problems(with_dg: bool = True) -> list[Problem]:
    """The definitions load and validate (what the webserver and the daemon do), then `dg check
    defs` in its own process when the project declares `[tool.dg]` (pyproject.toml)."""
    import dagster as dg

    where = "lab_assets/defs/definitions.py"
    try:
        from lab_assets.defs.definitions import defs

        dg.Definitions.validate_loadable(defs)
    except Exception as e:  # noqa: BLE001 - whatever fails to load is the problem reported
        first = (str(e).strip().splitlines() or [""])[0]
        return [Problem(where, None, "definitions", f"{type(e).__name__}: {first}")]
    if not with_dg or not _declares_dg(project_dir() / "pyproject.toml"):
        return []
    exe = Path(sys.executable).parent / "dg"
    if not exe.exists():
        return [
            Problem("pyproject.toml", None, "tool.dg", f"dg is not installed beside {sys.executable} (dagster-dg-cli)")
        ]
    done = subprocess.run(
        [str(exe), "check", "defs"], cwd=project_dir(), capture_output=True, text=True, timeout=DG_TIMEOUT
    )
    if done.returncode == 0:
        return []
    said = [
        ln.strip() for ln in (done.stderr + done.stdout).splitlines() if ln.strip() and "virtual environment" not in ln
    ]
    return [
        Problem(
            "pyproject.toml",
            None,
            "tool.dg",
            f"`dg check defs` failed (exit {done.returncode}): " + (said[-1] if said else "no output"),
        )
    ]


def _declares_dg(pyproject: Path) -> bool:
    try:
        return "dg" in tomllib.loads(pyproject.read_text()).get("tool", {})
    except (OSError, tomllib.TOMLDecodeError):
        return False


def check_project(with_dg: bool = True) -> list[Problem]:
    declarations = [Problem(_relative(d.file), d.line, d.field, d.problem) for d in declaration_problems()]
    return [*definition_problems(with_dg), *file_problems(), *declarations]
