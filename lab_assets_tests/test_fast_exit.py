"""How a finished process ends (core/fast_exit.py): exit handlers run and output is flushed, then
no interpreter teardown, where a native thread pool can abort a finished command."""

import json
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from lab_assets_tests.conftest import lab_cli


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=120
    )


PROGRAM = """
    import atexit, sys
    from lab_assets.core import fast_exit

    fast_exit.end_without_teardown()

    class Teardown:
        def __del__(self):
            print("teardown ran")  # only in the interpreter's teardown: module globals are cleared

    kept = Teardown()
    atexit.register(lambda: print("exit handler ran"))
    sys.stdout.write("unflushed output" + "." * 100_000)  # no newline: still in the buffer at exit
    {end}
"""


def test_a_program_ends_with_its_status_after_its_exit_handlers_and_without_teardown():
    done = _python(PROGRAM.format(end="sys.exit(fast_exit.exiting(3))"))
    assert done.returncode == 3, done.stderr
    assert done.stdout.startswith("unflushed output" + "." * 100_000)  # flushed, whole
    assert "exit handler ran" in done.stdout
    assert "teardown ran" not in done.stdout


def test_a_program_that_raised_exits_as_usual_with_its_traceback():
    done = _python(PROGRAM.format(end="raise RuntimeError('a bug')"))
    assert done.returncode == 1
    assert "RuntimeError: a bug" in done.stderr
    assert "exit handler ran" in done.stdout and "teardown ran" in done.stdout


def test_a_worker_ends_with_the_status_it_was_given():
    done = _python(PROGRAM.format(end="").replace("end_without_teardown()", "end_without_teardown(0)"))
    assert done.returncode == 0 and "exit handler ran" in done.stdout and "teardown ran" not in done.stdout


def test_lab_as_the_program_flushes_its_output_and_keeps_its_status(lab):
    planned = lab_cli("sweep", "plan", "sweeps/tiny.yaml", "--json", cwd=lab)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)  # the whole JSON arrived
    assert plan["counts"]["missing"] == len(plan["cells"]) == 4
    refused = lab_cli("query", "SELECT 6", cwd=lab)
    assert (refused.returncode, refused.stderr) == (2, "lab query: no results yet; run `lab sweep run <file>` first\n")


READ_AND_EXIT = """
    import io, sys
    import pandas as pd
    from lab_assets.core import fast_exit

    fast_exit.end_without_teardown()
    print(len(pd.read_parquet(io.BytesIO(open(sys.argv[1], "rb").read()))))
    sys.exit(fast_exit.exiting(0))
"""


@pytest.mark.slow
def test_a_program_that_read_parquet_on_arrows_thread_pools_never_aborts_at_exit(tmp_path):
    """pandas' reader (pyarrow's dataset scanner, on Arrow's thread pools) aborted 5 of 100 short
    processes at exit ("terminate called without an active exception"); 60 clean ends in a row
    would happen with probability ~0.05 at that rate. A program that ends through fast_exit skips
    the teardown where the abort happens, whatever it used. (The package itself reads Parquet in
    the calling thread, `storage.parquet_table`; that lowers the chance for Dagster's own
    processes, which end the usual way, but no test can show a rare abort gone.)"""
    path = tmp_path / "t.parquet"
    pd.DataFrame({"x": range(100), "y": [str(i) for i in range(100)]}).to_parquet(path)
    ends = [_python(READ_AND_EXIT, str(path)) for _ in range(60)]
    aborted = [(e.returncode, e.stderr[-200:]) for e in ends if e.returncode != 0 or e.stdout.strip() != "100"]
    assert not aborted, aborted
