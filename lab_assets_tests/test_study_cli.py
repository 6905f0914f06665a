"""`lab study run` and `lab study show` as a person runs them, on a corpus of their own files
(`corpus: {source: files, glob: ...}`), and what they print when the corpus cannot be built."""

import json

import pytest

from lab_assets_tests.conftest import lab_cli

STUDY = """
name: {name}
corpus: {corpus}
baseline: {{depth: 1, width: 16, heads: 2, seq_len: 16, batch: 4, checkpoint_every: 4, eval_tokens: 1024}}
budget: {{steps: 6}}
search: {{proposer: grid, space: {{lr: [0.003, 0.01]}}, trials: 1, noise: 0.0}}
"""
NOTES = "{source: files, glob: 'notes/*.txt', max_bytes: 40000}"


def _write(lab, name: str, corpus: str) -> str:
    (lab / "studies").mkdir(exist_ok=True)
    (lab / "studies" / f"{name}.yaml").write_text(STUDY.format(name=name, corpus=corpus))
    return f"studies/{name}.yaml"


@pytest.fixture
def notes(lab):
    (lab / "notes").mkdir()
    for i in range(6):
        (lab / "notes" / f"n{i}.txt").write_text(f"note {i}: the quick brown fox\n" * (50 + 10 * i))
    (lab / "notes" / "skipped.md").write_text("not matched by the glob\n" * 50)
    return lab


def test_study_on_own_files_then_show_prints_the_same_ledger(notes):
    from lab_assets.core import storage
    from lab_assets.training.study import load_study

    study = _write(notes, "mine", NOTES)
    ran = lab_cli("study", "run", study, cwd=notes)
    assert ran.returncode == 0, ran.stderr
    shown = lab_cli("study", "show", study, cwd=notes)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == ran.stdout  # the ledger as TSV, the same table both times
    header, *rows = [line.split("\t") for line in shown.stdout.splitlines()]
    assert header[:2] == ["exp", "description"] and [r[:2] for r in rows] == [["0", "baseline"], ["1", "lr=0.01"]]
    assert "ledger: " in shown.stderr and "mine.tsv" in shown.stderr

    as_json = json.loads(lab_cli("study", "show", study, "--json", cwd=notes).stdout)
    assert as_json["study"] == "mine" and as_json["progress"] is None
    assert [r["exp"] for r in as_json["rows"]] == [0, 1] and all(r["val_bpb"] > 0 for r in as_json["rows"])

    # The corpus was drawn from exactly the files the glob matches, split into train and val.
    key = load_study(notes / study).corpus.key
    assert key.startswith("files-") and all(r["partition"].startswith(key + "|") for r in as_json["rows"])
    corpus = storage.read_parquet(storage.asset_path("corpus", key))
    assert set(corpus["path"]) == {f"notes/n{i}.txt" for i in range(6)}
    assert set(corpus["split"]) == {"train", "val"}
    assert {p: t for p, t in zip(corpus["path"], corpus["text"])}["notes/n3.txt"] == (
        notes / "notes" / "n3.txt"
    ).read_bytes()


@pytest.mark.parametrize(
    "corpus, code, message",
    [
        ("{source: files, glob: 'nothing/*.txt'}", 1, "CorpusError: corpus glob 'nothing/*.txt' (resolved to "),
        ("{source: files, glob: 'notes/n0.txt'}", 1, "1 non-empty file(s) fit in max_bytes=1000000; need at least 2"),
        ("{source: files}", 2, "corpus: corpus.glob is required with source: files"),
        (
            "{source: stdlib, glob: 'notes/*.txt'}",
            2,
            "corpus.glob is required with source: files, and only allowed there",
        ),
        ("{source: web}", 2, "corpus.source"),
    ],
)
def test_a_corpus_that_cannot_be_built_says_why_in_one_line(notes, corpus, code, message):
    study = _write(notes, "bad", corpus)
    out = lab_cli("study", "run", study, cwd=notes)
    assert out.returncode == code, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr
    if code == 1:  # the run failed: the line names the run whose log has the whole trace
        line = next(line for line in out.stderr.splitlines() if message in line)
        assert "failed 2 times" in line and "full log: lab logs " in line


def test_show_of_a_study_never_run_and_of_no_file(notes):
    study = _write(notes, "later", NOTES)
    empty = lab_cli("study", "show", study, cwd=notes)
    assert empty.returncode == 0 and empty.stdout.splitlines() == [empty.stdout.splitlines()[0]]
    assert empty.stdout.startswith("exp\tdescription\t")
    missing = lab_cli("study", "show", "studies/none.yaml", cwd=notes)
    assert missing.returncode == 2
    assert "studies/none.yaml: cannot read study file" in missing.stderr and "Traceback" not in missing.stderr
