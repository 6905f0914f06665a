"""W&B tracking: one W&B run per materialized cell, grouped by sweep, with the resolved config,
seed, git SHA and metric values.

Offline by default: runs are written under `<lab home>/wandb` and nothing leaves the machine
(`wandb sync` uploads them later). With `WANDB_API_KEY` in the environment they go online;
`WANDB_MODE`, if set, wins; `LAB_WANDB=off` turns tracking off. `wandb` is used directly
(dagster-wandb does not import with current wandb).

Tracking never fails or corrupts a materialization: it runs after the cell's files are written,
and any error is caught, logged and returned as metadata.
"""

import os
from typing import Any

from lab_assets.core.settings import lab_home, tracking_off

PROJECT = "lab_assets"


def mode() -> str:
    if tracking_off():
        return "disabled"
    return os.environ.get("WANDB_MODE") or ("online" if os.environ.get("WANDB_API_KEY") else "offline")


def warm(start: bool = True) -> None:
    """Import what a process's first `wandb.init` imports (~0.8 s, most of it `wandb.sdk.launch`,
    which `init` loads to look for job inputs) and, with `start`, start W&B's service process
    (~0.2 s; it starts threads: not in a process that forks later)."""
    if mode() == "disabled":
        return
    import wandb
    import wandb.sdk.launch  # noqa: F401

    if start:
        wandb.setup()


def track_cell(cell: str, sweeps: list[str], config: dict[str, Any], values: dict[str, float]) -> dict[str, Any]:
    """Log one cell; returns metadata naming the W&B run (or why there is none)."""
    chosen = mode()
    if chosen == "disabled":
        return {"wandb_mode": chosen}
    try:
        import wandb

        directory = lab_home() / "wandb"
        directory.mkdir(parents=True, exist_ok=True)
        run = wandb.init(
            project=os.environ.get("WANDB_PROJECT", PROJECT),
            group=sweeps[0] if sweeps else "no-sweep",
            name=cell,
            tags=sweeps,
            config=config,
            mode=chosen,
            dir=str(directory),
            reinit="finish_previous",
            # No pip freeze per run (x_save_requirements): it cost ~0.27 s a cell; the key package
            # versions are in the cell's lineage metadata already. No git probe (disable_git): two
            # `git` processes, ~17 ms a cell; the config carries the commit (and the metric table whether it was dirty).
            settings=wandb.Settings(
                silent=True,
                console="off",
                x_disable_stats=True,
                x_save_requirements=False,
                disable_git=True,
            ),
        )
        run.log(values)
        run.summary.update(values)
        where = run.path if chosen == "online" else str(run.dir)
        run.finish()
        return {"wandb_mode": chosen, "wandb_run_id": run.id, "wandb_run": where}
    except Exception as e:  # noqa: BLE001 - tracking must never take a cell down with it
        return {"wandb_mode": chosen, "wandb_error": f"{type(e).__name__}: {e}"}
