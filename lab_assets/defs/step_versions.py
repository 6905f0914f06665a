"""The platform's step code is versioned on purpose: each asset module's code version is declared
here, not derived from its bytes, so a refactor or a rename recomputes nothing.

A developer changes a step's declared version when its outputs can change. What keeps that
honest: `step_versions.json` pins, per step, the digests by meaning (`core/canonical.py`) of the
step's module and of the modules that shape its outputs, each under the declared version it was
recorded for, and `test_step_versions.py` fails as soon as one of them means something new.
Then either
- its outputs can change: change its version below, then record; or
- they cannot (a rename, a refactor, a log message): show it in a test (identical outputs
  before and after), then record: `python -m lab_assets.defs.step_versions` adds the current
  digests under the current versions.
(docs/staleness.md, "The platform's step code".)
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from lab_assets.core import canonical
from lab_assets.core.registry import digest

PINS = Path(__file__).with_name("step_versions.json")
_REPORT_CODE = tuple(
    f"lab_assets.dr.{m}" for m in ("figures", "html_report", "report_drawing", "summary", "tables", "tidy", "thumbnail")
)
_TRAINING_CODE = tuple(f"lab_assets.training.{m}" for m in ("train", "gpt", "corpus", "config"))
# {asset module: (its declared code version, the modules besides it that shape its outputs)}.
# The versions are those the byte digests of 171c77e gave, so that no lab home recomputes
# anything for this change.
STEPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "lab_assets.defs.assets.datasets": ("1eefa5a88fdb", ()),
    "lab_assets.defs.assets.experiments": ("5bf1e8145e2f", ()),
    "lab_assets.defs.assets.metrics": ("a505b3576df1", ()),
    # reports-2: the summary gains control-scaled scores (`scaled`, `scaled_sd`) and the report
    # folder report.html: every report is drawn again (no cell is).
    # reports-3: metrics_vs_k.png says "no curve to draw" where every metric is at one k.
    "lab_assets.defs.assets.reports": ("reports-3", _REPORT_CODE),
    # Not bumped for the GPU's fused AdamW and compiled loss: CPU weights are bitwise those of
    # before (the per-tensor optimizer, an eager loss), and GPU weights were never promised bitwise
    # beyond one device and kernel set (training/train.py); a bump would retrain every CPU trial
    # and rebuild every corpus (one version for both assets) for no different result.
    "lab_assets.defs.assets.training": ("a01d06473375", _TRAINING_CODE),
}


def declared(module: str) -> str:
    """The code version an asset module declares (its Dagster `code_version`)."""
    return STEPS[module][0]


def step_digest(module: str) -> str:
    """The digest by meaning of a step's module and of the modules that shape its outputs."""
    names = (module, *STEPS[module][1])
    return digest({m: canonical.module(*canonical.module_file(m)).digest for m in names}, length=16)


@cache
def pins() -> dict[str, dict[str, list[str]]]:
    """{step: {declared version: [digests recorded as producing that version's outputs]}}."""
    return json.loads(PINS.read_text()) if PINS.exists() else {}


def unrecorded() -> dict[str, str]:
    """{step: its current digest} for every step whose digest is not recorded under its declared
    version: a change nobody has said is output-preserving."""
    current = {m: step_digest(m) for m in STEPS}
    return {m: d for m, d in current.items() if d not in pins().get(m, {}).get(declared(m), [])}


def record() -> dict[str, str]:
    """Record every unrecorded digest under its step's declared version; returns what it added."""
    added = unrecorded()
    recorded = pins()
    for module, d in added.items():
        recorded.setdefault(module, {}).setdefault(declared(module), []).append(d)
    PINS.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    pins.cache_clear()
    return added


if __name__ == "__main__":
    for step, d in record().items():
        print(f"{step}: {d} recorded under version {declared(step)}")
