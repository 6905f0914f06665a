"""core/keys.py, the one codec of two-part partition key strings, and its agreement with
Dagster's `MultiPartitionKey` (defs/partitions.py)."""

import dagster as dg
import pytest
from hypothesis import given, strategies as st

from lab_assets.core import keys
from lab_assets.defs.partitions import CELL, TRIAL_CELL, cell_key, multi_key, trial_cell_key

# Key parts as the package makes them (`pca-1a2b3c`, `swissroll-d0c7b7~s0`, `tiny-e001-9f8e7d`),
# plus any other printable text without the separator.
LIKE_OURS = st.from_regex(r"\A[a-z][a-z0-9_]{0,12}-[0-9a-f]{6}(~s[0-9]{1,4}|-e[0-9]{3}-[0-9a-f]{6})?\Z")
PRINTABLE = st.text(st.characters(min_codepoint=32, exclude_characters="|"), min_size=1).filter(lambda s: "..." not in s)
PARTS = LIKE_OURS | PRINTABLE


@given(PARTS, PARTS)
def test_make_parse_make_is_the_identity(first, second):
    key = keys.cell_key(first, second)
    assert keys.parse_cell_key(key) == (first, second)
    assert keys.cell_key(*keys.parse_cell_key(key)) == key


@given(PARTS, PARTS)
def test_codec_agrees_with_dagsters_multi_partition_keys(first, second):
    assert str(cell_key(first, second)) == keys.cell_key(first, second)
    assert cell_key(first, second).keys_by_dimension == {"data": first, "method": second}
    assert trial_cell_key(first, second).keys_by_dimension == {"corpus": first, "trial": second}
    for partitions_def in (CELL, TRIAL_CELL):
        assert multi_key(partitions_def, keys.cell_key(first, second)) == dg.MultiPartitionKey(
            dict(zip([d.name for d in partitions_def.partitions_defs], (first, second)))
        )


def test_keys_with_dashes_tildes_and_digits():
    assert keys.parse_cell_key("swissroll-d0c7b7~s0|pca-1a2b3c") == ("swissroll-d0c7b7~s0", "pca-1a2b3c")
    assert keys.cell_key("stdlib-0a1b2c", "tiny-e001-9f8e7d") == "stdlib-0a1b2c|tiny-e001-9f8e7d"


@pytest.mark.parametrize("bad, message", [
    ("pca-1a2b3c", "is not a two-part partition key"),
    ("a|b|c", "is not a two-part partition key"),
    ("|pca", "first part: expected a non-empty string"),
    ("data~s0|", "second part: expected a non-empty string"),
    ("a\n|b", "may not contain"),
    ("a...b|c", "may not contain"),
])
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


@pytest.mark.parametrize("first, second, named", [
    ("a|b", "pca", "first key part 'a|b'"),
    ("data", "", "second key part: expected a non-empty string"),
    ("data", "x\x1f", "second key part 'x\\x1f'"),
])
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
