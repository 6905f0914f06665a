"""What naming plugins in the project's `[tool.lab_assets]` costs the fastest command there is: the
saved no-op answer of `lab sweep run` (a fresh process each time). Two projects with the same
materialized tiny sweep, one with a pyproject.toml (this repository's, plus `[tool.lab_assets]
plugins = []`), one without (the baseline: what a project had before the table existed); their
no-ops interleaved.

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
# The `lab` script, as a person runs it (`python -m` would put the project folder on the import path).
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


def project(folder: Path, pyproject: str | None) -> tuple[dict, list[str]]:
    """A project in `folder` with the tiny sweep run (its answer saved): its environment and command."""
    (folder / "sweeps").mkdir(parents=True)
    (folder / "sweeps" / "tiny.yaml").write_text(SWEEP)
    if pyproject is not None:
        (folder / "pyproject.toml").write_text(pyproject)
    env = {**os.environ, "LAB_PROJECT_DIR": str(folder), "LAB_SERVICE": "0", "LAB_WANDB": "off"}
    for var in ("LAB_HOME", "DAGSTER_HOME", "LAB_STORAGE_URL", "LAB_PLUGINS"):
        env.pop(var, None)
    command = [*LAB, "sweep", "run", "sweeps/tiny.yaml", "--workers", "1"]
    measure.run(command, env, folder)  # materializes, then saves its answer
    return env, command


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args()
    config = (ROOT / "pyproject.toml").read_text() + "\n[tool.lab_assets]\nplugins = []\n"
    with tempfile.TemporaryDirectory() as tmp:
        cases = {"with": project(Path(tmp) / "with", config), "without": project(Path(tmp) / "without", None)}
        times: dict[str, list[float]] = {case: [] for case in cases}
        for _ in range(args.repeats):
            for case, (env, command) in cases.items():
                done = measure.run(command, env, Path(env["LAB_PROJECT_DIR"]))
                assert "0 datasets and 0 cells materialized" in done.stdout, done.stdout
                times[case].append(round(done.seconds, 3))
    medians = {case: statistics.median(values) for case, values in times.items()}
    result = {"noop_median_s": medians, "with_over_without": round(medians["with"] / medians["without"], 3)}
    print(json.dumps({**result, "runs": times}, indent=2))


if __name__ == "__main__":
    main()
