"""The saved no-op answer's file guard (`cli/main.py` passes the sweep's artifact paths to
`runner/noop_answer.py`): an artifact deleted or truncated right after a no-op is never answered
from the saved answer; the next run recomputes exactly the cell whose file it was."""

import json
from pathlib import Path

from lab_assets.core import keys, storage
from lab_assets.dr.sweep import load_sweep
from lab_assets_tests.conftest import lab_cli
from lab_assets_tests.test_noop_answer import saved_answer_marked

SWEEP = """
name: two
data:
  swissroll: {n_samples: 120}
seeds: [0, 1]
methods:
  pca: {}
metrics:
  trustworthiness: {k: [5]}
"""


def run(lab) -> dict:
    out = lab_cli("sweep", "run", "sweeps/two.yaml", "--workers", "1", "--json", cwd=lab)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_damaged_artifact_is_never_answered_from_the_saved_noop(lab):
    (lab / "sweeps" / "two.yaml").write_text(SWEEP)
    project = lab / "pyproject.toml"
    project.write_text('[project]\nname = "mine"\n')  # there from the start: its folder's stamp stays as it is
    ran = run(lab)
    assert ran["materialized"]["cells"] == 2
    saved_answer_marked(lab)
    answered = run(lab)
    assert answered["report"] == "from the saved answer"  # the guard's subject: an answer in use
    # One printer whichever path answered: the same keys, `waited` included (issue 40).
    assert {k: sorted(v) if isinstance(v, dict) else None for k, v in answered.items()} == {
        k: sorted(v) if isinstance(v, dict) else None for k, v in ran.items()
    }
    assert answered["waited"] == {job: 0 for job in ran["waited"]}
    sweep = load_sweep(lab / "sweeps" / "two.yaml")
    first, second = (keys.cell_key(d, m) for d, m in sweep.cells)
    for damage, asset, cell in (
        (lambda p: p.unlink(), "embedding", first),
        (lambda p: p.write_bytes(p.read_bytes()[:100]), "metrics", second),
    ):
        saved_answer_marked(lab)
        path = Path(storage.asset_path(asset, cell))  # the lab home is a local folder here
        damage(path)
        out = run(lab)
        assert out["report"] != "from the saved answer"
        assert out["materialized"]["cells"] == 1 and out["before"]["fresh"] == 1, out
        assert len(storage.read_parquet(str(path))) == (120 if asset == "embedding" else 1)  # written again, whole

    # The project's plugins are named in its pyproject.toml: the saved answer ends with any edit of it
    # (a plugin named there can change which code an entry runs), and a no-op saves it again.
    saved_answer_marked(lab)
    project.write_text('[project]\nname = "mine"\n\n[tool.lab_assets]\nplugins = []\n')
    out = run(lab)
    assert out["report"] != "from the saved answer" and out["materialized"]["cells"] == 0, out
    saved_answer_marked(lab)
    assert run(lab)["report"] == "from the saved answer"
