"""The one runner: `run_work(work, target)` executes a `Work` (defs/work.py: ordered phases of runs)
on a `Target` and accounts for every partition in one way (`Outcome`).

Targets: `local.LocalTarget` (worker processes on this machine, or this process) and
`webserver.WebserverTarget` (a webserver's queue and run launcher: on a cluster whose instance uses
K8sRunLauncher, one Kubernetes Job per run). The daemon is the fourth place work runs; sensors
hand it the same `Work` through `defs.work.requests`, since defs may not import the runner.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Protocol

from lab_assets.core.keys import parse_cell_key
from lab_assets.defs.freshness import SweepPlan
from lab_assets.defs.jobs import DATA_STEPS, DATASETS, PARTS, WHAT
from lab_assets.defs.work import Run, Work

MATERIALIZED, FRESH, FAILED, SKIPPED = "materialized", "fresh", "failed", "skipped"
# A run stopped by Ctrl-C (SIGINT): Dagster marks it failed; the summary counts it apart.
INTERRUPTED = "interrupted"
# Another command had the partition in flight (defs/inflight.py): this one waited for its run.
WAITED = "waited"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C reached a target: the outcomes of the runs it saw finish (or stop) before it
    returned, and the runs it leaves running elsewhere (a webserver's)."""

    def __init__(self, outcomes: Sequence[Outcome] = (), left_running: Sequence[str] = ()):
        super().__init__()
        self.outcomes = list(outcomes)
        self.left_running = list(left_running)


@dataclass
class Outcome:
    job: str  # the run's kind (defs/jobs.py)
    partition: str
    status: str  # MATERIALIZED, FRESH, WAITED, FAILED or SKIPPED
    why: str = ""  # the root cause of a failure, what a skipped run needed, why a partition is fresh
    seconds: float = 0.0
    run_id: str = ""
    step: str = ""  # the failed step(s) of a failed run, comma-separated

    @property
    def ok(self) -> bool:
        return self.status in (MATERIALIZED, FRESH, WAITED)

    def to_json(self) -> dict:
        return asdict(self)


def name(partition) -> str:
    """A partition as outcomes and messages show it: its key string, "" for none."""
    return "" if partition is None else str(partition)


class Target(Protocol):
    """Where runs execute; used in a `with` block (a target may hold worker processes)."""

    def __enter__(self) -> Target: ...

    def __exit__(self, *exc) -> None: ...

    def execute(self, runs: Sequence[Run], tags: dict[str, str], on_done: Callable[[Outcome], None]) -> list[Outcome]:
        """Run these (independent) runs, each with `tags` added, and return when all have finished."""
        ...


@dataclass
class Result:
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    before: SweepPlan | None = None  # the plan a sweep's work was derived from
    interrupted: bool = False  # Ctrl-C: the work stopped early; outcomes are what finished before
    left_running: list[str] = field(default_factory=list)  # Ctrl-C: run ids that go on where they were submitted

    def of(self, status: str, job: str | None = None) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == status and job in (None, o.job)]

    @property
    def failed(self) -> list[Outcome]:
        return self.of(FAILED)

    @property
    def skipped(self) -> list[Outcome]:
        return self.of(SKIPPED)

    @property
    def ok(self) -> bool:
        """Nothing failed and nothing was skipped (exit code 0)."""
        return not self.failed and not self.skipped

    def count(self, job: str, status: str = MATERIALIZED) -> int:
        """Runs of a kind; datasets by data key (a data key's cells each record its one file)."""
        if job == DATASETS:  # a cell key's data part, or a data key (a fresh dataset)
            return len(
                {parse_cell_key(o.partition)[0] if "|" in o.partition else o.partition for o in self.of(status, job)}
            )
        return len(self.of(status, job))


Progress = Callable[[str, int], Callable[[Outcome], None]]


def no_progress(label: str, total: int) -> Callable[[Outcome], None]:
    return lambda outcome: None


def split(outcome: Outcome) -> list[Outcome]:
    """A run of several kinds (`jobs.PARTS`: a new cell with its dataset) as one outcome per kind,
    as separate runs would have given: a failure in its dataset's steps fails the dataset and
    skips the cell; a failure in a later step fails the cell only."""
    if outcome.job not in PARTS:
        return [outcome]
    data, cell = (replace(outcome, job=kind) for kind in PARTS[outcome.job])
    steps = set(filter(None, outcome.step.split(",")))
    if outcome.status == FAILED and steps & DATA_STEPS:
        return [data, replace(cell, status=SKIPPED, why=f"its {WHAT[data.job]} failed", seconds=0.0, step="")]
    if outcome.status == FAILED and steps:  # its dataset's steps succeeded
        return [replace(data, status=MATERIALIZED, why="", step=""), cell]
    if outcome.status in (FAILED, INTERRUPTED):  # which steps ran is not known (a webserver's run)
        return [cell]
    return [data, cell]


def run_work(work: Work, target: Target, progress: Progress = no_progress) -> Result:
    """Execute the work's phases in order on `target`. A run whose `needs` failed is skipped (a
    cell whose dataset failed); partitions the plan found fresh are reported as such.
    `progress(label, total)` returns a callback called once per finished or skipped run of a phase."""
    result = Result()
    try:
        _run_phases(work, target, progress, result)
    except KeyboardInterrupt as e:
        # Ctrl-C: the target stopped its runs (Dagster marks them failed); what finished counts.
        seen = {(o.job, o.partition, o.run_id) for o in result.outcomes}
        result.outcomes += [o for o in getattr(e, "outcomes", []) if (o.job, o.partition, o.run_id) not in seen]
        result.left_running = getattr(e, "left_running", [])
        result.interrupted = True
    return result


def _run_phases(work: Work, target: Target, progress: Progress, result: Result) -> None:
    failed: set[tuple[str, str]] = set()
    for i, phase in enumerate(work.phases):
        if phase.recheck and work.recheck is not None and any(o.status != FRESH for o in result.outcomes):
            phase = work.recheck().phases[i]
        result.outcomes += [Outcome(f.job, name(f.partition), FRESH, f.why) for f in phase.fresh]
        done = progress(phase.label, len(phase.runs))
        for batch in [[r] for r in phase.runs] if phase.in_order else [phase.runs]:
            todo = []
            for r in batch:
                if r.needs is not None and (r.needs[0], name(r.needs[1])) in failed:
                    result.outcomes.append(Outcome(r.job, name(r.partition), SKIPPED, f"its {WHAT[r.needs[0]]} failed"))
                    done(result.outcomes[-1])
                else:
                    todo.append(r)
            if todo:
                # A run of several kinds ticks its phase's progress once, as its last kind (the cell).
                ran = target.execute(todo, dict(work.tags), lambda o: done(split(o)[-1]))
                outcomes = [part for o in ran for part in split(o)]
                result.outcomes += outcomes
                failed |= {(o.job, o.partition) for o in outcomes if o.status == FAILED}
                if any(o.status == INTERRUPTED for o in outcomes):
                    raise Interrupted()
