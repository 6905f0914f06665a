"""Code versions by meaning, on real edits: the package and a plugin are copied into a temporary git
repository, one sweep is run, and each edit of the working tree is judged by `lab sweep plan`
(what the next run recomputes) and `lab impact --base HEAD` (what the change stales), which must
name the same cells and assets. Formatting, comments, docstrings, blank lines, a rename in an
asset module and a log message in core/ stale nothing; a helper, the shared kNN code, a plugin's
helper and a changed constant stale exactly their users."""

import dataclasses
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from lab_assets.core.storage import asset_path, parquet_provenance
from lab_assets.dr.methods import METHODS
from lab_assets_tests.conftest import REPO, lab_cli, require_tool
from lab_assets_tests.test_minimal_recompute import git
from lab_assets_tests.test_upgrade import BEFORE_VERSIONS_BY_MEANING

SWEEP = """
name: v
data:
  swissroll: {n_samples: 120, noise: 0.05}
seeds: [0]
methods:
  pca: {}
  diffusion_map: {n_neighbors: 10}
  scaled: {}
metrics:
  trustworthiness: {k: [5]}
"""
PLUGIN = {
    "__init__.py": "from plugins import scaled  # noqa: F401\n",
    "scaled.py": '''"""A plugin method whose estimator lives in a helper module of its own package."""

from lab_assets.dr.methods import METHODS


@METHODS("scaled")
def scaled(seed: int, *, n_components: int = 2):
    """The first coordinates, scaled."""
    from plugins.helper import Scaled

    return Scaled(n_components)
''',
    "helper.py": """import numpy as np

FACTOR = 2.0


class Scaled:
    def __init__(self, n_components):
        self.n_components = n_components

    def fit_transform(self, X):
        return np.asarray(X)[:, : self.n_components] * FACTOR
""",
}


def lab_in(folder, *args):
    done = lab_cli(*args, cwd=folder, timeout=600, env={"PYTHONPATH": str(folder), "LAB_PLUGINS": "plugins"})
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def judged(folder) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """({cell: {asset: why}} the plan finds pending, the same of the cells the impact finds
    stale), in the plan's assets (a model is one step with its embedding); both say the same of
    the report."""
    plan = json.loads(lab_in(folder, "sweep", "plan", "sweeps/v.yaml", "--json").stdout)
    planned = {c["partition"]: c["assets"] for c in plan["cells"] if c["status"] != "fresh"}
    (sweep,) = json.loads(lab_in(folder, "impact", "--base", "HEAD", "--json").stdout)["sweeps"]
    said = {c["cell"]: {a: w for a, w in c["assets"].items() if a in {"embedding", "metrics"}} for c in sweep["stale"]}
    assert plan["report"]["reason"] == sweep["report"]
    return planned, said


def change(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def test_only_a_change_of_meaning_stales_and_exactly_its_users(lab):
    ruff = require_tool(str(Path(sys.executable).parent / "ruff"), "the formatter pass is one of the edits")
    shutil.copytree(REPO / "lab_assets", lab / "lab_assets", ignore=shutil.ignore_patterns("__pycache__"))
    (lab / "plugins").mkdir()
    for name, text in PLUGIN.items():
        (lab / "plugins" / name).write_text(text)
    (lab / "sweeps" / "tiny.yaml").unlink()
    (lab / "sweeps" / "v.yaml").write_text(SWEEP)
    (lab / ".gitignore").write_text(".lab/\n__pycache__/\n")
    git(lab, "init", "-q", "-b", "main")
    git(lab, "add", ".")
    git(lab, "commit", "-q", "-m", "the project")
    lab_in(lab, "sweep", "run", "sweeps/v.yaml", "--workers", "1", "--quiet")
    plan = json.loads(lab_in(lab, "sweep", "plan", "sweeps/v.yaml", "--json").stdout)
    cells = {c["partition"].split("|")[1].split("-")[0]: c["partition"] for c in plan["cells"]}
    assert set(cells) == {"pca", "diffusion_map", "scaled"} and {c["status"] for c in plan["cells"]} == {"fresh"}
    # The lineage: the digest by meaning of the code that computed it, beside the commit.
    prov = parquet_provenance(asset_path("embedding", cells["pca"]))
    assert (prov["code_digest"], prov["git_sha"]) == (METHODS["pca"].code_digest, git(lab, "rev-parse", "HEAD"))
    dr = lab / "lab_assets" / "dr"

    # Nothing that can change a result, all at once, plus one changed constant in pca's entry:
    # pca's cell alone is stale.
    change(dr / "methods" / "diffusion_map.py", "def diffusion_map(", "# a comment\n\n\n\ndef diffusion_map(")
    change(dr / "metrics" / "neighbors.py", '"""', '"""A docstring rewritten. ')
    experiments = lab / "lab_assets" / "defs" / "assets" / "experiments.py"
    experiments.write_text(re.sub(r"\bnotes\b", "library_notes", experiments.read_text()))  # keeps the outputs
    change(lab / "lab_assets" / "core" / "results_cache.py", "is damaged; recomputing", "is damaged, so recomputed")
    change(dr / "methods" / "pca.py", 'svd_solver="full"', 'svd_solver="covariance_eigh"')
    style = ["--isolated", "--line-length", "60", "--config", "format.quote-style='single'"]
    subprocess.run([ruff, "format", *style, "lab_assets", "plugins"], cwd=lab, check=True, capture_output=True)
    assert git(lab, "status", "--porcelain").count("\n") > 50  # the formatter did rewrite the tree
    planned, said = judged(lab)
    assert planned == said == {cells["pca"]: dict.fromkeys(("embedding", "metrics"), "method pca: code changed")}

    git(lab, "checkout", "-q", "--", ".")
    # A science helper only diffusion_map imports, the shared kNN code, a plugin's helper module,
    # a metric added to the sweep: the plan and `lab impact` name the same reasons, each cell's own.
    change(dr / "models" / "diffusion_map.py", "import numpy as np\n", "import numpy as np\n\nEDITED = 1\n")
    change(dr / "metrics" / "neighbors.py", "import numpy as np\n", "import numpy as np\n\nEDITED = 1\n")
    change(lab / "plugins" / "helper.py", "FACTOR = 2.0", "FACTOR = 3.0")
    change(lab / "sweeps" / "v.yaml", "metrics:\n", "metrics:\n  lid: {k: [10]}\n")
    planned, said = judged(lab)
    assert planned == said, (planned, said)
    lid = "metric lid: new column lid@k=10,space=embedding"
    assert said == {
        cells["pca"]: {"metrics": f"{lid}; shared metric code changed (neighbors.py): every metric"},
        cells["diffusion_map"]: dict.fromkeys(("embedding", "metrics"), "method diffusion_map: code changed"),
        cells["scaled"]: dict.fromkeys(("embedding", "metrics"), "method scaled: code changed"),
    }


def test_the_release_before_versions_by_meaning_finds_every_cell_fresh(tmp_path):
    """`lab impact --base 171c77e` over the project's sweeps: the strings this tree emits are those
    171c77e emitted (the version lock, the declared step versions), so no cell of its sweeps is
    stale by code and every results-cache identity is the same (a cell shared with a new sweep file
    owes that file's new measures' columns, as adding a metric would). A later change of meaning in an entry these sweeps use
    stales its cells here, as it will in every lab home on upgrade: say so in layout.CHANGES."""
    require_tool("git", "the base is a commit of this repository")
    home = {"LAB_PROJECT_DIR": str(REPO), "LAB_HOME": str(tmp_path / "lab"), "DAGSTER_HOME": str(tmp_path / "dg")}
    done = lab_cli("impact", "--base", BEFORE_VERSIONS_BY_MEANING, "--json", cwd=REPO, timeout=600, env=home)
    assert done.returncode == 0, done.stderr[-3000:]
    sweeps = json.loads(done.stdout)["sweeps"]
    assert sweeps and all(s["cells"] > 0 for s in sweeps if not s["error"])

    def at_base(folder: str) -> set[str]:
        listed = subprocess.run(
            ["git", "ls-tree", "--name-only", BEFORE_VERSIONS_BY_MEANING, folder],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        return set(listed.stdout.split())

    # What 171c77e declared: its sweep files, and its metrics (one module each). A cell of its sweeps
    # may owe only a column of a metric it did not have (another sweep file of this tree asks for it).
    old_sweeps = at_base("sweeps/")
    old_metrics = {f.rsplit("/", 1)[-1].removesuffix(".py") for f in at_base("lab_assets/dr/metrics/")}
    assert "sweeps/demo.yaml" in old_sweeps and "lid" in old_metrics

    def new_measure_column(reason: str) -> bool:
        words = reason.split()
        return words[0] == "metric" and words[1].rstrip(":") not in old_metrics and "new column" in reason

    stale = {
        s["path"]: [r for reasons in s["reasons"] for r in reasons.split("; ") if not new_measure_column(r)]
        for s in sweeps
        if s["path"] in old_sweeps
    }
    assert stale and stale == {path: [] for path in stale}


def test_a_locked_entry_gives_the_previous_formula_with_this_environment_s_libraries(monkeypatch):
    """The lock keeps 171c77e's byte digest of the code, not its strings: a lab whose scikit-learn
    differs from the one the lock was seeded with computes the string 171c77e computed there."""
    from lab_assets.core import registry, version_lock

    git = require_tool("git", "the previous release's file is read from the repository")
    pca = METHODS["pca"]
    old = subprocess.run(
        [git, "show", f"{BEFORE_VERSIONS_BY_MEANING}:lab_assets/dr/methods/pca.py"], cwd=REPO, capture_output=True
    ).stdout
    assert old, "171c77e's pca.py"
    sha = hashlib.sha256(old).hexdigest()
    assert version_lock.source("method/pca", pca.meaning) == sha
    monkeypatch.setattr(registry, "package_version", lambda name: "9.9-a-lab-s-own")
    naive = json.dumps({"packages": {"scikit-learn": "9.9-a-lab-s-own"}, "source": sha}, separators=(",", ":"))
    assert dataclasses.replace(pca).code_version == hashlib.sha256(naive.encode()).hexdigest()[:8]
    # A change of meaning: the digest by meaning stands for the code, a new string.
    assert version_lock.source("method/pca", "another meaning") == "another meaning"
