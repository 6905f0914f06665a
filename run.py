#!/usr/bin/env python3
"""Set-up and entry commands that need nothing but Python and pip.

    python3 run.py demo        # create .venv if needed, install, materialize sweeps/demo.yaml
    python3 run.py test        # create .venv if needed, install, run the default test suite
    python3 run.py test-slow   # the slow tests (full-size bundled sweeps checked against scikit-learn,
                               # a 1,000-cell run), kept out of the default run
    python3 run.py bench       # the performance suite (~30 min): rewrites the generated block of BENCHMARKS.md

The virtualenv is reused while constraints.txt and pyproject.toml are unchanged (a stamp file
records their hash), so a second run starts at once; materialized assets are reused by `lab`.
"""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".lab_assets-installed"
INPUTS = ("constraints.txt", "pyproject.toml")
NO_TESTS_COLLECTED = 5  # pytest's exit code when a selection is empty: never a pass

TIMED = ["--durations=20"]

COMMANDS = {
    "demo": [str(BIN / "lab"), "sweep", "run", "sweeps/demo.yaml"],
    # Two xdist workers: single-core and mostly waiting test files beside the rest, which run one at
    # a time (they use both cores); lab_assets_tests/conftest.py, pytest_xdist_make_scheduler.
    # --durations: CI's log names the tests that cost the time budget (default target: 12 min).
    "test": [str(BIN / "python"), "-m", "pytest", "-q", "-n", "2", "--dist", "loadscope", *TIMED],
    "test-slow": [str(BIN / "python"), "-m", "pytest", "-q", "-m", "slow", "-n", "2", "--dist", "loadscope", *TIMED],
    "bench": [str(BIN / "python"), "benchmarks/run_all.py"],
}


def ensure_venv() -> None:
    wanted = hashlib.sha256(b"".join((ROOT / f).read_bytes() for f in INPUTS)).hexdigest()
    if STAMP.is_file() and STAMP.read_text() == wanted:
        return
    if not (BIN / "python").exists():
        print(f"run.py: creating {VENV}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    print("run.py: installing pinned dependencies (constraints.txt)", flush=True)
    pip = [str(BIN / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "-c", "constraints.txt", "-e", ".[test]"], cwd=ROOT, check=True)
    STAMP.write_text(wanted)


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    ensure_venv()
    cmd = COMMANDS[sys.argv[1]] + sys.argv[2:]
    code = subprocess.run(cmd, cwd=ROOT).returncode
    if code == NO_TESTS_COLLECTED and sys.argv[1].startswith("test"):
        print(f"run.py: `{sys.argv[1]}` selected no tests (pytest exit 5): a failure, not a pass", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
