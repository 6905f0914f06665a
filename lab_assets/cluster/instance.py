"""The cluster's instance and workspace: k8s/base/dagster.yaml and workspace.yaml (shipped inside
the package as `k8s_base/`: links to them in the source tree, copies in a wheel, so a plain
`pip install .` runs `lab cluster up` too) with hosts, ports and the database overridden.

Two differences from Kubernetes: the run launcher is
`lab_assets.runtime.local_k8s_launcher.LocalK8sRunLauncher` (dagster-k8s's K8sRunLauncher building
each run's Job, a local process running its container), and run monitoring fails a run that has
not started within 3 minutes, not 20 (`LOCAL_RUN_MONITORING`)."""

from __future__ import annotations

from pathlib import Path

import yaml

# k8s/base/dagster.yaml and workspace.yaml, as package data (pyproject.toml).
K8S_INSTANCE = Path(__file__).with_name("k8s_base") / "dagster.yaml"
K8S_WORKSPACE = Path(__file__).with_name("k8s_base") / "workspace.yaml"


# A run's process starts in seconds (no node to add, no image to pull), so a run not started
# within 3 minutes is lost (its process died, or was never launched: the queue daemon leaves a
# run it marked STARTING unlaunched if it fails before the launch); run monitoring fails it and
# run retries start it again. The Kubernetes deployment's 20 minutes would stall a sweep that long.
LOCAL_RUN_MONITORING = {"start_timeout_seconds": 180, "poll_interval_seconds": 15}


def instance_config(
    pg_port: int,
    db_name: str,
    runs_dir: str | None = None,
    instance_file: Path = K8S_INSTANCE,
    pg_host: str = "127.0.0.1",
) -> dict:
    """k8s/base/dagster.yaml with the Postgres host, port and database overridden; with
    `runs_dir`, its K8sRunLauncher swapped for the per-process launcher (same config + `local`)
    and run monitoring's timings for processes (`LOCAL_RUN_MONITORING`)."""
    config = yaml.safe_load(instance_file.read_text())
    storage = config["storage"]
    block = storage["custom"]["config"] if "custom" in storage else storage["postgres"]
    block["postgres_db"].update(hostname=pg_host, port=pg_port, db_name=db_name)
    if runs_dir is not None:
        launcher = config["run_launcher"]
        assert (launcher["module"], launcher["class"]) == ("dagster_k8s", "K8sRunLauncher"), launcher
        launcher["module"], launcher["class"] = "lab_assets.runtime.local_k8s_launcher", "LocalK8sRunLauncher"
        secret_names = launcher["config"].get("env_secrets", [])
        launcher["config"]["local"] = {
            "runs_dir": runs_dir,
            # secret -> {key: environment variable of the daemon (the launching process)}
            "secrets": {
                launcher["config"]["postgres_password_secret"]: {"postgresql-password": "DAGSTER_PG_PASSWORD"},
                **{name: {var: var for var in SECRET_VARS.get(name, [])} for name in secret_names},
            },
        }
        config["run_monitoring"].update(LOCAL_RUN_MONITORING)
    return config


# What each Secret of the deployment holds (k8s/README.md, step 4), here from the environment.
# AWS_ENDPOINT_URL: the S3-compatible server's address (botocore and s3fs read it).
SECRET_VARS = {
    "lab-assets-s3": ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION"],
    "lab-assets-wandb": ["WANDB_API_KEY"],
}


def workspace_config(grpc_port: int) -> dict:
    config = yaml.safe_load(K8S_WORKSPACE.read_text())
    (entry,) = config["load_from"]
    entry["grpc_server"].update(host="127.0.0.1", port=grpc_port)
    return config
