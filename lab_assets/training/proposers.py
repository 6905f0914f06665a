"""Proposers: the next trial's overrides of the baseline, from the history alone.

Every proposer is a function of (study, history) with no state of its own: the history is the
ledger, so a restarted loop proposes exactly what it would have proposed before the restart.
Seeded ones draw from a generator seeded by (seed, number of trials so far).

- `grid`: the next untried point of the space's lists, in order; done when all are tried.
- `random`: uniform over lists and ranges (log-uniform where `log: true`).
- `optuna`: TPE, rebuilt from the history on every call (optuna.trial.create_trial), so no
  optuna database is kept beside the ledger.
- `command`: an external program (an AI agent, say) gets `{"study", "exp", "space", "baseline",
  "history"}` as JSON on stdin and prints the overrides as a JSON object on stdout.
"""

from __future__ import annotations

import itertools
import json
import math
import shlex
import subprocess
from typing import Any

import numpy as np

from lab_assets.core.settings import project_dir
from lab_assets.training.study import Command, Range, Study, StudyError

History = list[dict[str, Any]]  # {"exp", "description", "config", "val_bpb", "status"} per trial


def _space_point(study: Study, config: dict[str, Any]) -> dict[str, Any]:
    return {k: config[k] for k in sorted(study.search.space)}


def grid(study: Study, history: History) -> dict[str, Any] | None:
    space = study.search.space
    names = sorted(space)
    tried = {json.dumps(_space_point(study, h["config"]), sort_keys=True) for h in history}
    for values in itertools.product(*(space[n] for n in names)):
        point = study.config(dict(zip(names, values, strict=True)), "grid").model_dump()
        if json.dumps(_space_point(study, point), sort_keys=True) not in tried:
            return dict(zip(names, values, strict=True))
    return None


def _draw(rng: np.random.Generator, dim: list[Any] | Range) -> Any:
    if isinstance(dim, list):
        return dim[int(rng.integers(len(dim)))]
    if dim.log:
        value = math.exp(rng.uniform(math.log(dim.low), math.log(dim.high)))
    else:
        value = rng.uniform(dim.low, dim.high)
    return int(round(value)) if dim.integer else float(value)


def random(study: Study, history: History) -> dict[str, Any]:
    rng = np.random.default_rng([study.search.seed, len(history)])
    return {name: _draw(rng, study.search.space[name]) for name in sorted(study.search.space)}


def _distributions(study: Study) -> dict[str, Any]:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out = {}
    for name, dim in study.search.space.items():
        if isinstance(dim, list):
            out[name] = CategoricalDistribution(dim)
        elif dim.integer:
            out[name] = IntDistribution(int(dim.low), int(dim.high), log=dim.log)
        else:
            out[name] = FloatDistribution(dim.low, dim.high, log=dim.log)
    return out


def tpe(study: Study, history: History) -> dict[str, Any]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    distributions = _distributions(study)
    seed = int(np.random.SeedSequence([study.search.seed, len(history)]).generate_state(1)[0])
    opt = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    for h in history:
        failed = h["status"] == "crash" or h["val_bpb"] is None
        try:
            frozen = optuna.trial.create_trial(
                params=_space_point(study, h["config"]),
                distributions=distributions,
                value=None if failed else h["val_bpb"],
                state=optuna.trial.TrialState.FAIL if failed else optuna.trial.TrialState.COMPLETE,
            )
        except ValueError:
            continue  # outside the space (the baseline, an agent's idea): it cannot inform TPE
        opt.add_trial(frozen)
    return opt.ask(distributions).params


def command(study: Study, history: History, proposer: Command) -> dict[str, Any]:
    payload = json.dumps(
        {
            "study": study.name,
            "exp": len(history),
            "space": {k: v if isinstance(v, list) else v.model_dump() for k, v in study.search.space.items()},
            "baseline": study.baseline.model_dump(mode="json"),
            "history": history,
        }
    )
    where = f"{study.source}: search.proposer.command {proposer.command!r}"
    try:
        out = subprocess.run(
            shlex.split(proposer.command),
            input=payload,
            capture_output=True,
            text=True,
            timeout=proposer.timeout,
            cwd=project_dir(),
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise StudyError(f"{where}: could not run: {e}") from None
    if out.returncode != 0:
        raise StudyError(f"{where}: exited with {out.returncode}: {out.stderr.strip()[-500:]}")
    try:
        proposal = json.loads(out.stdout)
    except json.JSONDecodeError:
        raise StudyError(f"{where}: printed {out.stdout.strip()[:200]!r}, not a JSON object of overrides") from None
    if not isinstance(proposal, dict):
        raise StudyError(f"{where}: printed a JSON {type(proposal).__name__}, not an object of overrides")
    return proposal


def propose(study: Study, history: History) -> dict[str, Any] | None:
    """The next trial's overrides (validated into a config by the caller); None when a grid is
    exhausted."""
    p = study.search.proposer
    if isinstance(p, Command):
        return command(study, history, p)
    return {"grid": grid, "random": random, "optuna": tpe}[p](study, history)
