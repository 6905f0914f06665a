"""W&B tracking: one W&B run per cell, grouped by sweep: a flat config (`data.<param>`,
`method.<param>`, seed, sweep, names: what W&B groups and filters by), the metric values in the
summary, the embedding as an image, and lineage as Artifacts (the dataset used, the embedding
logged, both by reference to their storage URL; an offline run cannot use an artifact, so the
embedding's metadata names the dataset it was computed from); per sweep, one run with the summary as a Table.

A cell is one run however often it is materialized: its run id is derived from the cell key
(`run_id`), and every materialization resumes it (`resume="allow"`). Online that updates the run
in place; offline each materialization writes another `offline-run-*-<id>` folder with the same
id, and `wandb sync` uploads them into that one run, in the order they were written (the latest
config and summary win). Runs of a cell written before run ids were stable (random ids, named by
the cell) cannot be updated: online, they are tagged `superseded` (hide them with a filter on
the tag).

Offline by default: runs are written under `<lab home>/wandb` and nothing leaves the machine
(`wandb sync` uploads them later). With `WANDB_API_KEY` in the environment they go online;
`WANDB_MODE`, if set, wins; `LAB_WANDB=off` turns tracking off. `wandb` is used directly
(dagster-wandb does not import with current wandb).

Tracking never fails or corrupts a materialization: it runs after the cell's files are written,
and any error is caught, logged and returned as metadata.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab_assets.core.settings import WANDB_FOLDER, lab_home, tracking_off, tracking_uploads

PROJECT = "lab_assets"
SUPERSEDED = "superseded"


def mode() -> str:
    if tracking_off():
        return "disabled"
    return os.environ.get("WANDB_MODE") or ("online" if os.environ.get("WANDB_API_KEY") else "offline")


def warm() -> None:
    """Import what a process's first `wandb.init` imports (~0.8 s, most of it `wandb.sdk.launch`,
    which `init` loads to look for job inputs). W&B's service process starts at the first `init`
    (it starts threads: never in a process that forks later)."""
    if mode() == "disabled":
        return
    import wandb  # noqa: F401
    import wandb.sdk.launch  # noqa: F401


def run_id(kind: str, name: str) -> str:
    """The W&B run id of a cell or a sweep (`kind`), the same wherever and however often it is
    materialized: W&B ids allow no `|` or `:`, so a digest of the name."""
    return f"{kind}{hashlib.sha256(name.encode()).hexdigest()[:24]}"


# A run's folder: `[offline-]run-<date>_<time>-<id>`, and `-<n>` after it when another folder of
# that id was started in the same second.
RUN_FOLDER = re.compile(r"(?:offline-)?run-\d{8}_\d{6}-(?P<id>(?:cell|sweep)[0-9a-f]{24})(?:-\d+)?")


def local_runs() -> dict[str, list[Path]]:
    """{run id: its folders under the lab home} of runs with a stable id (`run_id`): `offline-run-*`
    folders, and `run-*` ones (the local copies of online runs)."""
    folder = lab_home() / WANDB_FOLDER / "wandb"
    out: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*run-*-*")) if folder.is_dir() else []:
        match = RUN_FOLDER.fullmatch(path.name)
        if match and path.is_dir():
            out.setdefault(match["id"], []).append(path)
    return out


def in_project(folder: Path) -> bool:
    """Whether a local run folder's run is in a W&B project already: online, or offline and
    uploaded by `wandb sync` (which leaves a `.wandb.synced` marker)."""
    return not folder.name.startswith("offline-") or any(folder.glob("*.wandb.synced"))


@dataclass(frozen=True)
class Reference:
    """A file a run records as an Artifact: `kind` (its type: dataset, embedding), `key` (its
    partition key), `url` (its storage path or URL)."""

    kind: str
    key: str
    url: str

    def artifact(self, upload: bool, made_from: tuple[Reference, ...] = ()):
        """By reference (the file stays where it is; a local file's checksum is taken), or, with
        `upload` and a local file, a copy sent with the run. `made_from`: the files it was computed
        from, in its metadata (an offline run cannot record using an artifact)."""
        import wandb

        name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{self.kind}-{self.key}")[:128]
        metadata = {"key": self.key, "url": self.url, **{r.kind: r.url for r in made_from}}
        artifact = wandb.Artifact(name, type=self.kind, metadata=metadata)
        local = "://" not in self.url
        file_name = self.url.rsplit("/", 1)[-1]
        if upload and local:
            artifact.add_file(self.url, name=file_name)
        else:
            # A remote object is not read from the cell: no checksum (the name is its digest).
            artifact.add_reference(f"file://{self.url}" if local else self.url, name=file_name, checksum=local)
        return artifact


SETTINGS = dict(
    silent=True,
    console="off",
    x_disable_stats=True,
    # No pip freeze per run (x_save_requirements): it cost ~0.27 s a cell; the key package
    # versions are in the cell's lineage metadata already. No git probe (disable_git): two `git`
    # processes, ~17 ms a cell; the config carries the commit (and the metric table whether it was dirty).
    x_save_requirements=False,
    disable_git=True,
)


def _init(wandb, chosen: str, kind: str, name: str, group: str, tags: list[str], config: dict[str, Any]):
    directory = lab_home() / WANDB_FOLDER
    directory.mkdir(parents=True, exist_ok=True)
    return wandb.init(
        project=os.environ.get("WANDB_PROJECT", PROJECT),
        id=run_id(kind, name),
        resume="allow",
        name=name,
        group=group,
        job_type=kind,
        tags=tags,
        config=config,
        mode=chosen,
        dir=str(directory),
        reinit="finish_previous",
        settings=wandb.Settings(**SETTINGS),
    )


def supersede(api, path: str, name: str, keep: str) -> list[str]:
    """Tag `superseded` the runs in the project `path` named `name` other than `keep` (written
    before run ids were stable): ids of those tagged."""
    tagged = []
    for old in api.runs(path, filters={"display_name": name}):
        if old.id != keep and SUPERSEDED not in old.tags:
            old.tags = [*old.tags, SUPERSEDED]
            old.update()
            tagged.append(old.id)
    return tagged


def track_cell(
    cell: str,
    sweeps: list[str],
    config: dict[str, Any],
    values: dict[str, float],
    image: bytes | None = None,
    uses: tuple[Reference, ...] = (),
    logs: tuple[Reference, ...] = (),
) -> dict[str, Any]:
    """Log one cell: `config` flat, `values` in the summary, `image` (a PNG) as `embedding`, the
    artifacts it `uses` (online) and `logs`. Returns metadata naming the W&B run (or why there is none)."""
    chosen = mode()
    if chosen == "disabled":
        return {"wandb_mode": chosen}
    try:
        import wandb

        run = _init(wandb, chosen, "cell", cell, sweeps[0] if sweeps else "no-sweep", sweeps, config)
        upload = tracking_uploads()
        if chosen != "offline":  # wandb: "Cannot use artifact when in offline mode"
            for reference in uses:
                run.use_artifact(reference.artifact(upload))
        for reference in logs:
            run.log_artifact(reference.artifact(upload, made_from=uses))
        with tempfile.NamedTemporaryFile(suffix=".png", dir=lab_home() / WANDB_FOLDER) as png:
            logged: dict[str, Any] = dict(values)
            if image is not None:
                # From a file: wandb copies it as it is (from a PIL image it would encode it again).
                png.write(image)
                png.flush()
                logged["embedding"] = wandb.Image(png.name, caption="coloured by label")
            run.log(logged)
        run.summary.update(values)
        where = run.path if chosen == "online" else str(run.dir)
        extra = {}
        if chosen == "online":
            extra["wandb_superseded"] = supersede(wandb.Api(), f"{run.entity}/{run.project}", cell, run.id)
        run.finish()
        return {"wandb_mode": chosen, "wandb_run_id": run.id, "wandb_run": where, **extra}
    except Exception as e:  # noqa: BLE001 - tracking must never take a cell down with it
        return {"wandb_mode": chosen, "wandb_error": f"{type(e).__name__}: {e}"}


def table_rows(summary) -> tuple[list[str], list[list]]:
    """A DataFrame's columns and rows as a W&B Table takes them, missing values (pandas' NA in a
    nullable rank, NaN) as null: W&B types a column by its values."""
    cells = summary.astype(object).where(summary.notna(), None)
    return list(cells.columns), cells.to_numpy().tolist()


def track_sweep(sweep: str, columns: list[str], rows: list[list]) -> dict[str, Any]:
    """Log a sweep's summary over seeds (`table_rows` of its DataFrame) as the Table `summary` of
    the sweep's run."""
    chosen = mode()
    if chosen == "disabled":
        return {"wandb_mode": chosen}
    try:
        import wandb

        run = _init(wandb, chosen, "sweep", sweep, sweep, [sweep], {"sweep": sweep})
        run.log({"summary": wandb.Table(columns=columns, data=rows)})
        where = run.path if chosen == "online" else str(run.dir)
        run.finish()
        return {"wandb_mode": chosen, "wandb_run_id": run.id, "wandb_run": where}
    except Exception as e:  # noqa: BLE001 - tracking must never take a report down with it
        return {"wandb_mode": chosen, "wandb_error": f"{type(e).__name__}: {e}"}
