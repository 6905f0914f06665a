"""The study ledger: keep/discard against a noise threshold, rows whole or absent, views, and two
processes appending at once without losing a row, on local disk and on S3 (moto's server)."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from lab_assets.core import storage
from lab_assets.training import ledger
from lab_assets_tests.conftest import S3_BUCKET


def _row(exp, val_bpb, trial=None, status=None):
    return {
        "exp": exp,
        "description": "baseline" if exp == 0 else f"lr={exp}",
        "val_bpb": val_bpb,
        "steps": 5,
        "trial": trial or f"s-e{exp:03d}",
        "partition": f"c|s-e{exp:03d}",
        "status": status,
        "config": "{}",
    }


def test_status_keep_discard_with_noise(lab):
    assert ledger.append("s", _row(0, 2.00), noise=0.01)["status"] == "baseline"
    assert ledger.append("s", _row(1, 1.995), noise=0.01)["status"] == "discard"  # within the noise
    assert ledger.append("s", _row(2, 1.95), noise=0.01)["status"] == "keep"
    assert ledger.append("s", _row(3, 1.945), noise=0.01)["status"] == "discard"  # vs the new best 1.95
    assert ledger.append("s", _row(4, None, status="crash"), noise=0.01)["status"] == "crash"
    rows = ledger.rows("s")
    assert [r["status"] for r in rows] == ["baseline", "discard", "keep", "discard", "crash"]
    table = pd.read_parquet(storage.asset_path("study_ledger", "s"))
    assert list(table["exp"]) == [0, 1, 2, 3, 4] and table.columns.tolist() == ledger.COLUMNS
    tsv = storage.read_bytes(ledger.path("s", ".tsv")).decode().splitlines()
    assert tsv[0].split("\t") == ledger.TSV_COLUMNS
    assert all(len(line.split()) == len(ledger.TSV_COLUMNS) for line in tsv)  # `column -t` aligns it
    assert tsv[5].split("\t")[2] == "-" and tsv[5].split("\t")[7] == "crash"


def test_a_journal_from_before_row_objects_is_taken_over_and_the_study_goes_on(lab):
    # `<study>.jsonl`, as the ledger wrote it before rows were objects: a retried trial's latest
    # line wins, and an append killed mid-write left a torn last line.
    old = [
        {**_row(0, 2.0), "status": "baseline", "recorded_at": 1.0},
        {**_row(1, None, status="crash"), "recorded_at": 2.0},
        {**_row(1, 1.9), "status": "keep", "recorded_at": 3.0},
    ]
    journal = ledger.path("s", ".jsonl")
    storage.write_bytes(
        journal,
        "".join(json.dumps({c: r.get(c) for c in ledger.COLUMNS}) + "\n" for r in old).encode() + b'{"exp": 2, "tri',
    )
    assert [(r["exp"], r["status"]) for r in ledger.rows("s")] == [(0, "baseline"), (1, "keep")]
    assert ledger.append("s", _row(2, 1.95), noise=0.0)["status"] == "discard"  # against the imported best, 1.9
    assert [r["exp"] for r in ledger.rows("s")] == [0, 1, 2]
    assert storage.exists(journal)  # left where it was


def test_a_corrupt_line_inside_an_old_journal_is_an_error_naming_it(lab):
    storage.write_bytes(ledger.path("s", ".jsonl"), b'not json\n{"trial": "s-e000"}\n')
    with pytest.raises(ledger.LedgerError, match=r"s\.jsonl line 1 is not valid JSON"):
        ledger.rows("s")


def test_a_row_is_whole_or_absent_and_a_corrupt_one_is_an_error(lab):
    ledger.append("s", _row(0, 2.0), noise=0.0)
    rows_dir = os.path.dirname(ledger.row_path("s", "x"))
    # What a writer killed mid-write leaves (core/storage.atomic_write's temporary): not a row.
    with open(os.path.join(rows_dir, ".s-e001.json.k1ll3d.tmp"), "wb") as f:
        f.write(b'{"exp": 1, "description": "half a ro')
    assert [r["exp"] for r in ledger.rows("s")] == [0]
    assert ledger.append("s", _row(1, 1.0), noise=0.0)["status"] == "keep"
    # A row object edited by hand into something else is an error naming it.
    with open(ledger.row_path("s", "s-e001"), "wb") as f:
        f.write(b"not json")
    with pytest.raises(ledger.LedgerError, match=r"s-e001\.json is not valid JSON"):
        ledger.rows("s")


def test_a_trial_written_again_replaces_its_own_row(lab):
    ledger.append("s", _row(0, 2.0), noise=0.0)
    ledger.append("s", _row(1, 1.0), noise=0.0)
    again = ledger.append("s", _row(1, 1.5), noise=0.0)  # a retried run of exp 1
    assert again["status"] == "keep"  # against exp 0 only, not against its own earlier row
    assert [(r["exp"], r["val_bpb"]) for r in ledger.rows("s")] == [(0, 2.0), (1, 1.5)]


# Two writers in lockstep, by construction rather than by timing: inside each append, after
# reading the rows and before writing its own, each writer waits for the other to reach the same
# point of the same append (a file barrier), so every pair of appends overlaps; each reports its
# intervals.
WRITER = """
import json, sys, time
from pathlib import Path
from lab_assets.training import ledger
me, other, gate = sys.argv[1], sys.argv[2], Path(sys.argv[3])
decide, spans = ledger.decide_status, []


def meet(*args, **kwargs):
    (gate / f"{me}-{len(spans)}").touch()
    deadline = time.time() + 60
    while not (gate / f"{other}-{len(spans)}").exists():
        assert time.time() < deadline, "the other writer never reached this append"
        time.sleep(0.0005)
    return decide(*args, **kwargs)


ledger.decide_status = meet
for i in range(20):
    exp = int(me) * 100 + i
    start = time.time()
    ledger.append("race", {"exp": exp, "description": "d", "val_bpb": 2.0 - exp / 1000, "steps": 1,
                           "trial": f"t{exp}", "partition": f"c|t{exp}", "config": "{}"}, noise=0.0)
    spans.append((start, time.time()))
print(json.dumps(spans))
"""


def two_writers_at_once(gate) -> None:
    gate.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, me, other, str(gate)],
            env=os.environ.copy(),
            stdout=subprocess.PIPE,
            text=True,
        )
        for me, other in (("1", "2"), ("2", "1"))
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    spans_1, spans_2 = (json.loads(out) for out in outs)
    overlapping = [a_start < b_end and b_start < a_end for (a_start, a_end), (b_start, b_end) in zip(spans_1, spans_2)]
    assert all(overlapping), "the writers did not append at the same time"
    assert len(list(gate.iterdir())) == 40  # each append met the other inside it: overlap by construction


def assert_every_row_kept():
    rows = ledger.rows("race")
    assert sorted(r["trial"] for r in rows) == sorted(f"t{w * 100 + i}" for w in (1, 2) for i in range(20))
    assert all(r["status"] in ("baseline", "keep", "discard") for r in rows)
    # The views, written last by whichever writer finished last, hold every row too.
    assert sorted(storage.read_parquet(storage.asset_path("study_ledger", "race"))["trial"]) == sorted(
        r["trial"] for r in rows
    )
    assert len(storage.read_bytes(ledger.path("race", ".tsv")).decode().splitlines()) == 1 + 40


def test_two_processes_appending_at_once_lose_no_row(lab, tmp_path):
    two_writers_at_once(tmp_path / "gate")
    assert_every_row_kept()


@pytest.mark.slow
def test_two_processes_appending_at_once_on_s3_lose_no_row(lab, s3, tmp_path):
    two_writers_at_once(tmp_path / "gate")
    assert_every_row_kept()
    stored = [
        o["Key"] for o in s3.list_objects_v2(Bucket=S3_BUCKET, Prefix="lab/assets/study_ledger/").get("Contents", [])
    ]
    assert len([k for k in stored if k.startswith("lab/assets/study_ledger/race/")]) == 40
    assert not (lab / ".lab" / "assets").exists()  # nothing on the local disk
