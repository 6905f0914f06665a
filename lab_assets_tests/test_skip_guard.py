"""Under CI=true a skip not listed in `conftest.EXPECTED_SKIPS` fails the run; the GPU tests'
skip without CUDA does not. Each case is a real pytest session in a subprocess."""

import os
import subprocess
import sys

import pytest

from lab_assets_tests.conftest import REPO

if os.environ.get("LAB_SKIP_GUARD_DEMO") == "1":  # only in the sessions the tests below start

    def test_demo_skip():
        pytest.skip("a mount that failed")


def session(*tests: str, ci: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CI": ci, "LAB_SKIP_GUARD_DEMO": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def test_an_unexpected_skip_fails_under_ci_and_a_gpu_test_without_cuda_does_not():
    demo, gpu = (
        "lab_assets_tests/test_skip_guard.py::test_demo_skip",
        "lab_assets_tests/test_gpu.py::test_cuda_is_detected_with_bf16_and_compile",
    )
    r = session(demo, gpu, ci="true")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 test(s) skipped that must run here" in r.stdout
    assert "test_skip_guard.py::test_demo_skip: Skipped: a mount that failed" in r.stdout
    assert "test_gpu.py::" not in r.stdout  # expected: listed nowhere, whether it skipped (no CUDA) or ran
    r = session(demo, ci="")  # a developer's machine: the skip is shown, the run passes
    assert r.returncode == 0 and "1 skipped" in r.stdout and "must run here" not in r.stdout, r.stdout + r.stderr
