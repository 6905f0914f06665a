"""Code by meaning (core/canonical.py): what `ruff format` (run here, the reference), comments,
docstrings and blank lines change leaves the digest alone; a changed constant, operator or name
changes it; imports are followed into the science packages, transitively, and nowhere else."""

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lab_assets.core import canonical
from lab_assets_tests.conftest import REPO, require_tool

SOURCE = textwrap.dedent(
    '''\
    """A module docstring."""
    import numpy as np


    SCALE = 2.5
    NAMES = ["a", "b", 'c',]


    def entry(rng, *, n_samples: int = 100, noise: float = 0.0, label: str = u"x"):
        """A docstring: not code."""
        # a comment
        X = rng.normal(size=(n_samples, 3)) * (SCALE)
        if (noise > 0):
            X = X + noise * rng.normal(size=X.shape)


        message = ("points" " and " "noise")
        return (X[:, 0] ** 2 + X[:, 1], {"message": message, "hex": 0XFF, "exp": 1E3})
    '''
)


def digest(text: str) -> str:
    return canonical.canonical_digest(text)


@pytest.fixture(scope="module")
def ruff():
    return require_tool(
        str(Path(sys.executable).parent / "ruff"), "the formatter whose passes must not change a digest"
    )


def formatted(ruff, text: str, *options: str) -> str:
    return subprocess.run(
        [ruff, "format", "--isolated", *options, "-"], input=text, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize(
    "options",
    [
        (),
        ("--line-length", "30"),  # every call split, trailing commas added
        ("--line-length", "200", "--config", "format.quote-style='single'"),
        ("--config", "format.skip-magic-trailing-comma=true", "--config", "format.indent-style='tab'"),
    ],
)
def test_a_formatter_pass_keeps_the_digest(ruff, options):
    reformatted = formatted(ruff, SOURCE, *options)
    assert reformatted != SOURCE  # the formatter did change the bytes
    assert digest(reformatted) == digest(SOURCE)


@pytest.mark.parametrize(
    "before, after",
    [
        ("    # a comment\n", "    # another comment, longer\n"),
        ('    """A docstring: not code."""\n', '    """Another docstring,\n\n    on lines."""\n'),
        ('    """A docstring: not code."""\n', ""),
        ("\n\n\n    message", "\n    message"),
        ("    X = rng", "    X = \\\n        rng"),
        ('label: str = u"x"', "label: str = 'x'"),
        ('("points" " and " "noise")', '"points and noise"'),
    ],
)
def test_comments_docstrings_blank_lines_and_spelling_keep_the_digest(before, after):
    assert before in SOURCE
    assert digest(SOURCE.replace(before, after, 1)) == digest(SOURCE)


@pytest.mark.parametrize(
    "before, after",
    [
        ("SCALE = 2.5", "SCALE = 2.6"),  # a constant
        ("SCALE = 2.5", "SCALE = 2"),
        ("** 2", "** 3"),
        ("X[:, 0] ** 2 + X[:, 1]", "X[:, 0] ** 2 - X[:, 1]"),  # an operator
        ("noise > 0", "noise >= 0"),
        ("* (SCALE)", "* (SCALE + 1)"),
        ('"a", "b"', '"b", "a"'),
        ('"noise")', '"noise ")'),  # a string's value
        ("n_samples: int = 100", "n_samples: int = 101"),  # a default
        ("0XFF", "0XFE"),
        ("message = (", "text = ("),  # a name
        ("    return (X", "    X = X.T\n    return (X"),  # a statement
    ],
)
def test_a_change_of_meaning_changes_the_digest(before, after):
    assert before in SOURCE
    assert digest(SOURCE.replace(before, after, 1)) != digest(SOURCE)


def test_constants_are_told_apart_by_type():
    values = ["None", "''", "0", "0.0", "False", "b''", "()", "[]", "...", "1j"]
    assert len({digest(f"x = {v}\n") for v in values}) == len(values)


def test_the_digest_is_pinned():
    """The canonical form is ours, not `ast.dump`'s: the same on every Python this project
    supports. A new Python (or a change to the walker, with `canonical.FORMAT` bumped) that
    changes this digest would make every entry's version new: every cell stale."""
    assert sys.version_info >= (3, 11)
    assert digest(SOURCE) == "5950291b1abec0c0"


def test_the_whole_package_reformatted_keeps_every_module_digest(ruff, tmp_path):
    copy = tmp_path / "lab_assets"
    shutil.copytree(REPO / "lab_assets", copy, ignore=shutil.ignore_patterns("__pycache__"))
    files = sorted(copy.rglob("*.py"))
    before = {f: digest(f.read_text()) for f in files}
    subprocess.run([ruff, "format", "--isolated", "--line-length", "50", str(copy)], check=True, capture_output=True)
    changed = [f for f in files if f.read_text() != (REPO / f.relative_to(tmp_path)).read_text()]
    assert len(changed) > len(files) / 2  # most files did change
    assert {f: digest(f.read_text()) for f in files} == before


def test_imports_are_followed_into_the_science_roots_only(tmp_path, monkeypatch):
    pkg = tmp_path / "mylab"
    (pkg / "helpers").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "entry.py").write_text(
        "import numpy\n\ndef f(x):\n    from mylab.helpers import scale\n    return scale.by(x)\n"
    )
    (pkg / "helpers" / "__init__.py").write_text("")
    (pkg / "helpers" / "scale.py").write_text("from .factor import FACTOR\n\ndef by(x):\n    return x * FACTOR\n")
    (pkg / "helpers" / "factor.py").write_text("FACTOR = 2\n")
    (pkg / "unused.py").write_text("Y = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    found = canonical.closure(["mylab.entry"], ("mylab",))
    assert set(found) == {
        "mylab",
        "mylab.entry",
        "mylab.helpers",
        "mylab.helpers.scale",
        "mylab.helpers.factor",
    }  # numpy is not under the roots; `unused` is imported by nobody
    assert canonical.closure(["mylab.entry"], ("other",)).keys() == {"mylab.entry"}

    (pkg / "helpers" / "factor.py").write_text("FACTOR = 30\n")  # a helper two imports away
    assert canonical.closure(["mylab.entry"], ("mylab",))["mylab.helpers.factor"] != found["mylab.helpers.factor"]


def test_each_entry_s_version_covers_the_science_it_imports_and_no_plumbing():
    from lab_assets.defs.assets import specs
    from lab_assets.dr.declarations import REGISTRIES
    from lab_assets.dr.methods import METHODS
    from lab_assets.dr.metrics import METRICS

    entries = [e for r in REGISTRIES for e in r.entries()]
    # The estimator module only diffusion_map imports; the kind's package (its registry and helpers).
    assert {e.name for e in entries if "lab_assets.dr.models.diffusion_map" in e.code_modules} == {"diffusion_map"}
    assert all("lab_assets.dr.methods" in e.code_modules for e in METHODS.entries())
    # Plumbing enters no version unless an entry names it in `sources=` (the autoencoder's checkpoints).
    plumbing = {m for e in entries for m in e.code_modules if not m.startswith("lab_assets.dr") and m not in e.sources}
    assert plumbing == set()
    # The shared kNN code is every column's, through the specs, not each metric's own.
    assert all("lab_assets.dr.metrics.neighbors" not in e.code_modules for e in METRICS.entries())
    assert {"neighbors.py", "rank_kernels.py"} <= set(specs.shared_metric_code())
