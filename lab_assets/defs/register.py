"""What makes a sweep's cells exist: key records, Dagster's dynamic partitions, spec versions."""

import dagster as dg

from lab_assets.dr import keystore
from lab_assets.defs.assets.specs import record_observations
from lab_assets.defs.partitions import add_keys
from lab_assets.dr.sweep import Sweep


def register(instance: dg.DagsterInstance, sweep: Sweep) -> None:
    """Idempotent and cheap when nothing changed (`lab sweep run`, the sensors and `lab report`
    all call it): records what each key means, adds new keys to the `data`, `method` and
    `sweep` partitions, and observes spec versions that changed."""
    keystore.save_sweep(sweep)
    for dim, keys in (
        ("data", [d.key for d in sweep.data]),
        ("method", [m.key for m in sweep.methods]),
        ("sweep", [sweep.name]),
    ):
        add_keys(instance, dim, keys)
    record_observations(instance)
