"""The test targets of run.py select what they promise: `test-slow` is not empty (pytest's exit 5,
nothing selected, would otherwise be the only thing it ever did), and the default run excludes it."""

import subprocess
import sys

from lab_assets_tests.conftest import REPO

SLOW = {
    "lab_assets_tests/test_slow_sweeps.py::test_bundled_sweep_full_size[demo]",
    "lab_assets_tests/test_slow_sweeps.py::test_bundled_sweep_full_size[dr_benchmark]",
    "lab_assets_tests/test_slow_sweeps.py::test_one_thousand_cells",
    # Over ~30 s each: the default run stays under 15 minutes on CI's 2 cores (AGENTS.md, "Tests").
    "lab_assets_tests/test_browser.py::test_a_person_launches_one_sweeps_missing_cells_and_reads_the_report",
    "lab_assets_tests/test_cluster.py::test_sweep_on_the_cluster_equals_the_embedded_default",
}
FILES = sorted({name.split("::")[0] for name in SLOW})


def collected(*args: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr  # 5 = nothing selected
    return {line for line in out.stdout.splitlines() if "::" in line}


def test_slow_target_selects_the_full_size_sweeps_and_the_scale_run():
    assert SLOW <= collected("-m", "slow", *FILES)


def test_default_run_leaves_the_slow_tests_out():
    assert not SLOW & collected(*FILES, "lab_assets_tests/test_targets.py")
