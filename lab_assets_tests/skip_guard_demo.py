"""A module that skips as it is collected (test_skip_guard.py names it in its sessions; no run
collects it otherwise: its name is not a test file's)."""

import pytest

pytest.skip("a library that failed to import", allow_module_level=True)


def test_never_collected():
    raise AssertionError("a module-level skip collects nothing")
