"""`lab compare`: a sweep's results before and after, per metric and dataset x method, against
seed noise. The statistics against SciPy's paired t-test on synthetic values; the real history
of a real instance (a cell computed twice) and another lab home's files through the CLI."""

import json
import math
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from lab_assets.cli.main import main
from lab_assets.core import keys
from lab_assets.dr import compare
from lab_assets.dr.sweep import load_sweep, parse_sweep
from lab_assets.runner.sweeps import run_sweep

SWEEP = """name: cmp
data:
  swissroll: {n_samples: 120, noise: 0.05}
seeds: [0, 1, 2, 3]
methods:
  pca: {}
  isomap: {n_neighbors: 10}
metrics:
  trustworthiness: {k: [5]}
  lid: {k: [10]}
"""


def values(sweep, rng, shift=None):
    """{cell: {column: value}}: noise per seed, plus `shift` {method key: amount}."""
    out = {}
    for d, m in sweep.cells:
        out[keys.cell_key(d, m)] = {
            c.column: 0.9 + 0.01 * rng.normal() + (shift or {}).get(m, 0.0) for c in sweep.metrics
        }
    return out


def test_verdicts_and_the_paired_t_test_match_scipy():
    sweep = parse_sweep(SWEEP, "cmp.yaml")
    pca, isomap = (m.key for m in sweep.methods)
    before = values(sweep, np.random.default_rng(0))
    after = {c: dict(v) for c, v in before.items()}
    for cell in after:
        if isomap in cell:  # isomap drops by 0.05 on every seed, plus noise: worse beyond noise
            after[cell] = {col: v - 0.05 + 0.002 * (hash(cell) % 3) for col, v in after[cell].items()}
    table = compare.compare(sweep, before, after)
    assert len(table) == 2 * 2  # (trustworthiness, lid) x (pca, isomap)
    rows = {(r.metric_name, r.method): r for r in table.itertuples(index=False)}
    assert rows["trustworthiness", pca].verdict == compare.IDENTICAL and not rows["trustworthiness", pca].regressed
    moved = rows["trustworthiness", isomap]
    cells = sorted((keys.split_data_key(d)[1], keys.cell_key(d, m)) for d, m in sweep.cells if m == isomap)
    b = [before[c]["trustworthiness@k=5"] for _, c in cells]
    a = [after[c]["trustworthiness@k=5"] for _, c in cells]
    reference = stats.ttest_rel(a, b)
    assert moved.p_value == pytest.approx(reference.pvalue) and moved.statistic == pytest.approx(reference.statistic)
    assert moved.mean_difference == pytest.approx(np.mean(np.subtract(a, b)))
    assert moved.mean_before == pytest.approx(np.mean(b)) and moved.n_pairs == 4
    assert moved.verdict == compare.MOVED and moved.regressed  # higher is better, and it went down
    assert rows["lid", isomap].verdict == compare.MOVED and not rows["lid", isomap].regressed  # descriptive

    noisy = {
        c: {col: v + 0.01 * np.random.default_rng(i).normal() for col, v in after[c].items()}
        for i, c in enumerate(before)
    }
    assert (
        compare.compare(sweep, before, noisy)
        .set_index(["metric_name", "method"])
        .loc[("trustworthiness", pca), "verdict"]
        == compare.NOISE
    )
    two = {c: v for c, v in before.items() if "~s0" in c or "~s1" in c}  # two seeds with a value before
    few = compare.compare(sweep, two, after)
    assert set(few[few["method"] == isomap]["verdict"]) == {compare.TOO_FEW}
    assert set(compare.compare(sweep, {}, after)["verdict"]) == {compare.NO_BEFORE}
    nulls = {c: {col: math.nan for col in v} for c, v in before.items()}
    assert set(compare.compare(sweep, nulls, nulls)["verdict"]) == {compare.IDENTICAL}  # null on both sides


def lab_compare(capsys, *args) -> tuple[int, str, str]:
    code = main(["compare", "sweeps/cmp.yaml", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_cli_compares_the_instance_history_and_another_lab_home(lab, capsys, monkeypatch):
    monkeypatch.chdir(lab)
    (lab / "sweeps" / "cmp.yaml").write_text(SWEEP.replace("  isomap: {n_neighbors: 10}\n", ""))
    assert run_sweep(load_sweep("sweeps/cmp.yaml"), workers=1).ok
    code, out, _ = lab_compare(capsys, "--json")
    assert code == 0 and {r["verdict"] for r in json.loads(out)["rows"]} == {compare.NO_BEFORE}  # no before yet

    # Every metric file lost: the cells are computed again, by the same code from the same inputs.
    shutil.copytree(lab / ".lab" / "assets", lab / "before" / "assets")
    shutil.rmtree(lab / ".lab" / "assets" / "metrics")
    assert run_sweep(load_sweep("sweeps/cmp.yaml"), workers=1).ok
    code, out, _ = lab_compare(capsys, "--json", "--fail-on", "regress")
    rows = json.loads(out)["rows"]
    assert code == 0 and len(rows) == 2 and {r["verdict"] for r in rows} == {compare.IDENTICAL}
    assert all(r["n_pairs"] == 4 for r in rows)

    # Another lab home whose trustworthiness was higher on every seed: worse here, beyond noise.
    for path in (lab / "before" / "assets" / "metrics").rglob("*.parquet"):
        table = pq.read_table(path)
        frame = table.to_pandas()
        frame["trustworthiness@k=5"] += 0.05 + 0.001 * int(path.parent.name[-1])
        pq.write_table(
            pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(table.schema.metadata), path
        )
    code, out, err = lab_compare(capsys, "--against", "before", "--fail-on", "regress")
    assert code == 1 and "moved beyond seed noise: worse" in out and "got significantly worse" in err
    assert "1 bit-identical not shown" in out  # lid: the same files
    code, out, _ = lab_compare(capsys, "--against", "before", "--markdown")
    assert code == 0 and "| trustworthiness@k=5 | swissroll | pca |" in out and "| lid" not in out
    code, _, err = lab_compare(capsys, "--against", "nowhere")
    assert code == 2 and "not a lab home" in err
