"""What makes a sweep's cells exist: key records, Dagster's dynamic partitions, spec versions."""

import dagster as dg

from lab_assets.core import key_records, keys, storage
from lab_assets.defs.assets.specs import record_observations
from lab_assets.defs.partitions import add_keys
from lab_assets.dr import keystore
from lab_assets.dr.sweep import Sweep


def register(instance: dg.DagsterInstance, sweep: Sweep) -> None:
    """Idempotent and cheap when nothing changed (`lab sweep run`, the sensors and `lab report`
    all call it): records what each key means, adds the sweep's cells to the `cell` partitions
    and its name to `sweep`, and observes spec versions that changed. A cell that an edit took
    out of the sweep, and that no other registered sweep declares, leaves the `cell` partitions
    (its files and history stay: `lab gc`): the UI offers exactly the declared cells."""
    before = set(keystore.sweep(sweep.name).cells) if sweep.name in keystore.keys("sweep") else set()
    keystore.save_sweep(sweep)
    add_keys(instance, "cell", [keys.cell_key(d, m) for d, m in sweep.cells])
    add_keys(instance, "sweep", [sweep.name])
    _drop_undeclared(instance, before)
    record_observations(instance)


def unregister(instance: dg.DagsterInstance, name: str) -> list[str]:
    """`lab sweep remove`, a sweep file deleted while `lab ui` runs, `lab gc` of a sweep whose
    file is gone: the sweep's record and `sweep` partition go, its cells leave the `cell`
    partitions unless another registered sweep declares them, and its metrics leave the other
    cells' suites (their `metric_spec` observed again). Files and history stay (`lab gc` deletes
    them). Returns the cell keys that left; UnknownKeyError when no such sweep is registered."""
    cells = set(keystore.sweep(name).cells)
    storage.remove(key_records.path("sweep", name))
    instance.delete_dynamic_partition("sweep", name)
    dropped = _drop_undeclared(instance, cells)
    record_observations(instance)
    return dropped


def _drop_undeclared(instance: dg.DagsterInstance, cells: set[tuple[str, str]]) -> list[str]:
    """Delete the `cell` partitions among `cells` that no registered sweep declares."""
    dropped = sorted(keys.cell_key(d, m) for d, m in cells - {c for s in keystore.sweeps() for c in s.cells})
    for cell in dropped:
        instance.delete_dynamic_partition("cell", cell)
    return dropped
