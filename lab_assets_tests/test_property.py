"""Property tests (issue 17, item 6): over generated sweep files and CLI arguments, no input
produces a traceback; every invalid one exits 2 naming the field (or the line); valid ones plan."""

import os
import re
from contextlib import contextmanager

import pytest
import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from lab_assets.cli.main import main
from lab_assets.dr.datasets import DATASETS
from lab_assets.dr.methods import METHODS
from lab_assets.dr.metrics import METRICS
from lab_assets.runtime import instance
from lab_assets_tests.conftest import lab_project

# Random examples on every run (a failure prints the blob that reproduces it: `@reproduce_failure`),
# each in a lab home of its own (`example_lab`): nothing one example wrote is seen by the next.
SETTINGS = settings(
    max_examples=int(os.environ.get("LAB_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@contextmanager
def example_lab(tmp_path_factory):
    with pytest.MonkeyPatch.context() as monkeypatch:
        try:
            yield lab_project(tmp_path_factory.mktemp("example"), monkeypatch)
        finally:
            instance.get_instance.cache_clear()


# -- generated values: YAML scalars, lists and mappings, the kinds a person might write --------
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["auto", "euclidean", "data", "embedding", "0 3 * * *", "1e3", ""]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6,
)


def entries(registry):
    """{name: params}: registered or unknown names; each entry's real parameter names or others."""
    names = st.one_of(st.sampled_from(registry.names()), st.text(max_size=10))

    def params(name):
        known = sorted(registry[name].params_model.model_fields) if name in registry else []
        keys = st.one_of(st.sampled_from(known), st.text(max_size=8)) if known else st.text(max_size=8)
        return st.one_of(st.none(), st.dictionaries(keys, values, max_size=3), values)

    return st.dictionaries(names, st.none(), max_size=3).flatmap(
        lambda d: st.fixed_dictionaries({n: params(n) for n in d})
    )


documents = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,10}", fullmatch=True), values),
        "description": values,
        "data": st.one_of(entries(DATASETS), values),
        "seeds": st.one_of(st.lists(st.integers(-5, 2**32), max_size=4), values),
        "methods": st.one_of(entries(METHODS), values),
        "metrics": st.one_of(entries(METRICS), values),
        "schedule": st.one_of(st.sampled_from(["0 3 * * *", "*/5 * * * *", "nope", "61 * * * *"]), values),
        "extra": values,
    },
)
texts = st.one_of(
    documents.map(lambda d: yaml.safe_dump(d, allow_unicode=True)),
    values.map(lambda v: yaml.safe_dump(v, allow_unicode=True)),
    st.text(max_size=80),  # anything at all, YAML syntax errors included
)

# -- valid sweeps: registered entries, parameters inside every limit ---------------------------
valid = st.fixed_dictionaries(
    {
        "name": st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
        "data": st.dictionaries(
            st.sampled_from(["swissroll", "s_curve", "torus", "gaussian_blobs"]),
            st.fixed_dictionaries({"n_samples": st.integers(50, 300)}),
            min_size=1,
            max_size=2,
        ),
        "seeds": st.lists(st.integers(0, 100), min_size=1, max_size=2, unique=True),
        "methods": st.dictionaries(
            st.sampled_from(["pca", "isomap", "umap", "spectral", "random_projection", "mds"]),
            st.fixed_dictionaries({"n_components": st.integers(1, 2)}),
            min_size=1,
            max_size=3,
        ),
        "metrics": st.dictionaries(
            st.sampled_from(["trustworthiness", "continuity", "knn_preservation", "lid"]),
            st.fixed_dictionaries({"k": st.lists(st.integers(2, 24), min_size=1, max_size=2, unique=True)}),
            max_size=3,
        ),
    }
)

# `<file>: <field>: <problem>`, the field's parts plain or JSON-quoted (an empty key, one with a colon)
FIELD_LINE = re.compile(
    r'^(?P<file>[^:]+): (?:(?P<field>(?:[\w@=,.-]|"(?:[^"\\]|\\.)*")+): |not valid YAML|expected a mapping)'
)


def _run(argv, capsys) -> tuple[int, str, str]:
    """`lab argv` in this process: any exception escaping `main` is a traceback the user would see."""
    try:
        code = main(argv)
    except SystemExit as e:  # argparse: a bad flag or argument
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


@SETTINGS
@given(text=texts)
def test_any_sweep_file_plans_or_exits_2_naming_the_field(tmp_path_factory, capsys, text):
    with example_lab(tmp_path_factory) as lab:
        path = lab / "sweeps" / "gen.yaml"
        path.write_text(text)
        code, out, err = _run(["sweep", "plan", str(path)], capsys)
    assert code in (0, 2), (code, err)
    assert "Traceback" not in err
    if code == 0:
        assert "cells" in out
    else:
        lines = err.splitlines()
        assert lines[0] == "lab: invalid sweep", err
        for line in lines[1:]:
            assert line.startswith(f"{path}: ") and FIELD_LINE.match(line), line


@settings(SETTINGS, max_examples=int(os.environ.get("LAB_PROPERTY_EXAMPLES", "30")))  # each creates an instance
@given(doc=valid)
def test_valid_sweeps_plan(tmp_path_factory, capsys, doc):
    with example_lab(tmp_path_factory) as lab:
        path = lab / "sweeps" / "gen.yaml"
        path.write_text(yaml.safe_dump(doc))
        code, out, err = _run(["sweep", "plan", str(path)], capsys)
    assert code == 0, err
    assert f"sweep {doc['name']}" in out and "missing" in out


tokens = st.one_of(
    st.sampled_from(
        [
            "sweep",
            "plan",
            "run",
            "report",
            "query",
            "logs",
            "verify",
            "study",
            "show",
            "ui",
            "--json",
            "--quiet",
            "--verbose",
            "--verify",
            "--workers",
            "--format",
            "--port",
            "--submit",
            "0",
            "-1",
            "abc",
            "csv",
            "--help-me",
            "-h",
            "--help",
            "sweeps/none.yaml",
            "sweeps",
            "SELECT 1",
            "COPY (SELECT 1) TO 'x'",
        ]
    ),
    st.text(max_size=8),
)


@SETTINGS
@given(argv=st.lists(tokens, max_size=5))
@example(argv=["-h"])
@example(argv=["sweep", "plan", "--help"])
def test_any_command_line_exits_cleanly(tmp_path_factory, capsys, argv):
    # Nothing here names a runnable sweep or study, so no work starts; a command line that starts
    # `lab ui` (it serves until stopped) is not an example (assume: drawn again, never a pass).
    assume(argv[:1] != ["ui"])
    with example_lab(tmp_path_factory):
        code, out, err = _run(argv, capsys)
    assert "Traceback" not in err
    if code == 0:  # only help asked for (-h, --help or an abbreviation) ends well
        assert out.startswith("usage: lab") and any(
            a.startswith("-h") or "--help".startswith(a) for a in argv if len(a) > 1
        ), argv
    else:
        assert code == 2, (argv, code, out, err)
        assert err.strip(), argv  # says why


@pytest.mark.parametrize(
    "argv, said",
    [
        (["sweep", "run", "sweeps/tiny.yaml", "--workers", "0"], "--workers must be at least 1"),
        (["sweep", "run", "sweeps/tiny.yaml", "--workers", "two"], "argument --workers: invalid int value"),
        (["query", "SELECT 1", "--format", "xml"], "argument --format: invalid choice"),
        (["sweep", "plan", "sweeps/none.yaml"], "sweeps/none.yaml: cannot read sweep file"),
        (["logs", "0000"], "lab logs: no run '0000'"),
    ],
)
def test_bad_arguments_name_the_argument(lab, capsys, argv, said):
    code, _, err = _run(argv, capsys)
    assert code == 2 and said in err, err
