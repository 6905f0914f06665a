"""From the UI to the code (defs/code_links.py): every asset of the definitions carries a code
reference to its module (a web page of the repository when it has a remote), and a cell's
materialization links to its method's and dataset's own source files, a project's class too."""

from __future__ import annotations

import subprocess
from pathlib import Path

import dagster as dg
import pytest

from lab_assets.defs import code_links

REPO = Path(__file__).resolve().parents[1]
REFERENCES = "dagster/code_references"  # Dagster's key: the UI's "Code references"


@pytest.mark.parametrize(
    "remote, page",
    [
        ("git@github.com:lab/lab_assets.git", ("https://github.com/lab/lab_assets", "github")),
        ("https://github.com/lab/lab_assets.git", ("https://github.com/lab/lab_assets", "github")),
        ("https://someone:ghp_token@github.com/lab/lab_assets", ("https://github.com/lab/lab_assets", "github")),
        (
            "ssh://git@gitlab.example.org:2222/group/sub/proj.git",
            ("https://gitlab.example.org/group/sub/proj", "gitlab"),
        ),
        ("https://bitbucket.org/lab/lab_assets.git", None),  # a host Dagster cannot link to
        ("/srv/git/lab_assets.git", None),
        ("file:///srv/git/lab_assets.git", None),
    ],
)
def test_a_remote_address_becomes_its_web_page_without_credentials(remote, page):
    assert code_links.web_url(remote) == page


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    """A git checkout with one committed module under `pkg/`."""
    top = tmp_path / "checkout"
    (top / "pkg").mkdir(parents=True)
    (top / "pkg" / "mod.py").write_text("X = 1\n")
    git(top, "init", "-q")
    git(top, "add", "pkg/mod.py")
    git(top, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    return top


def test_a_tracked_file_links_to_its_page_at_the_commit_only_when_the_checkout_has_a_remote(checkout):
    module = (checkout / "pkg" / "mod.py").resolve()
    assert code_links.link(module) is None  # no remote: the local path is shown instead
    code_links.read_checkout.cache_clear()
    git(checkout, "remote", "add", "origin", "git@github.com:lab/mine.git")
    sha = git(checkout, "rev-parse", "HEAD")
    assert code_links.link(module) == f"https://github.com/lab/mine/tree/{sha}/pkg/mod.py"
    (checkout / "pkg" / "untracked.py").write_text("Y = 2\n")  # a venv's file inside a checkout, say
    assert code_links.link((checkout / "pkg" / "untracked.py").resolve()) is None
    code_links.read_checkout.cache_clear()


# Where the assets a person looks for first are defined (the rest: any module under defs/assets/).
MODULES = {
    "embedding": "experiments",
    "model": "experiments",
    "metrics": "metrics",
    "dataset": "datasets",
    "raw_dataset": "datasets",
    "report": "reports",
    "data_spec": "specs",
    "sweep_spec": "specs",
}


def test_every_asset_of_the_definitions_references_its_module():
    from lab_assets.defs.definitions import defs

    repo = code_links.repository(code_links.PACKAGE)
    graph = defs.resolve_asset_graph()
    assert len(graph.get_all_asset_keys()) >= 10
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        refs = node.metadata.get(REFERENCES)
        assert isinstance(refs, dg.CodeReferencesMetadataValue) and len(refs.code_references) == 1, key
        (ref,) = refs.code_references
        if repo is None:
            file = Path(ref.file_path)
        else:
            prefix = f"{repo.url}/tree/{repo.commit}/"
            assert ref.url.startswith(prefix), ref.url
            file = repo.top / ref.url.removeprefix(prefix).split("#")[0]
        assert file.is_file() and file.is_relative_to(REPO / "lab_assets" / "defs" / "assets"), (key, file)
        assert file.stem == MODULES.get(key.to_user_string(), file.stem), (key, file)


def test_with_a_remote_the_references_are_pages_of_the_repository_at_the_commit(monkeypatch):
    from lab_assets.defs.assets.experiments import model_and_embedding

    repo = code_links.Repository(REPO, "https://github.com/lab/lab_assets", "0123abc", "github", frozenset())
    monkeypatch.setattr(code_links, "repository", lambda folder: repo)
    (linked,) = code_links.with_code_references([model_and_embedding])
    source = (REPO / "lab_assets" / "defs" / "assets" / "experiments.py").read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if text.startswith("def model_and_embedding("))
    for key in linked.keys:
        (ref,) = linked.metadata_by_key[key][REFERENCES].code_references
        url = "https://github.com/lab/lab_assets/tree/0123abc/lab_assets/defs/assets/experiments.py"
        assert ref.url.split("#")[0] == url
        # Dagster's line: the function's first line, its decorator included.
        assert int(ref.url.split("#L")[1]) <= line


CELL_SWEEP = """
name: linked
data:
  swissroll: {n_samples: 80, noise: 0.05}
seeds: [0]
methods:
  pca: {}
  shuffled: {estimator: "project_reducers:Shuffled", n_components: 2}
metrics:
  trustworthiness: {k: [5]}
"""
REDUCER = '''"""A project's own class, named by import path."""
import numpy as np


class Shuffled:
    def __init__(self, n_components=2, random_state=None):
        self.n_components, self.random_state = n_components, random_state

    def fit_transform(self, X):
        return X[:, np.random.default_rng(self.random_state).permutation(X.shape[1])[: self.n_components]]
'''


def test_a_cells_materialization_links_to_its_methods_and_datasets_own_source_files(lab):
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner.sweeps import materialize_sweep
    from lab_assets.runtime.instance import get_instance

    (lab / "project_reducers.py").write_text(REDUCER)
    (lab / "sweeps" / "linked.yaml").write_text(CELL_SWEEP)
    assert materialize_sweep(load_sweep(lab / "sweeps" / "linked.yaml"), workers=1).ok

    records = get_instance().fetch_materializations(dg.AssetKey("embedding"), limit=10).records
    wanted = {
        "pca": REPO / "lab_assets" / "dr" / "methods" / "pca.py",
        "shuffled": lab / "project_reducers.py",
    }
    assert wanted["pca"].is_file()
    seen = set()
    for r in records:
        meta = r.asset_materialization.metadata
        method = meta["label"].value.split("| ")[1].split()[0]
        for name, file in (
            ("method", wanted[method]),
            ("dataset", REPO / "lab_assets" / "dr" / "datasets" / "manifolds.py"),
        ):
            value = meta[f"{name}_source"]
            if isinstance(value, dg.UrlMetadataValue):  # a checkout with a remote: the file's page
                repo = code_links.repository(code_links.PACKAGE)
                assert value.url == f"{repo.url}/tree/{repo.commit}/{file.relative_to(repo.top)}"
            else:
                assert Path(value.path) == file.resolve() and file.is_file()
        seen.add(method)
    assert seen == {"pca", "shuffled"}
