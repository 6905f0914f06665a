"""The study ledger: keep/discard against a noise threshold, torn-line repair, views, and two
processes appending at once without losing a row."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from lab_assets.core import storage
from lab_assets.training import ledger


def _row(exp, val_bpb, trial=None, status=None):
    return {"exp": exp, "description": "baseline" if exp == 0 else f"lr={exp}", "val_bpb": val_bpb, "steps": 5,
            "trial": trial or f"s-e{exp:03d}", "partition": f"c|s-e{exp:03d}", "status": status, "config": "{}"}


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


def test_torn_last_line_is_detected_and_repaired(lab):
    ledger.append("s", _row(0, 2.0), noise=0.0)
    journal = ledger.path("s", ".jsonl")
    with open(journal, "ab") as f:
        f.write(b'{"exp": 1, "description": "half a li')  # a writer killed mid-append
    with pytest.warns(UserWarning, match="dropped a torn last line"):
        assert [r["exp"] for r in ledger.rows("s")] == [0]
    assert open(journal, "rb").read().endswith(b"\n")
    assert b"half a li" in open(journal + ".torn", "rb").read()
    assert ledger.append("s", _row(1, 1.0), noise=0.0)["status"] == "keep"
    assert [r["exp"] for r in ledger.rows("s")] == [0, 1]


def test_a_corrupt_line_inside_the_journal_is_an_error(lab):
    ledger.append("s", _row(0, 2.0), noise=0.0)
    with open(ledger.path("s", ".jsonl"), "ab") as f:
        f.write(b"not json\n")
    with pytest.raises(ledger.LedgerError, match=r"s\.jsonl line 2 is not valid JSON"):
        ledger.rows("s")


WRITER = """
import sys
from lab_assets.training import ledger
for i in range(50):
    exp = int(sys.argv[1]) * 100 + i
    ledger.append("race", {"exp": exp, "description": "d", "val_bpb": 2.0 - exp / 1000, "steps": 1,
                           "trial": f"t{exp}", "partition": f"c|t{exp}", "config": "{}"}, noise=0.0)
"""


def test_two_processes_appending_lose_no_row(lab):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(w)], env=os.environ.copy()) for w in (1, 2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    rows = ledger.rows("race")
    assert len(rows) == 100 and len({r["trial"] for r in rows}) == 100
    lines = open(ledger.path("race", ".jsonl")).read().splitlines()
    assert all(json.loads(line)["exp"] >= 100 for line in lines)
    assert len(pd.read_parquet(storage.asset_path("study_ledger", "race"))) == 100
