"""The partition shape: every asset of a sweep's cells, datasets included, by `cell`; reports by
`sweep`.

`cell` is one dynamic dimension holding exactly the (data, method) pairs that registered sweeps
declare, as `<data>|<method>` strings (core/keys.py), so the UI offers no cell that no sweep
asked for (a `data x method` multi-partition showed the cross product of every sweep's keys).
The dataset assets share the dimension because an edge between two differently partitioned
assets needs a partition mapping, and Dagster 1.13 keeps only its built-in mappings in the asset
graph that the webserver and the daemon see (none maps a cell to its data key;
docs/ARCHITECTURE.md, "Why one `cell` dimension"). Identity edges keep lineage, staleness and
backfill order exact per cell; a dataset shared by several cells is the same file, written by
each (storage.asset_path by data key).
"""

import warnings

import dagster as dg
from sqlalchemy.exc import IntegrityError

from lab_assets.core import keys

# The beta APIs this package builds on (MultiToSingleDimensionPartitionMapping for training,
# observable_source_asset) were chosen deliberately (a trial reads one corpus key; spec versions
# are per key, docs/ARCHITECTURE.md); one warning per process per use would drown every run's log.
warnings.filterwarnings("ignore", category=dg.BetaWarning)

CELL = dg.DynamicPartitionsDefinition(name="cell")
SWEEP = dg.DynamicPartitionsDefinition(name="sweep")


def multi_key(partitions_def: dg.MultiPartitionsDefinition, key: str) -> dg.MultiPartitionKey:
    """A `<first>|<second>` key string (core/keys.py) as a key of `partitions_def`, whose
    dimensions Dagster orders by name, as the string orders its parts."""
    names = [d.name for d in partitions_def.partitions_defs]
    return dg.MultiPartitionKey(dict(zip(names, keys.parse_cell_key(key))))


# Training (lab_assets/training): every trial of a study trains on the study's corpus, so a
# trial cell is `corpus|trial` and reads its corpus through the `corpus` dimension. Trials get
# their own dimension rather than `method` keys, which would add unmaterializable columns to
# every DR grid. A study's ledger is partitioned by study.
CORPUS = dg.DynamicPartitionsDefinition(name="corpus")
TRIAL = dg.DynamicPartitionsDefinition(name="trial")
STUDY = dg.DynamicPartitionsDefinition(name="study")
TRIAL_CELL = dg.MultiPartitionsDefinition({"corpus": CORPUS, "trial": TRIAL})
TRIAL_TO_CORPUS = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="corpus")


def trial_cell_key(corpus: str, trial: str) -> dg.MultiPartitionKey:
    return multi_key(TRIAL_CELL, keys.cell_key(corpus, trial))


def add_keys(instance: dg.DagsterInstance, dimension: str, new_keys: list[str]) -> None:
    """Add the keys a dynamic dimension lacks. Another process may add the same keys between our
    read and our insert (the `sweep_registry` sensor registering a sweep that `lab sweep run`
    registers too; two `lab` commands): the insert then fails on the unique key, and reading
    again settles it."""
    for attempt in range(2):
        existing = set(instance.get_dynamic_partitions(dimension))
        missing = [k for k in dict.fromkeys(new_keys) if k not in existing]
        if not missing:
            return
        try:
            instance.add_dynamic_partitions(dimension, missing)
            return
        except IntegrityError:
            if attempt:
                raise
