"""One guard per private Dagster use (docs/ARCHITECTURE.md, "Private Dagster API"): each checks
the behaviour lab_assets/runtime/ relies on, so that a Dagster release that changes it fails here,
by name, instead of somewhere downstream. Dagster is bounded to the tested minor release in
pyproject.toml; raising that bound means running these first."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

import dagster as dg
import pytest

from lab_assets.runtime import (
    backfills,
    compute_logs,
    daemon,
    data_versions,
    latest_events,
    launcher,
    run_assets,
    run_queue,
    sqlite_storage,
)
from lab_assets.runtime.freshness.stale_status import FRESH, MISSING, STALE, StaleStatusReader


def guard(ok: bool, symbol: str, relied_on: str) -> None:
    if not ok:
        pytest.fail(f"Dagster {dg.__version__} changed {symbol}: {relied_on}; see docs/ARCHITECTURE.md", pytrace=False)


def params(fn) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]


REPO = Path(__file__).resolve().parents[1]
PARTS = dg.StaticPartitionsDefinition(["a", "b"])


@dg.observable_source_asset(partitions_def=PARTS)
def guard_source() -> dg.DataVersionsByPartition:
    return dg.DataVersionsByPartition({"a": "from-observe", "b": "from-observe"})


@dg.asset(partitions_def=PARTS, deps=[guard_source])
def guard_downstream() -> None:
    pass


GRAPH = dg.Definitions(assets=[guard_source, guard_downstream]).resolve_asset_graph()


# --- runtime/freshness/stale_status.py --------------------------------------------------------------------


def test_stale_status_resolver_answers_missing_fresh_stale_with_the_cause():
    symbol = "CachingStaleStatusResolver / AssetGraphView / TemporalContext (dagster._core)"
    instance = dg.DagsterInstance.ephemeral()
    data_versions.observe_if_changed(instance, "guard_source", "v1", "a")
    try:
        status = StaleStatusReader(instance, GRAPH).status("guard_downstream", "a")
    except TypeError as e:
        guard(
            False,
            symbol,
            f"constructed with (instance, asset_graph, loading_context=AssetGraphView(temporal_context=...)): {e}",
        )
    guard(status.status == MISSING, symbol, "a never-materialized partition is StaleStatus.MISSING")
    dg.materialize([guard_source, guard_downstream], selection=[guard_downstream], partition_key="a", instance=instance)
    guard(
        StaleStatusReader(instance, GRAPH).status("guard_downstream", "a").status == FRESH,
        symbol,
        "a partition materialized after its source's last observation is FRESH",
    )
    data_versions.observe_if_changed(instance, "guard_source", "v2", "a")
    reader = StaleStatusReader(instance, GRAPH)
    stale = reader.status("guard_downstream", "a")
    guard(
        stale.status == STALE and "guard_source" in stale.reason,
        symbol,
        f"a new data version of an upstream source makes the partition STALE, with the source as root cause (got {stale})",
    )
    guard(
        reader.observed("guard_source", "a") == "v2",
        symbol,
        "get_current_data_version of a source is its last observation's",
    )


# --- runtime/data_versions.py ----------------------------------------------------------------


def test_data_version_tag_is_what_observations_carry():
    from dagster._core.definitions.data_version import DATA_VERSION_TAG

    symbol = "DATA_VERSION_TAG (dagster._core.definitions.data_version)"
    instance = dg.DagsterInstance.ephemeral()
    # An observation made by Dagster itself (the UI's "Observe") records the version under the tag ...
    observe = dg.Definitions(
        assets=[guard_source], jobs=[dg.define_asset_job("observe_guard", selection=[guard_source])]
    )
    observe.resolve_job_def("observe_guard").execute_in_process(instance=instance)
    guard(
        data_versions.last_data_version(instance, "guard_source", "a") == "from-observe",
        symbol,
        f"an observable source's observation carries its data version in the {DATA_VERSION_TAG!r} tag",
    )
    # ... and a runless observation with the tag is what the stale-status resolver reads.
    guard(
        data_versions.observe_if_changed(instance, "guard_source", "runless", "a"),
        symbol,
        "observe_if_changed records a new version",
    )
    guard(
        not data_versions.observe_if_changed(instance, "guard_source", "runless", "a"),
        symbol,
        "and not the same version twice",
    )
    guard(
        StaleStatusReader(instance, GRAPH).observed("guard_source", "a") == "runless",
        symbol,
        "the resolver takes a runless observation's tag as the source's current data version",
    )


def test_latest_observation_of_every_partition_in_bulk():
    symbol = "EventLogStorage.get_latest_tags_by_partition + DagsterEventType (dagster._core.events)"
    instance = dg.DagsterInstance.ephemeral()
    guard(data_versions.last_data_versions(instance, "guard_source") == {}, symbol, "nothing observed: nothing")
    for partition, versions in {"a": ["v1", "v2"], "b": ["w1"], "c": ["x1"]}.items():
        for version in versions:
            data_versions.observe(instance, "guard_source", version, partition)
    instance.report_runless_asset_event(dg.AssetMaterialization("guard_source", partition="b"))  # not an observation
    instance.report_runless_asset_event(dg.AssetObservation("guard_source", partition="c"))  # no data version
    guard(
        data_versions.last_data_versions(instance, "guard_source") == {"a": "v2", "b": "w1"},
        symbol,
        "the latest observation's data version tag per partition, materializations ignored, none for an untagged latest one",
    )
    guard(
        {p: data_versions.last_data_version(instance, "guard_source", p) for p in "ab"} == {"a": "v2", "b": "w1"},
        symbol,
        "the same answers as one query per partition",
    )


def test_latest_materialization_of_every_partition_in_bulk_and_in_bounded_queries(monkeypatch):
    """What `defs/integrity.recorded` checks a sweep's files against, at any size: Dagster answers at
    most 10,000 records a query, so a 10,000-cell plan that asked for all at once failed."""
    symbol = "EventLogStorage.get_latest_storage_id_by_partition + DagsterEventType (dagster._core.events)"
    monkeypatch.setattr(latest_events, "_IDS_PER_QUERY", 2)  # three partitions: two queries
    instance = dg.DagsterInstance.ephemeral()
    for partition, value in [("a", 1), ("b", 1), ("a", 2), ("c", 1), ("b", 2)]:
        instance.report_runless_asset_event(
            dg.AssetMaterialization("guard_source", partition=partition, metadata={"v": value})
        )
    data_versions.observe(instance, "guard_source", "v9", "c")  # not a materialization
    ids = latest_events.latest_ids(instance, "guard_source")
    found = latest_events.records(instance, "guard_source", ids.values())
    guard(
        {p: found[i].asset_materialization.metadata["v"].value for p, i in ids.items()} == {"a": 2, "b": 2, "c": 1},
        symbol,
        "the latest materialization per partition, observations ignored, read in chunks",
    )
    guard(
        latest_events.latest_ids(instance, "guard_source", partitions=["b", "z"]).keys() == {"b"},
        symbol,
        "only the wanted partitions, an unmaterialized one absent",
    )


# --- runtime/freshness/kept_answers.py ------------------------------------------------------------------


def test_a_partitions_status_depends_only_on_its_own_events_and_wipes_hide_them():
    """What lets runtime/freshness/kept_answers.py keep an answer while its partition's latest events stay."""
    symbol = "CachingStaleStatusResolver (dagster._core) + get_latest_storage_id_by_partition"
    instance = dg.DagsterInstance.ephemeral()
    for partition in "ab":
        data_versions.observe(instance, "guard_source", "v1", partition)
        dg.materialize(
            [guard_source, guard_downstream], selection=[guard_downstream], partition_key=partition, instance=instance
        )
    before = StaleStatusReader(instance, GRAPH).status("guard_downstream", "a")
    data_versions.observe(instance, "guard_source", "v2", "b")
    dg.materialize([guard_source, guard_downstream], selection=[guard_downstream], partition_key="b", instance=instance)
    data_versions.observe(instance, "guard_source", "v3", "b")
    reader = StaleStatusReader(instance, GRAPH)
    guard(
        reader.status("guard_downstream", "a") == before and reader.status("guard_downstream", "b").status == STALE,
        symbol,
        "a partition's status is unchanged by another partition's events (identity partition mapping)",
    )
    instance.wipe_assets([dg.AssetKey("guard_downstream")])
    guard(
        latest_events.latest_ids(instance, "guard_downstream") == {},
        symbol,
        "a wiped asset's events are hidden from its latest storage ids",
    )
    with dg.instance_for_test() as persistent:
        ref = persistent.get_ref().event_storage_data
    guard(
        all(isinstance(getattr(ref, f, None), str) for f in ("module_name", "class_name", "config_yaml")),
        "DagsterInstance.get_ref().event_storage_data",
        "names the event log's class and configuration",
    )


# --- runtime/backfills.py --------------------------------------------------------------------


def test_backfill_request_carries_exactly_the_partitions_given():
    symbol = "AssetGraphSubset.from_asset_partition_set / RunRequest.for_asset_graph_subset"
    wanted = {("guard_downstream", "a"), ("guard_source", "b")}
    subset = backfills.partition_subset(wanted, GRAPH)
    request = backfills.backfill_request(subset, {"lab_assets/sweep": "s"})
    guard(
        request.asset_graph_subset is subset and request.tags == {"lab_assets/sweep": "s"},
        symbol,
        "a sensor's RunRequest holds the subset (a backfill request) and its tags",
    )
    guard(
        backfills.requested_partitions(request) == wanted,
        symbol,
        "iterate_asset_partitions gives back the (asset, partition) pairs",
    )
    guard(backfills.partition_subset(set(), GRAPH).is_empty, symbol, "an empty subset says so (is_empty)")


def test_running_backfills_are_counted_by_status_and_tags(tmp_path):
    from dagster._core.execution.backfill import PartitionBackfill

    symbol = "BulkActionsFilter / BulkActionStatus / DagsterInstance.get_backfills_count"
    # The SQLite run storage (ours): Dagster's in-memory one ignores a tags filter.
    with dg.instance_for_test(
        temp_dir=str(tmp_path),
        overrides={
            "run_storage": {
                "module": "lab_assets.runtime.sqlite_storage",
                "class": "OneEngineSqliteRunStorage",
                "config": {"base_dir": str(tmp_path / "runs")},
            }
        },
    ) as instance:
        subset = backfills.partition_subset({("guard_downstream", "a")}, GRAPH)
        instance.add_backfill(
            PartitionBackfill.from_asset_graph_subset(
                backfill_id="guard",
                backfill_timestamp=0.0,
                tags={"lab_assets/sweep": "s"},
                dynamic_partitions_store=instance,
                asset_graph_subset=subset,
                title=None,
                description=None,
                run_config=None,
            )
        )
        guard(
            backfills.backfill_running(instance, {"lab_assets/sweep": "s"}),
            symbol,
            "a REQUESTED backfill with the tag is counted",
        )
        guard(
            not backfills.backfill_running(instance, {"lab_assets/sweep": "other"}),
            symbol,
            "a backfill without the tag is not",
        )
        guard(
            backfills.requested_backfill_partitions(instance) == {"a"},
            "DagsterInstance.get_backfills / PartitionBackfill.asset_backfill_data.target_subset",
            "a REQUESTED backfill's partitions are read back",
        )


# --- runtime/sqlite_storage.py ---------------------------------------------------------------


def test_event_log_storage_hooks_are_called(tmp_path, monkeypatch):
    symbol = "ConsolidatedSqliteEventLogStorage (_connect, _store_asset_event, has_table)"
    storage_cls = sqlite_storage.OneEngineSqliteEventLogStorage
    calls: dict[str, list] = {"_connect": [], "_store_asset_event": [], "has_table": []}
    for name in calls:
        original = getattr(storage_cls, name)

        def spy(self, *args, _original=original, _name=name):
            calls[_name].append(args)
            return _original(self, *args)

        monkeypatch.setattr(storage_cls, name, spy)
    with dg.instance_for_test(
        temp_dir=str(tmp_path),
        overrides={
            "event_log_storage": {
                "module": "lab_assets.runtime.sqlite_storage",
                "class": "OneEngineSqliteEventLogStorage",
                "config": {"base_dir": str(tmp_path)},
            }
        },
    ) as instance:
        guard(
            isinstance(instance.event_log_storage, storage_cls),
            symbol,
            "the instance loads our event log storage class",
        )
        instance.report_runless_asset_event(dg.AssetMaterialization("guard_asset", partition="a"))
        instance.add_dynamic_partitions("guard_dynamic", ["x"])
        instance.get_dynamic_partitions("guard_dynamic")
        [record] = instance.fetch_materializations(dg.AssetKey("guard_asset"), limit=1).records
        guard(bool(calls["_connect"]), symbol, "every query and insert opens its connection with self._connect()")
        stored = [args for args in calls["_store_asset_event"] if len(args) == 3 and args[2] == record.storage_id]
        guard(bool(stored), symbol, "store_event calls _store_asset_event(conn, event, event_id) for a materialization")
        guard(bool(calls["has_table"]), symbol, "dynamic-partition lookups ask has_table(table_name) first")
        # The newest-materialization guard reads the row's storage id as its trailing integer.
        from dagster._core.storage.event_log.schema import AssetKeyTable

        with instance.event_log_storage.index_connection() as conn:
            row = conn.execute(
                AssetKeyTable.select().where(AssetKeyTable.c.asset_key == dg.AssetKey("guard_asset").to_string())
            ).fetchone()
        guard(
            row is not None and row.last_materialization.rstrip().endswith(f'"storage_id": {record.storage_id}}}'),
            symbol,
            'asset_keys.last_materialization is a serialized EventLogRecord ending in `"storage_id": N}`',
        )


def test_storage_head_moves_with_every_change_the_stale_status_resolver_reads(tmp_path):
    """runtime/freshness/instance_head.py reads Dagster's SQLite schema without Dagster (the saved no-op answer)."""
    from lab_assets.runtime import instance as lab_instance
    from lab_assets.runtime.freshness.instance_head import deleted_since, deletion_mark, head

    symbol = (
        "the consolidated SQLite event log's file and tables (event_log.db: event_logs, asset_keys, dynamic_partitions)"
    )
    (tmp_path / "dagster.yaml").write_text(lab_instance.instance_yaml("telemetry:\n  enabled: false\n", tmp_path))
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        instance.add_dynamic_partitions("guard_dynamic", ["x"])
        heads = [head(tmp_path)]
        guard(heads[0] is not None, symbol, f"the instance's events are in {tmp_path}/event_log.db")

        def changed(what: str) -> None:
            heads.append(head(tmp_path))
            guard(heads[-1] != heads[-2], symbol, f"the head changes when {what}")

        instance.report_runless_asset_event(dg.AssetMaterialization("guard_asset", partition="a"))
        changed("an event is stored")
        instance.report_runless_asset_event(dg.AssetMaterialization("guard_asset", partition="b"))
        changed("another event is stored")
        instance.add_dynamic_partitions("guard_dynamic", ["y"])
        changed("a dynamic partition is added")
        instance.delete_dynamic_partition("guard_dynamic", "y")
        changed("a dynamic partition is deleted")
        mark = deletion_mark(tmp_path)
        guard(not deleted_since(tmp_path, mark), symbol, "nothing deleted since a deletion mark")
        instance.wipe_assets([dg.AssetKey("guard_asset")])
        changed("an asset is wiped")
        guard(not deleted_since(tmp_path, mark), symbol, "a wipe deletes no event (its events are hidden, not removed)")
        runs = dg.materialize(
            [guard_source, guard_downstream], selection=[guard_downstream], partition_key="a", instance=instance
        )
        mark = deletion_mark(tmp_path)
        instance.delete_run(runs.run_id)
        instance.report_runless_asset_event(dg.AssetMaterialization("guard_asset", partition="a"))
        guard(
            deleted_since(tmp_path, mark),
            symbol,
            "deleting a run deletes its events, seen even after new events fill the ids",
        )
    (tmp_path / "dagster.yaml").write_text("storage:\n  postgres:\n    postgres_url: postgresql://x/y\n")
    guard(head(tmp_path) is None, symbol, "an instance with another storage has no head to read")


def test_event_log_private_helpers_keep_their_signatures():
    from dagster._core.storage.event_log import ConsolidatedSqliteEventLogStorage
    from dagster._core.storage.runs import SqliteRunStorage
    from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS

    base = ConsolidatedSqliteEventLogStorage
    guard(
        params(base._get_asset_entry_values) == ["event", "event_id", "has_asset_key_index_cols"],
        "ConsolidatedSqliteEventLogStorage._get_asset_entry_values",
        "takes (event, event_id, has_asset_key_index_cols)",
    )
    guard(
        params(base._has_asset_key_index_cols_on_connection) == ["conn"],
        "ConsolidatedSqliteEventLogStorage._has_asset_key_index_cols_on_connection",
        "takes (conn)",
    )
    guard(
        params(base._store_asset_event) == ["conn", "event", "event_id"],
        "ConsolidatedSqliteEventLogStorage._store_asset_event",
        "takes (conn, event, event_id)",
    )
    guard(
        "connect" in vars(SqliteRunStorage) and params(SqliteRunStorage.from_local)[:2] == ["base_dir", "inst_data"],
        "SqliteRunStorage",
        "has connect() (every query's connection) and from_local(base_dir, inst_data)",
    )
    guard(
        isinstance(SQLITE_BUSY_TIMEOUT_SECONDS, (int, float)), "SQLITE_BUSY_TIMEOUT_SECONDS", "is a number of seconds"
    )


# --- runtime/compute_logs.py -----------------------------------------------------------------


def test_step_execution_captures_through_capture_logs(tmp_path, monkeypatch):
    symbol = "LocalComputeLogManager.capture_logs"
    keys = []
    original = compute_logs.FileOnlyComputeLogManager.capture_logs

    def spy(self, log_key):
        keys.append(log_key)
        return original(self, log_key)

    monkeypatch.setattr(compute_logs.FileOnlyComputeLogManager, "capture_logs", spy)

    @dg.op
    def say():
        print("guard output")

    @dg.job
    def guard_job():
        say()

    with dg.instance_for_test(
        temp_dir=str(tmp_path),
        overrides={
            "compute_logs": {
                "module": "lab_assets.runtime.compute_logs",
                "class": "FileOnlyComputeLogManager",
                "config": {"base_dir": str(tmp_path / "logs")},
            }
        },
    ) as instance:
        guard(
            isinstance(instance.compute_log_manager, compute_logs.FileOnlyComputeLogManager),
            symbol,
            "the instance loads our manager",
        )
        guard_job.execute_in_process(instance=instance)
        guard(bool(keys), symbol, "a run's output is captured by instance.compute_log_manager.capture_logs(log_key)")
        manager = instance.compute_log_manager
        guard(manager.is_capture_complete(keys[0]), symbol, "the complete_artifact_path marker ends a capture")
        guard(
            "guard output" in manager.get_log_data(keys[0]).stdout.decode(),
            symbol,
            "get_captured_local_path(log_key, IO_TYPE_EXTENSION[STDOUT]) is the file the UI reads",
        )


# --- runtime/launcher.py ---------------------------------------------------------------------


def test_run_launcher_interfaces_keep_their_shape():
    from dagster._core.events import EngineEventData
    from dagster._core.launcher import CheckRunHealthResult, LaunchRunContext, RunLauncher, WorkerStatus
    from dagster._grpc.impl import core_execute_run
    from dagster._utils.hosted_user_process import recon_job_from_origin

    guard(
        RunLauncher.__abstractmethods__ <= {"launch_run", "terminate"},
        "RunLauncher",
        f"its abstract methods are launch_run and terminate (now {sorted(RunLauncher.__abstractmethods__)})",
    )
    guard(
        {"check_run_worker_health", "supports_check_run_worker_health", "dispose"} <= set(dir(RunLauncher)),
        "RunLauncher",
        "the daemon's run monitoring calls check_run_worker_health when supports_check_run_worker_health",
    )
    guard(
        params(core_execute_run)[:4] == ["recon_job", "dagster_run", "instance", "inject_env_vars"],
        "core_execute_run",
        "takes (recon_job, dagster_run, instance, inject_env_vars) and yields the run's events",
    )
    guard(params(recon_job_from_origin) == ["origin"], "recon_job_from_origin", "takes a JobPythonOrigin")
    guard(
        {"UNKNOWN", "RUNNING", "FAILED"} <= set(WorkerStatus.__members__),
        "WorkerStatus",
        "has UNKNOWN, RUNNING, FAILED",
    )
    guard(params(CheckRunHealthResult)[:2] == ["status", "msg"], "CheckRunHealthResult", "takes (status, msg)")
    guard({"dagster_run", "workspace"} <= set(params(LaunchRunContext)), "LaunchRunContext", "has dagster_run")
    guard(params(EngineEventData.in_process)[:1] == ["pid"], "EngineEventData.in_process", "takes a pid")
    guard(issubclass(launcher.WarmWorkerRunLauncher, RunLauncher), "RunLauncher", "is the base class of our launcher")
    instance_methods = {  # not marked public by Dagster; the launcher (and runtime/orphans.py) call them
        "report_run_failed": ["dagster_run", "message"],
        "report_run_canceling": ["run", "message"],
        "add_run_tags": ["run_id", "new_tags"],
        "report_engine_event": ["message", "dagster_run", "engine_event_data"],
    }
    for name, expected in instance_methods.items():
        method = getattr(dg.DagsterInstance, name, None)
        guard(
            method is not None and params(method)[: len(expected)] == expected,
            f"DagsterInstance.{name}",
            f"takes ({', '.join(expected)})",
        )


# --- runtime/postgres_storage.py -------------------------------------------------------------
# (Its behaviour against a real Postgres: test_cluster.py's race replay; here what needs none.)


def test_postgres_storage_hooks_keep_their_shape():
    import inspect

    from dagster._core.storage.base_storage import DagsterStorage
    from dagster._core.storage.event_log.migration import ASSET_KEY_INDEX_COLS
    from dagster._core.storage.runs.sql_run_storage import SqlRunStorage
    from dagster_postgres.event_log import PostgresEventLogStorage
    from dagster_postgres.run_storage import PostgresRunStorage
    from dagster_postgres.schedule_storage import PostgresScheduleStorage
    from dagster_postgres.storage import DagsterPostgresStorage

    symbol = "PostgresEventLogStorage._store_asset_event"
    guard(
        params(PostgresEventLogStorage._store_asset_event) == ["conn", "event", "event_id"],
        symbol,
        "takes (conn, event, event_id)",
    )
    guard(
        "_store_asset_event(" in inspect.getsource(PostgresEventLogStorage.store_event),
        symbol,
        "store_event upserts the asset row through _store_asset_event (overridden: the row only moves forward)",
    )
    guard(
        params(PostgresEventLogStorage._get_asset_entry_values) == ["event", "event_id", "has_asset_key_index_cols"],
        "PostgresEventLogStorage._get_asset_entry_values",
        "takes (event, event_id, has_asset_key_index_cols)",
    )
    guard(
        isinstance(ASSET_KEY_INDEX_COLS, str) and hasattr(PostgresEventLogStorage, "has_secondary_index"),
        "ASSET_KEY_INDEX_COLS",
        "names the secondary index has_secondary_index(name) answers for",
    )
    guard(
        params(PostgresEventLogStorage.optimize_for_webserver) == ["statement_timeout", "pool_recycle", "max_overflow"],
        "PostgresEventLogStorage.optimize_for_webserver",
        "takes (statement_timeout, pool_recycle, max_overflow) and builds self._engine",
    )
    for method in (PostgresRunStorage.connect, PostgresScheduleStorage.connect, PostgresEventLogStorage._connect):
        guard(
            "create_pg_connection(self._engine)" in inspect.getsource(method),
            method.__qualname__,
            "is every query's connection, create_pg_connection(self._engine) (overridden: waits out an outage)",
        )
    guard(
        params(SqlRunStorage.fetchall) == ["query"]
        and params(SqlRunStorage.fetchone) == ["query"]
        and "self.fetchall(" in inspect.getsource(SqlRunStorage.get_run_records),
        "SqlRunStorage.fetchall/fetchone",
        "take (query) and read the run records (overridden: read again when Postgres drops the connection)",
    )
    checks = (
        "has_run_stats_index_cols",
        "has_bulk_actions_selector_cols",
        "has_backfill_id_column",
        "has_bulk_action_job_name_column",
        "has_backfill_tags_table",
    )
    guard(
        all(params(getattr(SqlRunStorage, name)) == [] for name in checks)
        and "self.has_run_stats_index_cols()" in inspect.getsource(SqlRunStorage.get_run_records),
        "SqlRunStorage's schema checks",
        "take no arguments; get_run_records checks the runs table's columns first "
        "(overridden: read again when Postgres drops the connection)",
    )
    init = inspect.getsource(DagsterPostgresStorage.__init__)
    guard(
        all(f"self.{name} =" in init for name in ("_run_storage", "_event_log_storage", "_schedule_storage")),
        "DagsterPostgresStorage.__init__",
        "builds _run_storage, _event_log_storage and _schedule_storage (ours swaps the event log)",
    )
    guard(callable(DagsterStorage.__init__), "DagsterStorage", "is the base class whose __init__ ours calls")


# --- runtime/daemon.py -----------------------------------------------------------------------


def test_backfill_loop_reads_the_daemon_interval_when_it_starts():
    import dagster._daemon.backfill as backfill
    import dagster._daemon.controller as controller

    symbol = "dagster._daemon.controller.DEFAULT_DAEMON_INTERVAL_SECONDS"
    guard(
        isinstance(getattr(controller, "DEFAULT_DAEMON_INTERVAL_SECONDS", None), (int, float)),
        symbol,
        "exists, a number",
    )
    # daemon.py sets the constant before the daemon starts: that only works while the backfill
    # loop imports it from the controller inside its function, not once at module level.
    guard(
        "DEFAULT_DAEMON_INTERVAL_SECONDS" not in vars(backfill),
        symbol,
        "dagster/_daemon/backfill.py does not bind it at import",
    )
    tree = ast.parse(inspect.getsource(backfill))
    inside = [
        node
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(fn)
        if isinstance(node, ast.ImportFrom)
        and node.module == "dagster._daemon.controller"
        and any(a.name == "DEFAULT_DAEMON_INTERVAL_SECONDS" for a in node.names)
    ]
    guard(bool(inside), symbol, "the backfill loop imports it from the controller inside its function")
    from dagster._daemon.cli import main

    guard(callable(main), "dagster._daemon.cli.main", "is the `dagster-daemon` command")
    guard(
        "controller.DEFAULT_DAEMON_INTERVAL_SECONDS = BACKFILL_INTERVAL_SECONDS"
        in textwrap.dedent(inspect.getsource(daemon.main)),
        symbol,
        "lab_assets/runtime/daemon.py sets it (this guard checks what that line relies on)",
    )


# --- runtime/run_assets.py -------------------------------------------------------------------


@dg.multi_asset(
    specs=[dg.AssetSpec("guard_model", skippable=True), dg.AssetSpec("guard_embedding", skippable=True)],
    partitions_def=PARTS,
    can_subset=True,
)
def guard_pair(context):  # no annotation: this file has `from __future__ import annotations`
    for name in sorted(context.selected_output_names):
        yield dg.Output(None, output_name=name)


def test_a_runs_assets_are_its_selection_or_its_execution_plans():
    symbol = "DagsterRun.asset_selection / DagsterInstance.get_execution_plan_snapshot(...).asset_selection"
    defs = dg.Definitions(
        assets=[guard_source, guard_downstream, guard_pair],
        jobs=[dg.define_asset_job("guard_job", selection=[guard_pair, guard_downstream])],
    )
    instance = dg.DagsterInstance.ephemeral()
    whole = instance.create_run_for_job(defs.resolve_job_def("guard_job"))
    guard(not whole.asset_selection, symbol, "a run of a whole asset job carries no asset selection")
    guard(whole.execution_plan_snapshot_id is not None, symbol, "a run stores its execution plan snapshot")
    keys = {dg.AssetKey("guard_model"), dg.AssetKey("guard_embedding"), dg.AssetKey("guard_downstream")}
    guard(
        instance.get_execution_plan_snapshot(whole.execution_plan_snapshot_id).asset_selection == keys,
        symbol,
        "the plan snapshot's asset_selection is every asset of the job's steps",
    )
    guard(run_assets.run_assets(instance, whole) == keys, symbol, "run_assets reads it")
    # A subset of a multi-asset's outputs, as a backfill or a launch with an asset selection makes it.
    subset_job = defs.resolve_implicit_global_asset_job_def().get_subset(
        asset_selection={dg.AssetKey("guard_embedding")}
    )
    baked = instance.create_run_for_job(subset_job)
    guard(
        instance.get_execution_plan_snapshot(baked.execution_plan_snapshot_id).asset_selection
        == {dg.AssetKey("guard_embedding")},
        symbol,
        "a subset job's plan snapshot names the selected outputs of a multi-asset only",
    )
    selected = instance.create_run_for_job(
        defs.resolve_implicit_global_asset_job_def(), asset_selection={dg.AssetKey("guard_embedding")}
    )
    guard(selected.asset_selection == {dg.AssetKey("guard_embedding")}, symbol, "a selecting run carries its selection")


# --- runtime/run_queue.py --------------------------------------------------------------------


def test_queue_daemon_polls_at_the_coordinators_fractional_interval(tmp_path):
    from dagster._daemon.controller import create_daemon_of_type
    from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon

    symbol = "QueuedRunCoordinator.dequeue_interval_seconds (read by the daemon controller)"
    with dg.instance_for_test(
        temp_dir=str(tmp_path),
        overrides={
            "run_coordinator": {
                "module": "lab_assets.runtime.run_queue",
                "class": "RunQueue",
                "config": {"dequeue_interval_seconds": 0.25},
            }
        },
    ) as instance:
        guard(
            isinstance(instance.run_coordinator, run_queue.RunQueue),
            symbol,
            "the instance loads RunQueue with a float interval",
        )
        queue_daemon = create_daemon_of_type(QueuedRunCoordinatorDaemon.daemon_type(), instance)
        guard(
            getattr(queue_daemon, "interval_seconds", None) == 0.25,
            symbol,
            "the queue daemon's interval is instance.run_coordinator.dequeue_interval_seconds, fractions kept",
        )


def test_every_private_import_in_runtime_has_a_guard_and_a_row():
    # Every module of runtime/, present and future: a new private import needs a guard above and
    # its module named in docs/ARCHITECTURE.md ("Private Dagster API").
    covered = {
        "dagster._core.asset_graph_view.asset_graph_view",
        "dagster._core.definitions.data_version",
        "dagster._core.definitions.temporal_context",
        "dagster._time",
        "dagster._core.definitions.assets.graph.asset_graph_subset",
        "dagster._core.definitions.events",
        "dagster._core.execution.backfill",
        "dagster._core.storage.event_log",
        "dagster._core.storage.event_log.schema",
        "dagster._core.storage.runs",
        "dagster._core.storage.sqlite",
        "dagster._core.execution.compute_logs",
        "dagster._core.storage.compute_log_manager",
        "dagster._core.storage.local_compute_log_manager",
        "dagster._utils",
        "dagster._core.launcher",
        "dagster._serdes",
        "dagster._core.events",
        "dagster._core.origin",
        "dagster._grpc.impl",
        "dagster._utils.hosted_user_process",
        "dagster._daemon.controller",
        "dagster._daemon.cli",
        "dagster._core.storage.base_storage",
        "dagster._core.storage.event_log.migration",
    }
    imported: dict[str, set[str]] = {}
    for path in sorted((REPO / "lab_assets" / "runtime").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in getattr(node, "names", [])]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                if name.startswith("dagster._"):
                    imported.setdefault(name, set()).add(path.name)
    unguarded = {m: sorted(f) for m, f in imported.items() if m not in covered}
    assert not unguarded, f"private Dagster imports without a guard in this file: {unguarded}"
    doc = (REPO / "docs" / "ARCHITECTURE.md").read_text()
    unlisted = sorted(m for m in imported if f"`{m}`" not in doc)
    assert not unlisted, (
        f"private Dagster modules not named in docs/ARCHITECTURE.md ('Private Dagster API'): {unlisted}"
    )
