"""Submit partitions to a running Dagster webserver instead of running them in this process.

`lab sweep run FILE --submit http://HOST:PORT` launches every pending partition as its own run
through the webserver's GraphQL API (the UI's own `launchRun`), so the instance's run launcher
and queue decide where it runs: on a cluster, each cell becomes a run pod (K8sRunLauncher)
carrying its method's `resources:` tags, and the queue's concurrency limits apply. It waits for
each phase (datasets, then cells, then the report) before starting the next, as the in-process
runner does.
"""

import json
import time
import urllib.request
from collections.abc import Callable

LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on Error { message } } }"""
STATUS = """query($ids: [String!]) { runsOrError(filter: {runIds: $ids}) {
  ... on Runs { results { runId status } } } }"""
LOCATION = """{ repositoriesOrError { ... on RepositoryConnection {
  nodes { name location { name } jobs { name } } } } }"""
DONE = {"SUCCESS", "FAILURE", "CANCELED"}
POLL_SECONDS = 1.0


class SubmitError(RuntimeError):
    """The webserver refused a launch or could not be reached."""


class Submitter:
    def __init__(self, url: str, tags_for: Callable[[str, str | None], dict[str, str]]):
        self.url = url.rstrip("/")
        self.tags_for = tags_for
        self.location, self.repository = self._find_code_location()

    def _graphql(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                out = json.loads(response.read())
        except OSError as e:
            raise SubmitError(f"cannot reach the Dagster webserver at {self.url}: {e}") from None
        if out.get("errors"):
            raise SubmitError(f"{self.url}: {out['errors'][0].get('message')}")
        return out["data"]

    def _find_code_location(self) -> tuple[str, str]:
        for repo in self._graphql(LOCATION)["repositoriesOrError"].get("nodes", []):
            if any(j["name"] == "materialize_cells" for j in repo["jobs"]):
                return repo["location"]["name"], repo["name"]
        raise SubmitError(f"{self.url} serves no code location with lab_assets' jobs")

    def _launch(self, job: str, partition: str | None) -> str:
        from lab_assets.defs.partitions import CELL, DATA, SWEEP, cell_key

        tags = dict(self.tags_for(job, partition))
        if job == "cells":
            tags.update(CELL.get_tags_for_partition_key(cell_key(*partition.split("|"))))
        elif job == "datasets":
            tags.update(DATA.get_tags_for_partition_key(partition))
        elif job == "report":
            tags.update(SWEEP.get_tags_for_partition_key(partition))
        params = {
            "selector": {"repositoryLocationName": self.location, "repositoryName": self.repository, "jobName": f"materialize_{job}"},
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        }
        launched = self._graphql(LAUNCH, {"params": params})["launchRun"]
        if launched["__typename"] != "LaunchRunSuccess":
            raise SubmitError(f"launching {job} {partition or ''}: {launched.get('message', launched['__typename'])}")
        return launched["run"]["runId"]

    def run(self, job: str, partitions: list[str | None], on_done: Callable) -> list:
        """Launch one run per partition, then wait until all have finished."""
        from lab_assets.runner.execute import Outcome

        start = time.perf_counter()
        pending = {self._launch(job, p): p for p in partitions}
        outcomes = []
        while pending:
            time.sleep(POLL_SECONDS)
            statuses = self._graphql(STATUS, {"ids": list(pending)})["runsOrError"]["results"]
            for run in statuses:
                if run["status"] in DONE and run["runId"] in pending:
                    partition = pending.pop(run["runId"])
                    ok = run["status"] == "SUCCESS"
                    error = "" if ok else f"run {run['status'].lower()}: see run {run['runId']} in the UI"
                    outcomes.append(Outcome(job, partition or "", ok, time.perf_counter() - start, run["runId"], error))
                    on_done(outcomes[-1])
        return outcomes
