"""Dynamic partition keys: adding them is safe when another process adds the same keys at once."""

import dagster as dg
import pytest
from sqlalchemy.exc import IntegrityError

from lab_assets.defs.partitions import add_keys


def test_add_keys_settles_a_key_another_process_inserted_first(tmp_path, monkeypatch):
    # Dagster's add_dynamic_partitions reads the existing keys, then inserts the others; with two
    # writers (the sweep_registry sensor and `lab sweep run` registering one sweep) the slower one's
    # insert fails on the unique key, as replayed here.
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        insert = instance.add_dynamic_partitions
        calls = []

        def lose_the_race(dimension, keys):
            calls.append(list(keys))
            if len(calls) == 1:
                insert(dimension, ["a"])  # the other process's insert lands first
                raise IntegrityError("INSERT INTO dynamic_partitions", {}, Exception("UNIQUE constraint failed"))
            return insert(dimension, keys)

        monkeypatch.setattr(instance, "add_dynamic_partitions", lose_the_race)
        add_keys(instance, "data", ["a", "b", "b"])
        assert sorted(instance.get_dynamic_partitions("data")) == ["a", "b"]
        assert calls == [["a", "b"], ["b"]]


def test_add_keys_gives_up_after_a_second_failure(tmp_path, monkeypatch):
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:

        def always_fails(dimension, keys):
            raise IntegrityError("INSERT INTO dynamic_partitions", {}, Exception("UNIQUE constraint failed"))

        monkeypatch.setattr(instance, "add_dynamic_partitions", always_fails)
        with pytest.raises(IntegrityError):
            add_keys(instance, "data", ["a"])


def test_add_keys_adds_nothing_when_every_key_exists(tmp_path, monkeypatch):
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        instance.add_dynamic_partitions("method", ["pca-1"])
        inserted = []
        monkeypatch.setattr(instance, "add_dynamic_partitions", lambda dimension, keys: inserted.append(keys))
        add_keys(instance, "method", ["pca-1"])
        assert inserted == []
