"""core/keys.py, the one codec of data/method keys and two-part partition key strings, and its
agreement with Dagster's `MultiPartitionKey` (defs/partitions.py: training trials)."""

import dagster as dg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab_assets.core import keys
from lab_assets.defs.partitions import TRIAL_CELL, multi_key, trial_cell_key

# Key parts as the package makes them (`pca-1a2b3c`, `swissroll-d0c7b7~s0`, `tiny-e001-9f8e7d`),
# plus any other printable text without the separator.
LIKE_OURS = st.from_regex(r"\A[a-z][a-z0-9_]{0,12}-[0-9a-f]{6}(~s[0-9]{1,4}|-e[0-9]{3}-[0-9a-f]{6})?\Z")
PRINTABLE = st.text(st.characters(min_codepoint=32, exclude_characters="|"), min_size=1).filter(
    lambda s: "..." not in s
)
PARTS = LIKE_OURS | PRINTABLE


@given(PARTS, PARTS)
def test_make_parse_make_is_the_identity(first, second):
    key = keys.cell_key(first, second)
    assert keys.parse_cell_key(key) == (first, second)
    assert keys.cell_key(*keys.parse_cell_key(key)) == key


@given(PARTS, PARTS)
def test_codec_agrees_with_dagsters_multi_partition_keys(first, second):
    assert str(trial_cell_key(first, second)) == keys.cell_key(first, second)
    assert trial_cell_key(first, second).keys_by_dimension == {"corpus": first, "trial": second}
    assert multi_key(TRIAL_CELL, keys.cell_key(first, second)) == dg.MultiPartitionKey(
        dict(zip([d.name for d in TRIAL_CELL.partitions_defs], (first, second)))
    )


def test_keys_with_dashes_tildes_and_digits():
    assert keys.parse_cell_key("swissroll-d0c7b7~s0|pca-1a2b3c") == ("swissroll-d0c7b7~s0", "pca-1a2b3c")
    assert keys.cell_key("stdlib-0a1b2c", "tiny-e001-9f8e7d") == "stdlib-0a1b2c|tiny-e001-9f8e7d"


@pytest.mark.parametrize(
    "bad, message",
    [
        ("pca-1a2b3c", "is not a two-part partition key"),
        ("a|b|c", "is not a two-part partition key"),
        ("|pca", "first part: expected a non-empty string"),
        ("data~s0|", "second part: expected a non-empty string"),
        ("a\n|b", "may not contain"),
        ("a...b|c", "may not contain"),
    ],
)
def test_invalid_key_strings_are_refused_with_the_reason(bad, message):
    with pytest.raises(keys.BadKeyError, match=message) as e:
        keys.parse_cell_key(bad)
    assert repr(bad) in str(e.value)


@given(PARTS, st.sampled_from(["|", "\t", "..."]))
def test_a_part_containing_the_separator_or_a_control_character_is_refused(part, poison):
    with pytest.raises(keys.BadKeyError, match="may not contain"):
        keys.cell_key(part + poison, "method")


def test_run_tags_share_one_prefix():
    assert keys.tag("sweep") == "lab_assets/sweep"


@pytest.mark.parametrize(
    "first, second, named",
    [
        ("a|b", "pca", "first key part 'a|b'"),
        ("data", "", "second key part: expected a non-empty string"),
        ("data", "x\x1f", "second key part 'x\\x1f'"),
    ],
)
def test_a_refused_part_is_named(first, second, named):
    with pytest.raises(keys.BadKeyError) as e:
        keys.cell_key(first, second)
    assert named in str(e.value)


def test_spaces_and_the_last_control_character_boundary():
    # Space (32) is the first printable character: allowed; 31 is a control character: refused.
    assert keys.parse_cell_key(keys.cell_key("swiss roll", "pca n=2")) == ("swiss roll", "pca n=2")
    with pytest.raises(keys.BadKeyError, match="control characters"):
        keys.cell_key("a\x1f", "b")


@pytest.mark.parametrize("not_a_string", [None, 42, b"a|b", ("a", "b")])
def test_parsing_a_non_string_is_a_key_error_not_a_crash(not_a_string):
    with pytest.raises(keys.BadKeyError, match="is not a two-part partition key"):
        keys.parse_cell_key(not_a_string)


# Data and method keys: `<name>-<changed parameters>-<digest>` (readable stem, unique digest).
NAMES = st.from_regex(r"\A[a-z][a-z0-9_]{0,15}\Z")
DIGESTS = st.from_regex(r"\A[0-9a-f]{6}\Z")
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=5,
)
PARAMS = st.dictionaries(st.from_regex(r"\A[a-z_]{1,12}\Z"), VALUES, max_size=6)


@given(NAMES, PARAMS, DIGESTS, st.randoms())
def test_a_config_key_is_a_safe_partition_key_part_whatever_the_parameters(name, params, digest, rnd):
    key = keys.config_key(name, params, digest)
    assert key.startswith(name) and key.endswith("-" + digest)
    assert len(key) <= len(name) + keys.STEM_LENGTH + len(digest) + 2
    assert not set(key) & set("/~|\\ ") and "..." not in key
    assert keys.parse_cell_key(keys.cell_key(key, key)) == (key, key)
    shuffled = list(params.items())
    rnd.shuffle(shuffled)
    assert keys.config_key(name, dict(shuffled), digest) == key  # dict order never matters


@settings(max_examples=40, deadline=None)
@given(NAMES, PARAMS, DIGESTS, st.integers(0, 2**31 - 1))
def test_dagster_accepts_every_data_key_and_it_splits_back(name, params, digest, seed):
    config = keys.config_key(name, params, digest)
    key = keys.data_key(config, seed)
    assert keys.split_data_key(key) == (config, seed)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("data", [key])
    assert instance.get_dynamic_partitions("data") == [key]


@pytest.mark.parametrize("bad", ["pca-1f7269", "~s0", "swissroll-03af35~s", "swissroll-03af35~sx"])
def test_a_string_without_a_seed_is_not_a_data_key(bad):
    with pytest.raises(keys.BadKeyError, match="is not a data key"):
        keys.split_data_key(bad)


def test_bundled_sweep_keys_show_the_parameters_a_person_changed_and_keep_their_digests():
    from lab_assets.dr.sweep import load_sweep

    demo, benchmark = load_sweep("sweeps/demo.yaml"), load_sweep("sweeps/dr_benchmark.yaml")
    assert [d.key for d in demo.data if d.seed == 0] == [
        "swissroll-n_samples=600-noise=0.05-03af35~s0",
        "s_curve-n_samples=600-277fc1~s0",
        "gaussian_blobs-centers=4-n_samples=600-362743~s0",
    ]
    # Defaults are not shown (isomap's n_neighbors=10 is its default); the digest is the one
    # the key had before it had a stem, so it still tells configurations apart.
    assert [m.key for m in demo.methods] == [
        "pca-1f7269",
        "isomap-873b18",
        "tsne-max_iter=500-f6588e",
        "umap-5b2b03",
        "phate-73e697",
        "autoencoder-epochs=40-lr=0.003-b15222",
    ]
    configs = {k for s in (demo, benchmark) for k in [*(d.config_key for d in s.data), *(m.key for m in s.methods)]}
    assert len({k.rsplit("-", 1)[1] for k in configs}) == len(configs) == 14  # one digest per configuration


def test_a_config_key_stem_written_out_exactly():
    """The stem, character for character (what mutation testing found unpinned): strings as they
    are, other values as compact JSON, runs of unsafe characters as one `_`, runs of dots as one,
    no `-` left at either end of a cut stem."""
    assert (
        keys.config_key("m", {"s": "abc", "n": 3, "l": [1, 2], "d": {"a": 1}}, "ff") == "m-d=_a_1_-l=_1_2_-n=3-s=abc-ff"
    )
    assert keys.config_key("m", {"s": "a...b", "t": "x..y"}, "ff") == "m-s=a.b-t=x.y-ff"
    assert keys.config_key("m", {"s": "a b/c"}, "ff") == "m-s=a_b_c-ff"
    assert keys.config_key("m", {"s": "BOX"}, "ff") == "m-s=BOX-ff"
    assert keys.config_key("m", {"t": True, "f": 1.5, "z": None}, "ff") == "m-f=1.5-t=true-z=null-ff"
    # Cut at STEM_LENGTH right after a `-`: the stem does not end with one.
    first = "a" * (keys.STEM_LENGTH - 3)  # "p=" + first, then the "-" as the last character kept
    assert keys.config_key("m", {"p": first, "q": "zzzz"}, "ff") == f"m-p={first}-ff"
    assert keys.config_key("m", {"p": "-x"}, "ff") == "m-p=-x-ff"
