"""Runs launched through a running Dagster webserver (`lab sweep run FILE --submit URL`).

Each run is launched by job name with its partition's tags through the webserver's GraphQL API
(dagster-graphql's `DagsterGraphQLClient`), so the instance behind it decides where it runs: its
queue's limits apply, and with K8sRunLauncher each run is one Kubernetes Job whose pod carries
the method's `resources:` (the run's `dagster-k8s/config` tag). This target waits until every
run of a batch has finished, so the runner's phases keep their order.

A run that another command has in flight (defs/inflight.py) is waited for, not launched again.
Ctrl-C stops this command only: the runs already submitted belong to the webserver's instance
and keep running there (cancel them in its UI); a new `lab sweep run` waits for them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from urllib.parse import urlsplit

from dagster import DagsterRunStatus

from lab_assets.defs import inflight
from lab_assets.defs.jobs import job_name, partition_tags
from lab_assets.defs.work import Run, remaining
from lab_assets.runner.run import FAILED, MATERIALIZED, WAITED, Interrupted, Outcome, name
from lab_assets.runtime.instance import get_instance

DONE = {DagsterRunStatus.SUCCESS: MATERIALIZED, DagsterRunStatus.FAILURE: FAILED, DagsterRunStatus.CANCELED: FAILED}
POLL_SECONDS = 1.0
# The client asks for one run's status per request, so a poll looks at most this many unfinished
# runs, oldest first (the queue starts runs in launch order): a 1,000-cell phase costs a few
# requests per second, not a thousand.
POLL_WINDOW = 16


class SubmitError(RuntimeError):
    """The webserver refused a launch or could not be reached."""


class WebserverTarget:
    """A `Target`: the webserver at `url` (http[s]://host[:port][/prefix])."""

    def __init__(self, url: str):
        from dagster_graphql import DagsterGraphQLClient  # requests + gql: only when submitting

        self.url = url.rstrip("/")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SubmitError(f"{url}: expected a webserver URL such as http://127.0.0.1:3000")
        self.client = DagsterGraphQLClient(
            parts.hostname,
            port_number=parts.port,
            use_https=parts.scheme == "https",
            path_prefix=parts.path,
            timeout=60,
        )

    def __enter__(self) -> WebserverTarget:
        return self

    def __exit__(self, *exc) -> None:
        """Nothing to release: runs outlive the client (they belong to the webserver's instance)."""

    def _call(self, what: str, fn: Callable, *args, **kwargs):
        from dagster_graphql import DagsterGraphQLClientError

        try:
            return fn(*args, **kwargs)
        except DagsterGraphQLClientError as e:
            causes = []
            cause = e.__cause__
            while cause is not None:
                causes.append(cause)
                cause = cause.__cause__
            # Unreachable: a connection error (an OSError) under the gql transport's wrapper.
            if any(isinstance(c, OSError) for c in causes):
                raise SubmitError(f"cannot reach the Dagster webserver at {self.url} ({what})") from None
            # Refused: (kind, message), e.g. ("JobNotFoundError", "No jobs with the name ..."); other
            # errors carry the whole query as their message, and the reason in their cause.
            detail = ": ".join(map(str, e.args)) if len(e.args) > 1 or not causes else str(causes[0])
            raise SubmitError(f"{self.url} refused {what}: {detail}") from None

    def _launch(self, run: Run, tags: dict[str, str]) -> str:
        what = f"launching {run.job} {name(run.partition)}".rstrip()
        tags = {**tags, **run.tags, **partition_tags(run.job, run.partition)}
        return self._call(
            what,
            self.client.submit_job_execution,
            job_name(run.job),
            tags=tags,
            asset_selection=list(run.assets) or None,
        )

    def _other(self, r: Run, tags: dict[str, str]) -> str | None:
        """Another command's run of `r` to wait for instead (defs/inflight.py)."""
        other = inflight.other_run(get_instance(), job_name(r.job), name(r.partition) or None, tags, assets=r.assets)
        return None if other is None else other.dagster_run.run_id

    def execute(self, runs: Sequence[Run], tags: dict[str, str], on_done: Callable[[Outcome], None]) -> list[Outcome]:
        start = time.perf_counter()
        pending: dict[str, tuple[Run, bool]] = {}  # run id -> (run, launched by this command)
        outcomes: list[Outcome] = []
        try:
            for r in runs:
                other = self._other(r, tags)
                pending[other or self._launch(r, tags)] = (r, other is None)
            while pending:
                time.sleep(POLL_SECONDS)
                self._poll(pending, tags, outcomes, on_done, start)
        except KeyboardInterrupt:
            raise Interrupted(outcomes, [run_id for run_id, (_, ours) in pending.items() if ours]) from None
        return outcomes

    def _poll(self, pending, tags, outcomes: list[Outcome], on_done, start: float) -> None:
        unfinished = 0
        for run_id, (r, ours) in list(pending.items()):
            if unfinished == POLL_WINDOW:
                break
            status = self._call(f"status of run {run_id}", self.client.get_run_status, run_id)
            if status not in DONE:
                unfinished += 1
                continue
            del pending[run_id]
            if status != DagsterRunStatus.SUCCESS:
                # Ours stopped for another command's run: wait for that one. Theirs failed: ours after all.
                other = self._other(r, tags) if ours else None
                if other is not None or not ours:
                    pending[other or self._launch(r, tags)] = (r, other is None)
                    continue
            seconds = time.perf_counter() - start
            if status == DagsterRunStatus.SUCCESS and not ours:
                rest = remaining(r, inflight.computed(get_instance(), get_instance().get_run_by_id(run_id)))
                if rest is not None:  # it computed part of this run: launch the rest, counted as the whole
                    pending[self._launch(rest, tags)] = (replace(rest, job=r.job), True)
                    continue
            if status == DagsterRunStatus.SUCCESS:
                why = "" if ours else f"computed by run {run_id[:8]} of another command"
                outcomes.append(
                    Outcome(r.job, name(r.partition), MATERIALIZED if ours else WAITED, why, seconds, run_id)
                )
            else:
                why = f"run {status.value.lower()}: see run {run_id} in the UI"
                outcomes.append(Outcome(r.job, name(r.partition), FAILED, why, seconds, run_id))
            on_done(outcomes[-1])
