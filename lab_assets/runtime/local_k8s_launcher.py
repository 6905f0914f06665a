"""A run launcher that is dagster-k8s's `K8sRunLauncher` with a local process for a kubelet.

The one-machine cluster (`lab cluster up`) uses the Kubernetes instance configuration
(k8s/base/dagster.yaml) with only this launcher swapped in. Everything up to the Kubernetes API
call is dagster-k8s's own code: `K8sRunLauncher.launch_run` builds the run's Job
(`construct_dagster_k8s_job`: the launcher config merged with the run's `dagster-k8s/config`
tags, the image, `env_vars`, `env_secrets`, the instance ConfigMap, volumes). Where the launcher
would create that Job through the API, `LocalJobs` runs its container instead:

- the container's command + args, as a process in its own session, in an empty private folder
  (`<runs_dir>/<job name>/`) that stands for the container's file system: every volume mount
  and every absolute path in the container's environment (DAGSTER_HOME, LAB_HOME) lands inside
  it. A PersistentVolumeClaim is an empty folder there, so there is no local disk shared
  between runs, the webserver or the code server: what a pod would lack, the process lacks.
- its environment is exactly the container's `env` and `envFrom`, plus what the image sets
  (PATH, PYTHONPATH, HOME and a few like them, from this process) and the machine's OpenBLAS
  kernel settings (OPENBLAS_*), if this machine sets any. `valueFrom.secretKeyRef` and
  `envFrom.secretRef` are resolved through `secrets`: secret name -> {key: name of an environment
  variable of the launching process}. A reference to a missing secret or key fails the launch,
  as a pod would (CreateContainerConfigError). The values are never written anywhere.
- the run worker gets its instance by value in its arguments (as from K8sRunLauncher); the
  folders in it, named by the launcher's DAGSTER_HOME path, become the process's own DAGSTER_HOME
  (the image's `/opt/dagster/dagster_home`, inside the private folder).
- status (run monitoring), termination (the UI's Terminate) and debug output read and signal
  the process through files in its folder (`pid`, `exit_code`, `output.log`), so they work from
  any process of the cluster, as the Kubernetes API does.

Not modelled: the security context's uid (the process runs as the launching user), resource
limits and node placement (no scheduler).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import dagster as dg
import kubernetes
from dagster._serdes import ConfigurableClassData
from dagster_k8s import K8sRunLauncher
from dagster_k8s.job import DagsterK8sJobConfig

from lab_assets.core.processes import alive
from lab_assets.core.settings import DAGSTER_HOME_VAR, PLUGINS_VAR

# What the image provides besides the Job's own environment (the Dockerfile's ENV and PATH; an
# image with the lab's own code may set LAB_PLUGINS: k8s/README.md, "The lab's own code").
IMAGE_ENV = ("PATH", "PYTHONPATH", "VIRTUAL_ENV", "LANG", "LC_ALL", "TZ", "NUMBA_CACHE_DIR", PLUGINS_VAR)
IMAGE_FIXED_ENV = {"PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
# The machine's OpenBLAS kernel settings (OPENBLAS_CORETYPE, ...) where it sets any: OpenBLAS
# otherwise picks its kernel by CPU detection, and another kernel sums in another order, so a
# float metric would differ in its last bits from a run on this machine outside the cluster.
MACHINE_ENV_PREFIXES = ("OPENBLAS_",)


class LaunchError(RuntimeError):
    """The Job's container cannot be started (a missing secret, config map or executable)."""


class LocalJobs:
    """The part of dagster-k8s's `DagsterKubernetesClient` that `K8sRunLauncher` uses, backed by
    local processes. One folder per Job under `runs_dir`."""

    def __init__(self, runs_dir: str, secrets: dict, instance_home: str | None = None):
        self.runs_dir = Path(runs_dir)
        self.secrets = secrets
        self.instance_home = instance_home  # the launching instance's DAGSTER_HOME

    # -- creating a Job: run its container -------------------------------------------------
    def create_namespaced_job_with_retries(self, body, namespace: str) -> None:
        job = kubernetes.client.ApiClient().sanitize_for_serialization(body)
        name = job["metadata"]["name"]
        folder = self.runs_dir / name
        if folder.exists():
            raise LaunchError(f"Job {name} already exists in {self.runs_dir}")
        root = folder / "root"
        root.mkdir(parents=True)
        spec = job["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        (folder / "job.json").write_text(json.dumps(job, indent=2))  # `kubectl get job -o json`
        self._mount(root, spec.get("volumes") or [], container.get("volumeMounts") or [])
        env = self._environment(root, container)
        argv = [*(container.get("command") or []), *(container.get("args") or [])]
        # The run worker's argument carries the launcher's instance (its config, by value) whose
        # folders are named by the launcher's DAGSTER_HOME path; in a pod that path is the pod's
        # own (the image's DAGSTER_HOME), here it becomes the process's own.
        home = env.get(DAGSTER_HOME_VAR)
        if home and self.instance_home:
            Path(home).mkdir(parents=True, exist_ok=True)
            argv = [arg.replace(self.instance_home, home) for arg in argv]
        executable = shutil.which(argv[0], path=env["PATH"]) if argv else None
        if executable is None:
            raise LaunchError(f"Job {name}: the container's command {argv[:1]} is not on the image's PATH")
        workdir = root / (container.get("workingDir") or "/").lstrip("/")
        workdir.mkdir(parents=True, exist_ok=True)
        log = open(folder / "output.log", "wb")
        process = subprocess.Popen(
            [executable, *argv[1:]],
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        (folder / "pid").write_text(str(process.pid))
        threading.Thread(target=self._reap, args=(process, folder), daemon=True, name=f"reap-{name}").start()

    @staticmethod
    def _reap(process: subprocess.Popen, folder: Path) -> None:
        code = process.wait()
        tmp = folder / ".exit_code.tmp"
        tmp.write_text(str(code))
        tmp.replace(folder / "exit_code")

    def _mount(self, root: Path, volumes: list[dict], mounts: list[dict]) -> None:
        by_name = {v["name"]: v for v in volumes}
        for mount in mounts:
            volume = by_name[mount["name"]]
            if not ({"persistentVolumeClaim", "emptyDir"} & set(volume)):
                raise LaunchError(
                    f"volume {mount['name']}: only claims and emptyDir are supported by the local launcher"
                )
            # A claim is an empty folder of this run's own: no disk is shared between runs here.
            (root / mount["mountPath"].lstrip("/")).mkdir(parents=True, exist_ok=True)

    def _secret(self, name: str) -> dict:
        keys = self.secrets.get(name)
        if keys is None:
            raise LaunchError(f"secret {name} is not defined for this launcher")
        return {key: os.environ[var] for key, var in keys.items() if var in os.environ}

    def _environment(self, root: Path, container: dict) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k in IMAGE_ENV or k.startswith(MACHINE_ENV_PREFIXES)}
        env.update(IMAGE_FIXED_ENV)
        env["HOME"] = str(root / "home")
        for source in container.get("envFrom") or []:
            if "secretRef" in source:
                env.update(self._secret(source["secretRef"]["name"]))
            elif "configMapRef" in source:
                raise LaunchError("envFrom configMapRef is not supported by the local launcher")
        for var in container.get("env") or []:
            if "value" in var:
                value = var["value"]
                env[var["name"]] = str(root) + value if value.startswith("/") else value
            elif ref := (var.get("valueFrom") or {}).get("secretKeyRef"):
                values = self._secret(ref["name"])
                if ref["key"] not in values:
                    raise LaunchError(f"secret {ref['name']} has no key {ref['key']} (for {var['name']})")
                env[var["name"]] = values[ref["key"]]
            else:
                raise LaunchError(f"environment variable {var['name']}: only values and secretKeyRef are supported")
        Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
        return env

    # -- reading and deleting Jobs ---------------------------------------------------------
    def _pid(self, job_name: str) -> int | None:
        path = self.runs_dir / job_name / "pid"
        return int(path.read_text()) if path.is_file() else None

    def _exit_code(self, job_name: str) -> int | None:
        path = self.runs_dir / job_name / "exit_code"
        return int(path.read_text()) if path.is_file() else None

    def get_job_status(self, namespace: str, job_name: str):
        pid = self._pid(job_name)
        if pid is None:
            return None
        code = self._exit_code(job_name)
        if code is None and not alive(pid):
            code = -1  # gone without an exit code: its launcher died with it
        if code is None:
            return kubernetes.client.V1JobStatus(active=1)
        return kubernetes.client.V1JobStatus(succeeded=1) if code == 0 else kubernetes.client.V1JobStatus(failed=1)

    def delete_job(self, job_name: str, namespace: str) -> bool:
        pid = self._pid(job_name)
        if pid is None:
            return False
        try:
            os.killpg(pid, signal.SIGTERM)  # the run worker handles SIGTERM as a termination
        except ProcessLookupError:
            pass
        return True

    def get_pod_names_in_job(self, job_name: str, namespace: str) -> list[str]:
        return [job_name] if self._pid(job_name) is not None else []

    def get_pod_debug_info(self, pod_name: str, namespace: str, include_container_logs: bool | None = True, **_) -> str:
        log = self.runs_dir / pod_name / "output.log"
        code = self._exit_code(pod_name)
        lines = [f"Process for {pod_name}: pid {self._pid(pod_name)}, exit code {code}"]
        if include_container_logs and log.is_file():
            lines += ["Last lines of its output:", *log.read_text(errors="replace").splitlines()[-25:]]
        return "\n".join(lines)

    def get_job_debug_info(self, job_name: str, namespace: str) -> str:
        return f"No process was started for Job {job_name} under {self.runs_dir}"


class LocalK8sRunLauncher(K8sRunLauncher):
    """`K8sRunLauncher` (same config) + `local:` {runs_dir, secrets}."""

    def __init__(self, local: dict, inst_data: ConfigurableClassData | None = None, **k8s_config):
        self._local = local
        runs_dir = Path(local["runs_dir"])
        runs_dir.mkdir(parents=True, exist_ok=True)
        # K8sRunLauncher loads cluster credentials when built; there is no API server here, so
        # it gets a kubeconfig naming none (nothing ever calls it: `LocalJobs` replaces the client).
        kubeconfig = runs_dir / "kubeconfig-unused"
        if not kubeconfig.is_file():
            kubeconfig.write_text(_NO_CLUSTER_KUBECONFIG)
        k8s_config.update(load_incluster_config=False, kubeconfig_file=str(kubeconfig))
        super().__init__(inst_data=inst_data, **k8s_config)
        self._api_client = LocalJobs(str(runs_dir), local.get("secrets") or {})

    def register_instance(self, instance) -> None:
        super().register_instance(instance)
        self._api_client.instance_home = instance.root_directory

    @classmethod
    def config_type(cls):
        return {
            **DagsterK8sJobConfig.config_type_run_launcher(),
            "local": dg.Field(
                {
                    "runs_dir": dg.Field(dg.StringSource, description="one folder per run (its private file system)"),
                    "secrets": dg.Field(
                        dg.Permissive(),
                        is_required=False,
                        default_value={},
                        description="secret name -> {key: environment variable of this process}",
                    ),
                }
            ),
        }

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data, **config_value)


_NO_CLUSTER_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: none, user: {token: unused}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""
