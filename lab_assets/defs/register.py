"""What makes a sweep's cells exist: key records, Dagster's dynamic partitions, spec versions."""

import dagster as dg

from lab_assets.core import keys
from lab_assets.dr import keystore
from lab_assets.defs.assets.specs import record_observations
from lab_assets.defs.partitions import add_keys
from lab_assets.dr.sweep import Sweep


def register(instance: dg.DagsterInstance, sweep: Sweep) -> None:
    """Idempotent and cheap when nothing changed (`lab sweep run`, the sensors and `lab report`
    all call it): records what each key means, adds the sweep's cells to the `cell` partitions
    and its name to `sweep`, and observes spec versions that changed. A cell that an edit took
    out of the sweep, and that no other registered sweep declares, leaves the `cell` partitions
    (its files and history stay): the UI offers exactly the declared cells."""
    before = set(keystore.sweep(sweep.name).cells) if sweep.name in keystore.keys("sweep") else set()
    keystore.save_sweep(sweep)
    add_keys(instance, "cell", [keys.cell_key(d, m) for d, m in sweep.cells])
    add_keys(instance, "sweep", [sweep.name])
    dropped = before - {c for s in keystore.sweeps() for c in s.cells}
    for d, m in dropped:
        instance.delete_dynamic_partition("cell", keys.cell_key(d, m))
    record_observations(instance)
