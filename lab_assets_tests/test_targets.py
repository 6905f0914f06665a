"""The test targets of run.py select what they promise: `test-slow` is not empty (pytest's exit 5,
nothing selected, would otherwise be the only thing it ever did), and the default run excludes it."""

import subprocess
import sys

from lab_assets_tests.conftest import REPO

SLOW = {
    "lab_assets_tests/test_slow_sweeps.py::test_bundled_sweep_full_size[demo-ks0]",
    "lab_assets_tests/test_slow_sweeps.py::test_bundled_sweep_full_size[dr_benchmark-ks1]",
    "lab_assets_tests/test_slow_sweeps.py::test_one_thousand_cells",
}


def collected(*args: str) -> set[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr  # 5 = nothing selected
    return {line for line in out.stdout.splitlines() if "::" in line}


def test_slow_target_selects_the_full_size_sweeps_and_the_scale_run():
    assert SLOW <= collected("-m", "slow", "lab_assets_tests/test_slow_sweeps.py")


def test_default_run_leaves_the_slow_tests_out():
    assert not SLOW & collected("lab_assets_tests/test_slow_sweeps.py", "lab_assets_tests/test_targets.py")
