"""How Dagster's records answer "is this partition fresh?", for `defs/freshness.py` (the one
entry point: `plan_sweep`, used by `lab sweep plan|run`, `lab report`, the sensors and the saved
no-op answer of `runner/noop_answer.py`).

- `stale_status`: Dagster's stale-status resolver (private API), one consistent look at the instance.
- `kept_answers`: its answers per cell partition, kept between plans while the partition's
  latest events are the same.
- `instance_head`: the embedded SQLite instance's head, read without Dagster: whether anything
  the resolver reads changed or was deleted (the kept answers, the saved no-op answer).

Content fingerprints (size + blake2b of an artifact) are `core/integrity.py`'s; the cheap
(path, mtime, size) stamps of source files are `core/source_stamps.py`'s.
"""
