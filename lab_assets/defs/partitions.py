"""The partition shape: datasets by `data`, experiments by `data x method` (each dataset is
computed once however many methods read it; the UI shows a sweep as a data x method grid).

Both dimensions are dynamic: `lab sweep run` (or the sweep sensor) registers the keys a sweep
declares. Multi-partition key strings order dimensions by name: "<data>|<method>".
"""

import warnings

import dagster as dg
from sqlalchemy.exc import IntegrityError

from lab_assets.core import keys

# The beta APIs this package builds on (MultiToSingleDimensionPartitionMapping,
# observable_source_asset) were chosen deliberately (a cell reads one dataset key; spec versions
# are per key, docs/ARCHITECTURE.md); one warning per process per use
# would drown every run's log.
warnings.filterwarnings("ignore", category=dg.BetaWarning)

DATA = dg.DynamicPartitionsDefinition(name="data")
METHOD = dg.DynamicPartitionsDefinition(name="method")
SWEEP = dg.DynamicPartitionsDefinition(name="sweep")
CELL = dg.MultiPartitionsDefinition({"data": DATA, "method": METHOD})

# A cell depends on one data key (its dataset) and one method key (its method's spec).
CELL_TO_DATA = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="data")
CELL_TO_METHOD = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="method")


def multi_key(partitions_def: dg.MultiPartitionsDefinition, key: str) -> dg.MultiPartitionKey:
    """A `<first>|<second>` key string (core/keys.py) as a key of `partitions_def`, whose
    dimensions Dagster orders by name, as the string orders its parts."""
    names = [d.name for d in partitions_def.partitions_defs]
    return dg.MultiPartitionKey(dict(zip(names, keys.parse_cell_key(key))))


def cell_key(data: str, method: str) -> dg.MultiPartitionKey:
    return multi_key(CELL, keys.cell_key(data, method))


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
