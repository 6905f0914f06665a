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
from lab_assets.runner.sweeps import materialize_sweep

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


def test_the_paired_t_statistic_and_p_value_by_hand_on_a_fixed_vector():
    """Written out, not SciPy's ttest_rel (which compare.py calls): d = after - before,
    t = mean(d) / (sd(d) / sqrt(n)), p = 2 P(T > |t|) with T ~ Student's t, n - 1 degrees of freedom."""
    sweep = parse_sweep(SWEEP.replace("  isomap: {n_neighbors: 10}\n", "").replace("  lid: {k: [10]}\n", ""), "c.yaml")
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]  # seeds 0-3, in order
    b, a = [0.90, 0.91, 0.92, 0.93], [0.85, 0.87, 0.86, 0.89]
    before = {c: {"trustworthiness@k=5": v} for c, v in zip(cells, b)}
    after = {c: {"trustworthiness@k=5": v} for c, v in zip(cells, a)}
    (row,) = compare.compare(sweep, before, after).itertuples(index=False)
    d = [y - x for x, y in zip(b, a)]  # -0.05, -0.04, -0.06, -0.04
    n, mean = len(d), sum(d) / len(d)
    sd = math.sqrt(sum((v - mean) ** 2 for v in d) / (n - 1))
    t = mean / (sd / math.sqrt(n))
    assert t == pytest.approx(-9.9224, abs=1e-4)  # -0.0475 / (0.0095743 / 2)
    assert row.statistic == pytest.approx(t, rel=1e-9)
    assert row.p_value == pytest.approx(2 * stats.t.sf(abs(t), n - 1), rel=1e-9)
    assert 0.001 < row.p_value < 0.005  # t(3) beyond 9.92 on either side: ~0.22%
    assert row.mean_difference == pytest.approx(mean) and row.verdict == compare.MOVED and row.regressed


@pytest.mark.parametrize(
    "metric, shift, regressed",
    [
        ("trustworthiness", -0.05, True),  # higher is better, it went down: worse
        ("trustworthiness", +0.05, False),  # higher is better, it went up: better
        ("reconstruction_error", +0.05, True),  # lower is better, it went up: worse
        ("reconstruction_error", -0.05, False),  # lower is better, it went down: better
        ("lid", -0.05, False),  # descriptive: moved, never worse
    ],
)
def test_worse_is_counted_in_each_metrics_direction(metric, shift, regressed):
    sweep = parse_sweep(SWEEP.replace("  isomap: {n_neighbors: 10}\n", "") + "  reconstruction_error: {}\n", "c.yaml")
    column = next(m.column for m in sweep.metrics if m.metric == metric)
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]
    before = {c: {column: 0.5 + 0.01 * i} for i, c in enumerate(cells)}
    after = {c: {column: v[column] + shift + 0.001 * (i % 2)} for i, (c, v) in enumerate(before.items())}
    table = compare.compare(sweep, before, after)
    row = table[table["metric"] == column].iloc[0]
    assert row["verdict"] == compare.MOVED and bool(row["regressed"]) is regressed
    words = compare.text("c", table, "test")
    expected = "(descriptive)" if metric == "lid" else ("worse" if regressed else "better")
    assert f"{compare.MOVED}: {expected}" in words or f"{compare.MOVED} {expected}" in words
    assert ("got worse" in compare.counts(table)) is regressed


def lab_compare(capsys, *args) -> tuple[int, str, str]:
    code = main(["compare", "sweeps/cmp.yaml", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def shifted_copy(source, dest, shifts: dict[str, float]) -> None:
    """`dest`: the lab home `source`'s metric files, each column of `shifts` moved by its amount
    plus a little per seed (so the differences have a spread)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source, dest)
    for path in (dest / "assets" / "metrics").rglob("*.parquet"):
        table = pq.read_table(path)
        frame = table.to_pandas()
        for column, amount in shifts.items():
            frame[column] += amount + 0.001 * int(path.parent.name[-1])
        pq.write_table(
            pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(table.schema.metadata), path
        )


def test_the_cli_compares_the_instance_history_and_another_lab_home(lab, capsys, monkeypatch):
    monkeypatch.chdir(lab)
    sweep = SWEEP.replace("  isomap: {n_neighbors: 10}\n", "") + "  reconstruction_error: {}\n"
    (lab / "sweeps" / "cmp.yaml").write_text(sweep)
    assert materialize_sweep(load_sweep("sweeps/cmp.yaml"), workers=1).ok
    code, out, _ = lab_compare(capsys, "--json")
    assert code == 0 and {r["verdict"] for r in json.loads(out)["rows"]} == {compare.NO_BEFORE}  # no before yet
    # No earlier values (a first run, a column new in the sweep): said in words, never "nan".
    for fmt in ([], ["--markdown"]):
        code, out, _ = lab_compare(capsys, *fmt)
        assert code == 0 and "nan" not in out.lower(), out
    [line] = [line for line in lab_compare(capsys)[1].splitlines() if "trustworthiness@k=5" in line]
    assert line.endswith("swissroll | pca: none -> none (0 seeds): no earlier values"), line  # nothing paired

    # Every metric file lost: the cells are computed again, by the same code from the same inputs.
    shutil.copytree(lab / ".lab" / "assets", lab / "pristine" / "assets")
    shutil.rmtree(lab / ".lab" / "assets" / "metrics")
    assert materialize_sweep(load_sweep("sweeps/cmp.yaml"), workers=1).ok
    code, out, _ = lab_compare(capsys, "--json", "--fail-on", "regress")
    rows = json.loads(out)["rows"]
    assert code == 0 and len(rows) == 3 and {r["verdict"] for r in rows} == {compare.IDENTICAL}
    assert all(r["n_pairs"] == 4 for r in rows)

    # Another lab home whose trustworthiness (higher is better) was higher on every seed: worse
    # here, beyond noise: exit 1.
    tw, re = "trustworthiness@k=5", "reconstruction_error@normalized=True,split=test"
    shifted_copy(lab / "pristine", lab / "before", {tw: +0.05})
    code, out, err = lab_compare(capsys, "--against", "before", "--fail-on", "regress")
    assert code == 1 and "moved beyond seed noise: worse" in out and "1 metric(s) got significantly worse" in err
    assert "2 bit-identical not shown" in out  # lid, reconstruction error: the same files
    code, out, _ = lab_compare(capsys, "--against", "before", "--markdown")
    assert code == 0 and "| trustworthiness@k=5 | swissroll | pca |" in out and "| lid" not in out
    # ... lower there: it went up here, which is better: moved, not regressed, exit 0.
    shifted_copy(lab / "pristine", lab / "before", {tw: -0.05})
    code, out, err = lab_compare(capsys, "--against", "before", "--fail-on", "regress")
    assert code == 0 and "moved beyond seed noise: better" in out and "worse" not in out + err
    # A reconstruction error (lower is better) that was lower there went up here: worse, exit 1.
    shifted_copy(lab / "pristine", lab / "before", {re: -0.05})
    code, out, err = lab_compare(capsys, "--against", "before", "--fail-on", "regress")
    assert code == 1 and f"{re}" in out and "moved beyond seed noise: worse" in out and "got significantly" in err
    code, _, err = lab_compare(capsys, "--against", "nowhere")
    assert code == 2 and "not a lab home" in err
