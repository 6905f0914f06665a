"""`lab check`: a lab's CI gate. Real files in a project folder, the real `lab` program; each
problem is one line naming its file, line and field, exit 2 with the count."""

from lab_assets.core.registry import Registry
from lab_assets.core.yaml_lines import field_line
from lab_assets.dr.declarations import declaration_problems
from lab_assets_tests.conftest import REPO, lab_cli

LIMITS = """name: limits
data:
  swissroll: {n_samples: 50}
methods:
  umap: {n_neighbors: 80}
"""
UNKNOWN = """name: unknown
data:
  swissroll: {n_samples: 150}
methods:
  pca: {whiten: true}
  isomap:
    n_neighbors: 10
    bogus: 1
"""


def test_a_clean_project_passes(lab):
    done = lab_cli("check", cwd=lab)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "" and "no problem" in done.stderr


def test_each_problem_is_one_line_with_its_file_line_and_field(lab):
    (lab / "sweeps" / "limits.yaml").write_text(LIMITS)
    (lab / "sweeps" / "unknown.yaml").write_text(UNKNOWN)
    (lab / "sweeps" / "twin.yaml").write_text((lab / "sweeps" / "tiny.yaml").read_text())
    (lab / "sweeps" / "broken.yaml").write_text("name: [\n")
    (lab / "studies").mkdir()
    (lab / "studies" / "s.yaml").write_text("name: s\ncorpus: {}\nbudget: {trials: 0}\n")
    done = lab_cli("check", cwd=lab)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "sweeps/limits.yaml:5: methods.umap.n_neighbors: n_neighbors=80 needs more points" in done.stdout
    assert "sweeps/unknown.yaml:8: methods.isomap.bogus: unknown field; allowed:" in done.stdout
    assert "sweeps/broken.yaml:2: not valid YAML" in done.stdout
    assert any(ln.startswith("sweeps/twin.yaml:2: name: 'tiny' is also the name of sweeps/tiny.yaml") for ln in lines)
    assert any(ln.startswith("studies/s.yaml:") and "budget" in ln for ln in lines)
    assert done.stderr.strip() == f"lab check: {len(lines)} problems"

    github = lab_cli("check", "--format", "github", cwd=lab)
    assert github.returncode == 2
    annotations = github.stdout.splitlines()
    assert len(annotations) == len(lines) and all(a.startswith("::error file=") for a in annotations)
    assert "::error file=sweeps/unknown.yaml,line=8,title=lab check%3A methods.isomap.bogus::" in github.stdout


def test_every_entry_of_a_registry_has_its_declarations():
    assert declaration_problems() == []  # the project's own datasets, methods and metrics
    metrics = Registry("metric", "lab_assets.dr.metrics", first="nb")
    metrics._discovered = True  # a registry of this test's entries only

    @metrics("undocumented", packages=["no-such-package-xyz"], valid_range="0 to 1")
    def undocumented(nb, *, k: int = 5):
        return 0.0

    @metrics("documented", valid_range="[0, 1]")
    def documented(nb, *, k: int = 5):
        """A metric with everything declared."""
        return 0.0

    found = {(p.field, p.file, p.line) for p in declaration_problems((metrics,))}
    here, line = __file__, undocumented.fn.__code__.co_firstlineno  # the decorator's line
    assert found == {(f"metric undocumented: {f}", here, line) for f in ("docstring", "packages", "valid_range")}


def test_field_lines():
    text = "name: a\ndata:\n  swissroll:\n    n_samples: 5\nmethods: {pca: {}}\n"
    assert field_line(text, "data.swissroll.n_samples") == 4
    assert field_line(text, "data.swissroll.noise") == 3  # a default that cannot work: its entry's line
    assert field_line(text, "methods.pca") == 5 and field_line(text, "seeds") is None


def test_the_repository_itself_passes_with_dg_check_defs(tmp_path):
    env = {
        "LAB_PROJECT_DIR": str(REPO),
        "LAB_HOME": str(tmp_path / "lab"),
        "DAGSTER_HOME": str(tmp_path / "dagster"),
        "LAB_SERVICE": "0",
    }
    done = lab_cli("check", cwd=REPO, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
