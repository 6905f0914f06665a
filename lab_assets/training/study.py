"""Study files: what an autonomous search trains, how long each trial may train, and who
proposes the next trial. Plus what each study/trial/corpus key means (JSON records under
`keys/` of the storage root, like a sweep's keys), so a partition launched from the UI trains
exactly what the study declared.

```yaml
name: default
corpus: {source: stdlib, max_bytes: 300000}        # or {source: files, glob: "data/**/*.txt"}
baseline: {depth: 2, width: 64, lr: 0.003}          # TrainConfig fields (lab_assets/training/train.py)
budget: {steps: 200}                                # or {seconds: 300}: per trial, training time only
search:
  proposer: optuna                                  # grid | random | optuna | {command: "python agent.py"}
  space: {lr: {low: 0.001, high: 0.03, log: true}, depth: [1, 2, 3]}
  trials: 8                                         # after the baseline (exp0)
  noise: 0.01                                       # keep only if val_bpb < best - noise
  seed: 0
```
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from pydantic import Field

from lab_assets.core import key_records, keys
from lab_assets.core.input_files import InputError, pydantic_lines, yaml_model
from lab_assets.core.registry import digest
from lab_assets.training.config import TrainConfig
from lab_assets.training.corpus import CorpusConfig

BUDGET_FIELDS = ("steps", "seconds")
SEARCHABLE = sorted(set(TrainConfig.model_fields) - set(BUDGET_FIELDS))


class StudyError(InputError):
    """A study file (or a proposal) that cannot be run; the message names the file and field."""

    what = "study"


class Range(pydantic.BaseModel):
    """A continuous (or integer) interval, for the random and optuna proposers."""

    model_config = pydantic.ConfigDict(extra="forbid")
    low: float
    high: float
    log: bool = False
    integer: bool = False

    @pydantic.model_validator(mode="after")
    def _ordered(self) -> Range:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        if self.log and self.low <= 0:
            raise ValueError(f"a log range needs low > 0 (got {self.low})")
        return self


class Command(pydantic.BaseModel):
    """An external proposer: reads the history as JSON on stdin, prints the next config as JSON."""

    model_config = pydantic.ConfigDict(extra="forbid")
    command: Annotated[str, Field(min_length=1)]
    timeout: Annotated[float, Field(gt=0)] = 600.0


Dimension = Annotated[list[Any], Field(min_length=1)] | Range


class Search(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    proposer: Literal["grid", "random", "optuna"] | Command = "grid"
    space: dict[str, Dimension] = {}
    trials: Annotated[int, Field(ge=0)] = 0
    noise: Annotated[float, Field(ge=0)] = 0.0
    seed: Annotated[int, Field(ge=0)] = 0


class Budget(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    steps: Annotated[int, Field(ge=1)] | None = None
    seconds: Annotated[float, Field(gt=0)] | None = None


class StudyFile(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")]
    description: str = ""
    corpus: CorpusConfig = CorpusConfig()
    baseline: dict[str, Any] = {}
    budget: Budget
    search: Search = Search()


@dataclass(frozen=True)
class Study:
    name: str
    source: str
    corpus: CorpusConfig
    baseline: TrainConfig
    search: Search

    @property
    def total_trials(self) -> int:
        return self.search.trials + 1  # the baseline, exp0, is a trial too

    def config(self, overrides: dict[str, Any], where: str) -> TrainConfig:
        """The baseline with `overrides` applied, validated; StudyError names `where`."""
        unknown = sorted(set(overrides) - set(SEARCHABLE))
        if unknown:
            raise StudyError(
                f"{where}: unknown or fixed field(s) {', '.join(unknown)}; allowed: {', '.join(SEARCHABLE)}"
            )
        try:
            return TrainConfig.model_validate({**self.baseline.model_dump(), **overrides})
        except pydantic.ValidationError as e:
            lines = [line.removeprefix(": ") for line in pydantic_lines("", e, SEARCHABLE)]  # ": " = whole model
            raise StudyError(f"{where}: " + f"\n{where}: ".join(lines)) from None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "corpus": self.corpus.model_dump(mode="json"),
            "baseline": self.baseline.model_dump(mode="json"),
            "search": self.search.model_dump(mode="json"),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Study:
        return cls(
            obj["name"],
            obj["source"],
            CorpusConfig(**obj["corpus"]),
            TrainConfig(**obj["baseline"]),
            Search.model_validate(obj["search"]),
        )


def parse_study(text: str, source: str) -> Study:
    spec = yaml_model(text, source, StudyFile, StudyError)
    stub = Study(spec.name, source, spec.corpus, TrainConfig(steps=1), spec.search)
    fixed = sorted(set(spec.baseline) & set(BUDGET_FIELDS))
    if fixed:
        raise StudyError(f"{source}: baseline.{fixed[0]}: the budget goes under `budget:`, for every trial alike")
    budget = spec.budget.model_dump(exclude_none=True)
    baseline = Study.config(stub, spec.baseline, f"{source}: baseline")
    try:
        baseline = TrainConfig.model_validate({**baseline.model_dump(), "steps": None, **budget})
    except pydantic.ValidationError as e:
        raise StudyError(f"{source}: " + "; ".join(pydantic_lines("budget", e, list(BUDGET_FIELDS)))) from None
    study = Study(spec.name, source, spec.corpus, baseline, spec.search)
    for name, dim in spec.search.space.items():  # every choice must make a valid config
        for value in dim if isinstance(dim, list) else [dim.low, dim.high]:
            study.config(
                {name: int(value) if isinstance(dim, Range) and dim.integer else value},
                f"{source}: search.space.{name}",
            )
    if spec.search.proposer == "grid" and any(isinstance(d, Range) for d in spec.search.space.values()):
        raise StudyError(f"{source}: search.space: the grid proposer needs lists of values, not ranges")
    return study


def load_study(path: str | Path) -> Study:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise StudyError(f"{path}: cannot read study file: {e.strerror}") from None
    return parse_study(text, str(path))


def description(baseline: TrainConfig, config: TrainConfig) -> str:
    """What a trial changes from the baseline, as `field=value,...` ("baseline" for none)."""
    base, new = baseline.model_dump(), config.model_dump()
    changed = [
        f"{k}={new[k]:g}" if isinstance(new[k], float) else f"{k}={new[k]}" for k in sorted(new) if new[k] != base[k]
    ]
    return ",".join(changed) or "baseline"


@dataclass(frozen=True)
class Trial:
    study: str
    exp: int
    corpus: str  # corpus key
    config: TrainConfig
    description: str
    noise: float

    @property
    def key(self) -> str:
        """`<study>-e<exp>-<digest>`: readable, and unique per study and experiment number."""
        return f"{self.study}-e{self.exp:03d}-{digest([self.corpus, self.config.model_dump(mode='json')], 6)}"

    @property
    def cell(self) -> str:
        """The `gpt_model` partition key string (dimensions by name: corpus, then trial)."""
        return keys.cell_key(self.corpus, self.key)

    def ledger_row(self, run_id: str) -> dict[str, Any]:
        """The row's identity columns; the result columns are added by whoever records it."""
        from lab_assets.core.lineage import git_state

        return {
            "exp": self.exp,
            "description": self.description,
            "study": self.study,
            "trial": self.key,
            "partition": self.cell,
            "config": json.dumps(self.config.model_dump(mode="json"), sort_keys=True),
            "git_sha": git_state()[0],
            "run_id": run_id,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "exp": self.exp,
            "corpus": self.corpus,
            "description": self.description,
            "noise": self.noise,
            "config": self.config.model_dump(mode="json"),
        }


def save(study: Study, trial: Trial | None = None) -> None:
    """What the study, its corpus key and (optionally) a trial key mean (core/key_records.py)."""
    key_records.write("study", study.name, study.to_json())
    key_records.write("corpus", study.corpus.key, study.corpus.model_dump(mode="json"))
    if trial is not None:
        key_records.write("trial", trial.key, trial.to_json())


def _read(kind: str, key: str) -> dict[str, Any]:
    return key_records.read(kind, key, "`lab study run <file>` (or the study_loop sensor)")


def corpus_config(key: str) -> CorpusConfig:
    return CorpusConfig(**_read("corpus", key))


def trial(key: str) -> Trial:
    r = _read("trial", key)
    return Trial(r["study"], r["exp"], r["corpus"], TrainConfig(**r["config"]), r["description"], r["noise"])
