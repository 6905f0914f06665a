"""What reading the project's `[tool.lab_assets]` costs the fastest command there is: the saved
no-op answer of `lab sweep run` (a fresh process each time). One project, one materialized tiny
sweep; then, interleaved, the no-op with a pyproject.toml in the project folder (a real one, this
repository's, with `[tool.lab_assets] plugins = []` added: parsed once per process) and without
one (a stat only: what the code before the table read, the baseline).

    .venv/bin/python benchmarks/project_config.py --repeats 10

Prints one JSON object: medians and every run, and the ratio with / without."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# The `lab` script, as a person runs it: `python -m` would put the project folder on the import path,
# whose stamp (the folder's mtime) the saved answer checks, and the file toggled below changes it.
LAB = [str(Path(sys.executable).with_name("lab"))]
SWEEP = """name: tiny
data:
  swissroll: {n_samples: 150, noise: 0.05}
seeds: [0]
methods:
  pca: {}
metrics:
  trustworthiness: {k: [5]}
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "sweeps").mkdir()
        (project / "sweeps" / "tiny.yaml").write_text(SWEEP)
        env = {**os.environ, "LAB_PROJECT_DIR": str(project), "LAB_SERVICE": "0", "LAB_WANDB": "off"}
        for var in ("LAB_HOME", "DAGSTER_HOME", "LAB_STORAGE_URL", "LAB_PLUGINS"):
            env.pop(var, None)
        command = [*LAB, "sweep", "run", "sweeps/tiny.yaml", "--workers", "1"]
        first = measure.run(command, env, project)
        pyproject = (ROOT / "pyproject.toml").read_text() + "\n[tool.lab_assets]\nplugins = []\n"
        measure.run(command, env, project)  # the run above saved its answer; this one reads it once
        times: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(args.repeats):
            for case in ("with", "without"):
                path = project / "pyproject.toml"
                if case == "with":
                    path.write_text(pyproject)
                elif path.exists():
                    path.unlink()
                done = measure.run(command, env, project)
                assert "materialized" in done.stdout, done.stdout
                times[case].append(round(done.seconds, 3))
    medians = {case: statistics.median(values) for case, values in times.items()}
    print(
        json.dumps(
            {
                "first_run_s": round(first.seconds, 2),
                "noop_median_s": medians,
                "with_over_without": round(medians["with"] / medians["without"], 3),
                "runs": times,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
