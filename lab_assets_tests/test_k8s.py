"""The Kubernetes deployment, checked without a cluster.

- k8s/ is rendered by `kubectl kustomize` (skipped, with the reason, only when no kubectl with
  kustomize >= v4 is installed) and every object is validated against the Kubernetes OpenAPI
  schemas of K8S_VERSION with kubernetes-validate in strict mode (unknown fields are errors).
- The policy the manifests promise: namespaced least-privilege RBAC, non-root pods, Secrets only
  referenced, pinned images, the GPU node convention.
- The instance ConfigMap is checked with Dagster's own instance schema, and a real
  K8sRunLauncher is built from it; Jobs for `k8s_tags` are rendered with dagster-k8s's own
  `construct_dagster_k8s_job`, the way the run launcher and `k8s_job_executor` do, and
  validated against the same schemas.
- The Helm values and the Dockerfile agree with all of the above.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from lab_assets.core import k8s_resources as k8s
from lab_assets.defs import jobs
from lab_assets_tests.conftest import missing, require_tool

REPO = Path(__file__).resolve().parents[1]
K8S_DIR = REPO / "k8s"
INSTANCE_FILE = K8S_DIR / "base" / "dagster.yaml"  # becomes the ConfigMap lab-assets-instance
K8S_VERSION = "1.31"  # the Kubernetes API version the manifests are validated against (k8s/README.md)
NAMESPACE = "lab-assets"
SERVICE_ACCOUNT = "lab-assets-run-launcher"
SECRETS = {"lab-assets-postgres", "lab-assets-wandb", "lab-assets-s3"}
PLACEHOLDER_IMAGE = "ghcr.io/YOUR_ORG/lab-assets:TAG"
LAB_HOME = "/data/lab"
DAGSTER_HOME = "/opt/dagster/dagster_home"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

# The Role's rules, (apiGroup, resource) -> verbs; each verb is one dagster_k8s calls (rbac.yaml).
ROLE_RULES = {
    ("batch", "jobs"): {"create", "get", "list", "watch", "delete"},
    ("batch", "jobs/status"): {"get"},
    ("", "pods"): {"get", "list", "watch", "delete"},
    ("", "pods/log"): {"get"},
    ("", "events"): {"list"},
}

BASE_OBJECTS = {
    ("Namespace", "lab-assets"),
    ("ServiceAccount", SERVICE_ACCOUNT),
    ("Role", SERVICE_ACCOUNT),
    ("RoleBinding", SERVICE_ACCOUNT),
    ("ConfigMap", "lab-assets-instance"),
    ("ConfigMap", "lab-assets-workspace"),
    ("PersistentVolumeClaim", "lab-assets-data"),
    ("Service", "lab-assets-postgresql"),
    ("StatefulSet", "lab-assets-postgresql"),
    ("Service", "lab-assets-user-code"),
    ("Deployment", "lab-assets-user-code"),
    ("Service", "lab-assets-webserver"),
    ("Deployment", "lab-assets-webserver"),
    ("Deployment", "lab-assets-daemon"),
}
DEVICE_PLUGIN = ("DaemonSet", "nvidia-device-plugin-daemonset")


# ---------------------------------------------------------------------------------------------
# Rendering


def _kubectl() -> str:
    """The kubectl binary, or skip: only its absence (or a too-old kustomize) skips."""
    kubectl = require_tool("kubectl", "cannot render k8s/ (.ci/run installs it with apt-get)")
    out = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=60)
    found = json.loads(out.stdout or "{}").get("kustomizeVersion", "") if out.returncode == 0 else ""
    major = re.match(r"v?(\d+)\.", found)
    if not major or int(major[1]) < 4:
        missing(f"kubectl at {kubectl} embeds kustomize {found or '< v4'}; k8s/ needs >= v4 (kubectl >= 1.21)")
    return kubectl


def kustomize(path: Path) -> list[dict]:
    out = subprocess.run([_kubectl(), "kustomize", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict]]:
    return {"base": kustomize(K8S_DIR / "base"), "gpu": kustomize(K8S_DIR / "overlays" / "gpu")}


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def get(objects: list[dict], kind: str, name: str) -> dict:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def pod_specs(objects: list[dict]) -> list[tuple[dict, dict]]:
    """(object, pod spec) for every workload that creates pods."""
    kinds = {"Deployment", "StatefulSet", "DaemonSet", "Job"}
    return [(o, o["spec"]["template"]["spec"]) for o in objects if o["kind"] in kinds]


def validate(obj: dict) -> None:
    """Strict OpenAPI validation at K8S_VERSION; the error names the object and the field."""
    try:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        where = ".".join(map(str, e.path))
        pytest.fail(f"{obj['kind']}/{obj['metadata']['name']}: {where}: {e.message}")


# ---------------------------------------------------------------------------------------------
# Security checks shared by the manifests and the Jobs dagster-k8s renders


def pod_security_problems(spec: dict, *, root_allowed: bool = False) -> list[str]:
    """What keeps a pod spec from the non-root, no-escalation, seccomp'd baseline we promise
    (the Pod Security Standard `restricted` for these fields). `root_allowed` for the device
    plugin only, which must create a socket in a root-owned host folder."""
    problems = []
    pod = spec.get("securityContext") or {}
    if spec.get("hostNetwork") or spec.get("hostPID") or spec.get("hostIPC"):
        problems.append("uses a host namespace")
    for container in [*spec.get("initContainers", []), *spec["containers"]]:
        name, ctx = container["name"], container.get("securityContext") or {}

        def effective(key, ctx=ctx):
            return ctx.get(key, pod.get(key))

        if ctx.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation is not false")
        if ctx.get("privileged"):
            problems.append(f"{name}: privileged")
        if "ALL" not in (ctx.get("capabilities") or {}).get("drop", []):
            problems.append(f"{name}: capabilities do not drop ALL")
        if (ctx.get("capabilities") or {}).get("add"):
            problems.append(f"{name}: adds capabilities")
        if root_allowed:
            continue
        if effective("runAsNonRoot") is not True:
            problems.append(f"{name}: runAsNonRoot is not true")
        if not effective("runAsUser"):
            problems.append(f"{name}: runAsUser is unset or 0")
        if (effective("seccompProfile") or {}).get("type") != "RuntimeDefault":
            problems.append(f"{name}: seccompProfile is not RuntimeDefault")
    if not root_allowed and any("hostPath" in v for v in spec.get("volumes", [])):
        problems.append("mounts a hostPath volume")
    return problems


def tolerates(tolerations: list[dict], taint: dict) -> bool:
    """Kubernetes' rule for whether one of `tolerations` tolerates `taint`."""
    for t in tolerations:
        if t.get("effect") not in (None, "", taint["effect"]):
            continue
        if not t.get("key") and t.get("operator") == "Exists":
            return True
        if t.get("key") != taint["key"]:
            continue
        if t.get("operator") == "Exists" or t.get("value") == taint["value"]:
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Manifests


def test_manifests_render_and_validate_against_openapi(rendered):
    base, gpu = rendered["base"], rendered["gpu"]
    assert {(o["kind"], o["metadata"]["name"]) for o in base} == BASE_OBJECTS
    assert {(o["kind"], o["metadata"]["name"]) for o in gpu} == BASE_OBJECTS | {DEVICE_PLUGIN}
    for obj in gpu:
        validate(obj)
    for obj in base:
        if obj["kind"] != "Namespace":
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["metadata"]["name"]
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "lab-assets"
    assert get(gpu, *DEVICE_PLUGIN)["metadata"]["namespace"] == "kube-system"
    instance_config(gpu)  # the ConfigMap holds k8s/base/dagster.yaml verbatim


def test_openapi_validation_is_strict():
    """A misspelt field must fail validation, or the test above proves nothing."""
    deployment = yaml.safe_load((K8S_DIR / "base" / "daemon.yaml").read_text())
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["runAsNonroot"] = True
    with pytest.raises(kubernetes_validate.ValidationError, match="runAsNonroot"):
        kubernetes_validate.validate(deployment, K8S_VERSION, strict=True)


def test_rbac_is_namespaced_and_least_privilege(rendered):
    objects = rendered["gpu"]
    assert not by_kind(objects, "ClusterRole") and not by_kind(objects, "ClusterRoleBinding")
    (role,) = by_kind(objects, "Role")
    rules = {}
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, rule  # no resourceNames/nonResourceURLs
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                rules.setdefault((group, resource), set()).update(rule["verbs"])
    assert rules == ROLE_RULES
    (binding,) = by_kind(objects, "RoleBinding")
    role_ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]}
    assert binding["roleRef"] == role_ref
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]

    # Only the pods that launch or terminate Jobs hold a token; the rest get none.
    for obj, spec in pod_specs(objects):
        name = obj["metadata"]["name"]
        if name in ("lab-assets-webserver", "lab-assets-daemon"):
            assert spec["serviceAccountName"] == SERVICE_ACCOUNT
        else:
            assert spec.get("automountServiceAccountToken") is False, name
            assert "serviceAccountName" not in spec, name


def test_pods_run_non_root_without_privilege(rendered):
    for obj, spec in pod_specs(rendered["gpu"]):
        system = obj["metadata"]["namespace"] == "kube-system"
        problems = pod_security_problems(spec, root_allowed=system)
        assert not problems, (obj["metadata"]["name"], problems)
        if not system:
            for container in spec["containers"]:
                assert "memory" in container["resources"]["limits"], (obj["metadata"]["name"], container["name"])
    plugin = get(rendered["gpu"], *DEVICE_PLUGIN)["spec"]["template"]["spec"]
    assert [v["hostPath"]["path"] for v in plugin["volumes"]] == ["/var/lib/kubelet/device-plugins"]
    assert plugin["automountServiceAccountToken"] is False


def test_security_check_catches_a_root_pod():
    spec = {"containers": [{"name": "c", "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": True}}]}
    problems = pod_security_problems(spec)
    assert any("allowPrivilegeEscalation" in p for p in problems) and any("runAsUser" in p for p in problems)


def test_secrets_are_only_referenced(rendered):
    objects = rendered["gpu"]
    assert not by_kind(objects, "Secret"), "Secrets are created by hand (k8s/README.md), never shipped"
    referenced = set()
    for obj, spec in pod_specs(objects):
        for container in spec["containers"]:
            for env in container.get("env", []):
                if "valueFrom" in env:
                    referenced.add(env["valueFrom"]["secretKeyRef"]["name"])
                elif re.search(r"PASSWORD|SECRET|TOKEN|API_KEY|ACCESS_KEY", env["name"]):
                    pytest.fail(f"{obj['metadata']['name']}: {env['name']} has an inline value")
            referenced |= {e["secretRef"]["name"] for e in container.get("envFrom", [])}
    assert referenced == SECRETS
    user_code = get(objects, "Deployment", "lab-assets-user-code")["spec"]["template"]["spec"]["containers"][0]
    assert {e["name"]: e["valueFrom"]["secretKeyRef"] for e in user_code["env"] if "valueFrom" in e} == {
        "DAGSTER_PG_PASSWORD": {"name": "lab-assets-postgres", "key": "postgresql-password"}
    }
    # The Postgres password is an env reference in the instance config too.
    instance = instance_config(objects)
    assert instance["storage"]["custom"]["config"]["postgres_db"]["password"] == {"env": "DAGSTER_PG_PASSWORD"}
    launcher = instance["run_launcher"]["config"]
    assert {*launcher["env_secrets"], launcher["postgres_password_secret"]} == SECRETS


def test_images_are_pinned(rendered):
    objects = rendered["gpu"]
    images = {
        c["image"] for _, spec in pod_specs(objects) for c in [*spec.get("initContainers", []), *spec["containers"]]
    }
    for image in images:
        name, _, tag = image.rpartition(":")
        assert name and "/" not in tag and tag not in ("", "latest"), f"{image}: pin an explicit tag"
    plugin = get(objects, *DEVICE_PLUGIN)["spec"]["template"]["spec"]["containers"][0]["image"]
    assert re.fullmatch(r"nvcr\.io/nvidia/k8s-device-plugin:v0\.17\.\d+", plugin)
    assert images == {PLACEHOLDER_IMAGE, plugin, "docker.io/library/postgres:16.4"}
    for objs in rendered.values():
        assert current_image(objs) == PLACEHOLDER_IMAGE


def current_image(objects: list[dict]) -> str:
    """The image the code server reports to Dagster (and so the image of every run pod)."""
    (container,) = get(objects, "Deployment", "lab-assets-user-code")["spec"]["template"]["spec"]["containers"]
    (env,) = [e for e in container["env"] if e["name"] == "DAGSTER_CURRENT_IMAGE"]
    assert env["value"] == container["image"]
    return env["value"]


def test_setting_the_image_in_the_overlay_reaches_runs(tmp_path):
    _kubectl()
    copy = shutil.copytree(K8S_DIR, tmp_path / "k8s")
    overlay = copy / "overlays" / "gpu" / "kustomization.yaml"
    kustomization = yaml.safe_load(overlay.read_text())
    kustomization["images"] = [
        {"name": "ghcr.io/YOUR_ORG/lab-assets", "newName": "registry.example/lab/lab-assets", "newTag": "v7"}
    ]
    overlay.write_text(yaml.safe_dump(kustomization))
    objects = kustomize(copy / "overlays" / "gpu")
    assert current_image(objects) == "registry.example/lab/lab-assets:v7"
    ours = {c["image"] for obj, spec in pod_specs(objects) if obj["kind"] == "Deployment" for c in spec["containers"]}
    assert ours == {"registry.example/lab/lab-assets:v7"}


def test_gpu_node_convention(rendered):
    plugin = get(rendered["gpu"], *DEVICE_PLUGIN)["spec"]["template"]["spec"]
    assert tolerates(plugin["tolerations"], GPU_TAINT)
    assert plugin["nodeSelector"] == {k8s.ACCELERATOR_LABEL: k8s.ACCELERATOR_VALUE}
    assert k8s.GPU_TAINT_KEY == GPU_TAINT["key"]
    assert (k8s.ACCELERATOR_LABEL, k8s.ACCELERATOR_VALUE) == ("lab-assets/accelerator", "nvidia")
    # Nothing else tolerates the GPU taint: only GPU runs and the plugin may use those nodes.
    for obj, spec in pod_specs(rendered["base"]):
        assert not tolerates(spec.get("tolerations", []), GPU_TAINT), obj["metadata"]["name"]
    readme = (K8S_DIR / "README.md").read_text()
    assert "nvidia.com/gpu=present:NoSchedule" in readme and "lab-assets/accelerator=nvidia" in readme


def test_tolerates_follows_kubernetes_rules():
    assert tolerates([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], GPU_TAINT)
    assert tolerates([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}], GPU_TAINT)
    assert not tolerates([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"}], GPU_TAINT)
    assert not tolerates([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}], GPU_TAINT)


# ---------------------------------------------------------------------------------------------
# The Dagster instance on Kubernetes


def instance_config(objects: list[dict]) -> dict:
    data = get(objects, "ConfigMap", "lab-assets-instance")["data"]["dagster.yaml"]
    assert data == INSTANCE_FILE.read_text()
    return yaml.safe_load(data)


def check_instance_config(text: str, tmp_path: Path) -> dict:
    """Dagster's own checks: the instance schema (as DagsterInstance loads dagster.yaml), then
    each configurable class's schema (as the instance does when it builds them)."""
    from dagster._core.instance.config import dagster_instance_config
    from dagster._serdes import ConfigurableClassData

    folder = tmp_path / "dagster_home"
    folder.mkdir(exist_ok=True)
    (folder / "dagster.yaml").write_text(text)
    config, custom_class = dagster_instance_config(str(folder))
    assert custom_class is None
    run_coordinator = config["run_coordinator"]
    coordinator = ConfigurableClassData(
        run_coordinator["module"], run_coordinator["class"], yaml.safe_dump(run_coordinator["config"])
    ).rehydrate()
    launcher_config = process_launcher_config(config["run_launcher"])
    return {
        "config": config,
        "coordinator": coordinator,
        "launcher_config": launcher_config,
        "storage_config": process_storage_config(config["storage"]),
    }


def process_storage_config(storage: dict) -> dict:
    """`storage: custom:` takes any mapping; check it against the class's own schema (what the
    instance does when it builds it), without connecting or reading the password's variable."""
    from dagster._config import validate_config
    from dagster._core.errors import DagsterInvalidConfigError

    from lab_assets.runtime.postgres_storage import LabPostgresStorage

    custom = storage["custom"]
    assert (custom["module"], custom["class"]) == ("lab_assets.runtime.postgres_storage", "LabPostgresStorage")
    result = validate_config(LabPostgresStorage.config_type(), custom["config"])
    if not result.success:
        raise DagsterInvalidConfigError("storage config", result.errors, custom["config"])
    return result.value


def process_launcher_config(run_launcher: dict) -> dict:
    from dagster._config import process_config
    from dagster._core.errors import DagsterInvalidConfigError
    from dagster_k8s import K8sRunLauncher

    assert (run_launcher["module"], run_launcher["class"]) == ("dagster_k8s", "K8sRunLauncher")
    result = process_config(K8sRunLauncher.config_type(), run_launcher["config"])
    if not result.success:
        raise DagsterInvalidConfigError("run_launcher config", result.errors, run_launcher["config"])
    return result.value


def test_instance_config_is_a_valid_dagster_instance(tmp_path):
    import dagster_postgres  # noqa: F401  (the image installs it; storage: postgres needs it)
    from dagster._core.run_coordinator import QueuedRunCoordinator

    checked = check_instance_config(INSTANCE_FILE.read_text(), tmp_path)
    config, coordinator, launcher = checked["config"], checked["coordinator"], checked["launcher_config"]

    assert isinstance(coordinator, QueuedRunCoordinator)
    limits = coordinator.get_run_queue_config().tag_concurrency_limits
    assert {"key": k8s.GPU_TAG, "value": "true", "limit": 2} in limits
    assert config["run_monitoring"]["enabled"] and config["run_monitoring"]["start_timeout_seconds"] >= 1200
    assert config["run_retries"]["enabled"] is True and config["run_retries"]["max_retries"] == 2
    postgres_db = checked["storage_config"]["postgres_db"]
    assert postgres_db["hostname"] == "lab-assets-postgresql"
    assert postgres_db["scheme"] == "postgresql+psycopg2"  # psycopg2 is what the image installs

    assert launcher["job_namespace"] == NAMESPACE
    assert launcher["service_account_name"] == SERVICE_ACCOUNT
    assert launcher["instance_config_map"] == "lab-assets-instance"
    assert launcher["dagster_home"] == DAGSTER_HOME
    assert f"LAB_HOME={LAB_HOME}" in launcher["env_vars"]
    # Run pods single-threaded like every other run path, so results equal the laptop's bit for bit.
    from lab_assets.core.threads import SINGLE_THREADED

    assert {f"{k}={v}" for k, v in SINGLE_THREADED.items()} <= set(launcher["env_vars"])
    assert {v["persistentVolumeClaim"]["claimName"] for v in launcher["volumes"]} == {"lab-assets-data"}


def test_deployments_share_the_instance_and_lab_home(rendered):
    launcher = yaml.safe_load(INSTANCE_FILE.read_text())["run_launcher"]["config"]
    assert get(rendered["gpu"], "PersistentVolumeClaim", "lab-assets-data")["spec"]["accessModes"] == ["ReadWriteMany"]
    for name in ("lab-assets-user-code", "lab-assets-webserver", "lab-assets-daemon"):
        spec = get(rendered["gpu"], "Deployment", name)["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        assert {"name": "DAGSTER_HOME", "value": DAGSTER_HOME} in container["env"]
        mount = {"name": "instance", "mountPath": f"{DAGSTER_HOME}/dagster.yaml", "subPath": "dagster.yaml"}
        assert mount in container["volumeMounts"]
        assert {"name": "instance", "configMap": {"name": launcher["instance_config_map"]}} in spec["volumes"]
        if name == "lab-assets-user-code":  # the code server writes key records to LAB_HOME
            assert {"name": "LAB_HOME", "value": LAB_HOME} in container["env"]
            assert {"name": "lab-data", "mountPath": LAB_HOME} in container["volumeMounts"]


@pytest.mark.parametrize(
    ("path", "typo"),
    [
        ((), {"run_monitorin": {"enabled": True}}),  # top level
        (("run_monitoring",), {"start_timeout_second": 1200}),
        (("run_coordinator", "config"), {"tag_concurency_limits": []}),
        (("run_launcher", "config"), {"job_namspace": "lab-assets"}),
        (("storage", "custom", "config", "postgres_db"), {"hostnme": "x"}),
    ],
)
def test_instance_config_check_catches_typos(path, typo, tmp_path):
    from dagster._core.errors import DagsterInvalidConfigError

    config = yaml.safe_load(INSTANCE_FILE.read_text())
    node = config
    for key in path:
        node = node[key]
    node.update(typo)
    with pytest.raises(DagsterInvalidConfigError):
        check_instance_config(yaml.safe_dump(config), tmp_path)


# ---------------------------------------------------------------------------------------------
# k8s_tags


def test_k8s_tags_for_a_gpu_request():
    tags = k8s.k8s_tags({"gpu": 1, "memory": "16Gi", "cpu": "4"})
    assert set(tags) == {"dagster-k8s/config", "lab_assets/gpu"} and tags["lab_assets/gpu"] == "true"
    assert json.loads(tags["dagster-k8s/config"]) == {
        "container_config": {
            "resources": {
                "requests": {"cpu": "4", "memory": "16Gi"},
                "limits": {"memory": "16Gi", "nvidia.com/gpu": "1"},
            }
        },
        "pod_spec_config": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "node_selector": {"lab-assets/accelerator": "nvidia"},
        },
    }
    assert all(isinstance(v, str) for v in tags.values())


def test_k8s_tags_without_gpu():
    assert k8s.k8s_tags({}) == {}
    assert k8s.k8s_tags({"gpu": 0}) == {}
    tags = k8s.k8s_tags({"cpu": 2, "memory": "512Mi", "gpu": 0})
    assert set(tags) == {"dagster-k8s/config"}  # no GPU tag: not counted by the GPU run limit
    assert json.loads(tags["dagster-k8s/config"]) == {
        "container_config": {"resources": {"requests": {"cpu": "2", "memory": "512Mi"}, "limits": {"memory": "512Mi"}}}
    }

    def resources(request):
        return json.loads(k8s.k8s_tags(request)["dagster-k8s/config"])["container_config"]["resources"]

    assert resources({"cpu": "500m"}) == {"requests": {"cpu": "500m"}}
    assert resources({"gpu": 2}) == {"limits": {"nvidia.com/gpu": "2"}}


@pytest.mark.parametrize(
    ("quantity", "amount"),
    [
        ("4", "4"),
        ("0.5", "0.5"),
        (".5", "0.5"),
        ("500m", "0.5"),
        ("100u", "0.0001"),
        ("16Gi", str(16 * 2**30)),
        ("1.5G", "1500000000"),
        ("128974848", "128974848"),
        ("129e6", "129000000"),
        ("123Mi", str(123 * 2**20)),
        ("1E3", "1000"),
        (3, "3"),
        (2.5, "2.5"),
    ],
)
def test_k8s_quantities_accepted(quantity, amount):
    """Accepted, passed through verbatim (the API server parses it, not us), and meaning the
    amount the Kubernetes quantity grammar gives it (worked out by hand, not by the parser)."""
    from decimal import Decimal

    from kubernetes.utils import parse_quantity

    resources = json.loads(k8s.k8s_tags({"cpu": quantity})["dagster-k8s/config"])["container_config"]["resources"]
    assert resources == {"requests": {"cpu": str(quantity)}}
    assert parse_quantity(resources["requests"]["cpu"]) == Decimal(amount)
    if not str(quantity).endswith("m"):  # milli-bytes are refused for memory
        resources = json.loads(k8s.k8s_tags({"memory": quantity})["dagster-k8s/config"])["container_config"][
            "resources"
        ]
        assert resources == {"requests": {"memory": str(quantity)}, "limits": {"memory": str(quantity)}}


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"gpu": -1}, r"resources\.gpu: must be 0 or more"),
        ({"gpu": 1.5}, r"resources\.gpu: expected a whole number"),
        ({"gpu": "1"}, r"resources\.gpu: expected a whole number"),
        ({"gpu": True}, r"resources\.gpu: expected a whole number"),
        ({"gpus": 1}, r"unknown key\(s\) 'gpus'; allowed: gpu, cpu, memory"),
        ({"memory": "16GB"}, r"resources\.memory: '16GB' is not a Kubernetes quantity"),
        ({"memory": "16 Gi"}, r"not a Kubernetes quantity"),
        ({"memory": "-1Gi"}, r"not a Kubernetes quantity"),
        ({"memory": "100m"}, r"milli-bytes; did you mean 100Mi"),
        ({"cpu": "four"}, r"resources\.cpu: 'four' is not a Kubernetes quantity"),
        ({"cpu": "0"}, r"resources\.cpu: must be greater than zero"),
        ({"cpu": None}, r"resources\.cpu: expected a Kubernetes quantity"),
        ({"cpu": float("nan")}, r"not a Kubernetes quantity"),
        ({"cpu": "Infinity"}, r"not a Kubernetes quantity"),
        ({"cpu": "1_000"}, r"not a Kubernetes quantity"),  # Python's Decimal would take these two
        ({"cpu": "\uff11\uff12"}, r"not a Kubernetes quantity"),
        (["gpu"], r"resources: expected a mapping"),
    ],
)
def test_k8s_tags_rejects_bad_input(resources, message):
    with pytest.raises(ValueError, match=message):
        k8s.k8s_tags(resources)


# ---------------------------------------------------------------------------------------------
# Jobs as dagster-k8s builds them from the instance config and the tags


@pytest.fixture
def launcher(tmp_path):
    """A real K8sRunLauncher from the instance ConfigMap; only the cluster credentials differ
    (a kubeconfig naming an unreachable server: nothing here talks to a cluster)."""
    from dagster._serdes import ConfigurableClassData
    from dagster_k8s import K8sRunLauncher

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "none", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "none", "user": {"token": "unused"}}],
                "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none"}}],
                "current-context": "none",
            }
        )
    )
    run_launcher = yaml.safe_load(INSTANCE_FILE.read_text())["run_launcher"]
    config = {**run_launcher["config"], "load_incluster_config": False, "kubeconfig_file": str(kubeconfig)}
    data = ConfigurableClassData(run_launcher["module"], run_launcher["class"], yaml.safe_dump(config))
    return data.rehydrate(as_type=K8sRunLauncher)


def render_job(launcher, *, run_tags: dict[str, str], step_tags: dict[str, str] | None = None) -> dict:
    """The Kubernetes Job dagster-k8s would create, as a camelCase dict.

    Without `step_tags`: the run worker Job (K8sRunLauncher._launch_k8s_job_with_args: the
    launcher's config merged with the run's `dagster-k8s/config` tag). With `step_tags`: a
    step Job of `k8s_job_executor` (K8sStepHandler._get_container_context / launch_step: the
    launcher's config, not the run tags, merged with the step's op tags)."""
    import kubernetes
    from dagster._core.storage.dagster_run import DagsterRun
    from dagster_k8s.container_context import K8sContainerContext
    from dagster_k8s.job import (
        construct_dagster_k8s_job,
        get_job_name_from_run_id,
        get_k8s_job_name,
        get_user_defined_k8s_config,
    )

    run = DagsterRun(job_name=jobs.job_name(jobs.CELLS), run_id="0123456789abcdef0123456789abcdef", tags=run_tags)
    if step_tags is None:
        context = K8sContainerContext.create_for_run(run, launcher, include_run_tags=True)
        job_name, component = get_job_name_from_run_id(run.run_id), "run_worker"
        args = ["dagster", "api", "execute_run", "{}"]
    else:
        context = K8sContainerContext.create_for_run(run, launcher, include_run_tags=False)
        context = context.merge(K8sContainerContext(run_k8s_config=get_user_defined_k8s_config(step_tags)))
        job_name, component = f"dagster-step-{get_k8s_job_name(run.run_id, 'embedding')}", "step_worker"
        args = ["dagster", "api", "execute_step", "{}"]
    job = construct_dagster_k8s_job(
        job_config=context.get_k8s_job_config(job_image=PLACEHOLDER_IMAGE, run_launcher=launcher),
        args=args,
        job_name=job_name,
        pod_name=job_name,
        component=component,
        user_defined_k8s_config=context.run_k8s_config,
        labels={"dagster/job": run.job_name, "dagster/run-id": run.run_id},
        env_vars=[{"name": "DAGSTER_RUN_JOB_NAME", "value": run.job_name}],
    )
    return kubernetes.client.ApiClient().sanitize_for_serialization(job)


def check_gpu_job(job: dict) -> None:
    validate(job)
    spec = job["spec"]["template"]["spec"]
    assert not pod_security_problems(spec), pod_security_problems(spec)
    (container,) = spec["containers"]
    assert container["resources"]["limits"] == {"memory": "16Gi", "nvidia.com/gpu": "1"}
    assert container["resources"]["requests"] == {"cpu": "4", "memory": "16Gi"}
    assert tolerates(spec["tolerations"], GPU_TAINT)
    assert spec["nodeSelector"] == {"lab-assets/accelerator": "nvidia"}
    assert spec["serviceAccountName"] == SERVICE_ACCOUNT
    assert spec["securityContext"]["runAsUser"] == container["securityContext"]["runAsUser"] == 1000
    assert container["image"] == PLACEHOLDER_IMAGE
    env = {e["name"]: e for e in container["env"]}
    password = {"secretKeyRef": {"name": "lab-assets-postgres", "key": "postgresql-password"}}
    assert env["DAGSTER_PG_PASSWORD"]["valueFrom"] == password
    assert env["LAB_HOME"]["value"] == LAB_HOME and env["DAGSTER_HOME"]["value"] == DAGSTER_HOME
    assert {e["secretRef"]["name"] for e in container["envFrom"]} == {"lab-assets-wandb", "lab-assets-s3"}
    assert {"name": "lab-data", "mountPath": LAB_HOME} in container["volumeMounts"]
    assert job["spec"]["ttlSecondsAfterFinished"] == 86400


def test_run_worker_job_for_gpu_tags(launcher):
    tags = k8s.k8s_tags({"gpu": 1, "memory": "16Gi", "cpu": "4"})
    check_gpu_job(render_job(launcher, run_tags=tags))


def test_step_job_for_gpu_op_tags(launcher):
    # k8s_job_executor ignores run-level dagster-k8s/config: step pods take the op's tags.
    tags = k8s.k8s_tags({"gpu": 1, "memory": "16Gi", "cpu": "4"})
    check_gpu_job(render_job(launcher, run_tags={k8s.GPU_TAG: "true"}, step_tags=tags))
    cpu_step = render_job(launcher, run_tags=tags, step_tags={})
    resources = cpu_step["spec"]["template"]["spec"]["containers"][0].get("resources") or {}
    assert "nvidia.com/gpu" not in resources.get("limits", {})


def test_cpu_job_stays_off_gpu_nodes(launcher):
    job = render_job(launcher, run_tags=k8s.k8s_tags({"cpu": "2", "memory": "4Gi"}))
    validate(job)
    spec = job["spec"]["template"]["spec"]
    assert not pod_security_problems(spec)
    assert not tolerates(spec.get("tolerations") or [], GPU_TAINT)
    assert "nodeSelector" not in spec
    resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi"}}
    assert spec["containers"][0]["resources"] == resources


# ---------------------------------------------------------------------------------------------
# Helm values and the image


def test_helm_values_match_the_kustomize_config():
    values = yaml.safe_load((K8S_DIR / "helm" / "values.yaml").read_text())
    instance = yaml.safe_load(INSTANCE_FILE.read_text())
    launcher = instance["run_launcher"]["config"]
    helm_launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    daemon = values["dagsterDaemon"]

    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert helm_launcher["jobNamespace"] == launcher["job_namespace"] == NAMESPACE
    service_account = launcher["service_account_name"]
    assert values["global"]["serviceAccountName"] == values["serviceAccount"]["name"] == service_account
    assert values["serviceAccount"]["create"] is False and values["rbacEnabled"] is False
    postgres_secret = launcher["postgres_password_secret"]
    assert values["global"]["postgresqlSecretName"] == values["postgresql"]["existingSecret"] == postgres_secret
    assert values["generatePostgresqlPasswordSecret"] is False and not values["postgresql"].get("postgresqlPassword")
    assert [s["name"] for s in helm_launcher["envSecrets"]] == launcher["env_secrets"]
    assert helm_launcher["envVars"] == launcher["env_vars"]
    assert helm_launcher["volumes"] == launcher["volumes"]
    assert helm_launcher["volumeMounts"] == launcher["volume_mounts"]
    assert helm_launcher["securityContext"] == launcher["security_context"]
    pod_security_context = launcher["run_k8s_config"]["pod_spec_config"]["security_context"]
    assert helm_launcher["runK8sConfig"]["podSpecConfig"]["securityContext"] == pod_security_context
    assert values["global"]["dagsterHome"] == launcher["dagster_home"]

    queued = daemon["runCoordinator"]["config"]["queuedRunCoordinator"]
    assert daemon["runCoordinator"]["type"] == "QueuedRunCoordinator"
    assert queued["tagConcurrencyLimits"] == instance["run_coordinator"]["config"]["tag_concurrency_limits"]
    assert queued["maxConcurrentRuns"] == instance["run_coordinator"]["config"]["max_concurrent_runs"]
    assert daemon["runMonitoring"]["startTimeoutSeconds"] == instance["run_monitoring"]["start_timeout_seconds"]
    assert daemon["runRetries"] == {"enabled": True, "maxRetries": instance["run_retries"]["max_retries"]}

    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "lab_assets.defs.definitions"] and deployment["port"] == 4000
    assert {s["name"] for s in deployment["envSecrets"]} == SECRETS - {"lab-assets-postgres"}
    for part in (deployment, values["dagsterWebserver"], daemon):
        assert f"{part['image']['repository']}:{part['image']['tag']}" == PLACEHOLDER_IMAGE
        container = {"name": "c", "securityContext": part["securityContext"]}
        assert not pod_security_problems({"securityContext": part["podSecurityContext"], "containers": [container]})
    assert values["dagsterWebserver"]["securityContext"] == launcher["security_context"]


def test_dockerfile_matches_the_deployment():
    from packaging.specifiers import SpecifierSet

    dockerfile = (REPO / "Dockerfile").read_text()
    lines = [line.strip() for line in dockerfile.splitlines()]
    assert "FROM python:3.11-slim" in lines
    assert 'ARG TORCH_INDEX_URL=""' in lines
    assert "USER 1000:1000" in lines and "useradd --uid 1000" in dockerfile
    assert "pip install -c constraints.txt .;" in dockerfile
    assert f"DAGSTER_HOME={DAGSTER_HOME}" in dockerfile and f"LAB_HOME={LAB_HOME}" in dockerfile
    # What the one-machine cluster's launcher gives every run process as the image's own settings.
    from lab_assets.runtime.local_k8s_launcher import IMAGE_FIXED_ENV

    assert all(f"{name}={value}" in dockerfile for name, value in IMAGE_FIXED_ENV.items())
    assert "EXPOSE 4000" in lines
    command = ["dagster", "api", "grpc", "-m", "lab_assets.defs.definitions", "-h", "0.0.0.0", "-p", "4000"]
    assert f"CMD {json.dumps(command)}" in lines
    user_code = yaml.safe_load_all((K8S_DIR / "base" / "user-code.yaml").read_text())
    (deployment,) = [d for d in user_code if d["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["command"] == command

    # Every COPY source exists, and no COPY brings in what .dockerignore keeps out.
    for line in lines:
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (REPO / source).exists(), source
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv/", ".lab/", ".git/", "**/__pycache__/"} <= set(ignored)
    # The package data's links resolve in the build context: their targets are copied and not ignored.
    for link in (REPO / "lab_assets" / "cluster" / "k8s_base").iterdir():
        target = link.resolve().relative_to(REPO).as_posix()
        assert f"!{target}" in ignored and any(line.startswith("COPY ") and target in line.split() for line in lines), (
            target
        )

    # The CUDA torch path: the pin comes from constraints.txt (what the Dockerfile's sed reads),
    # and a local build label such as +cu128 still satisfies it, so the main install keeps it.
    constraints = (REPO / "constraints.txt").read_text().splitlines()
    (torch_pin,) = [line for line in constraints if line.startswith("torch==")]
    assert "sed -n 's/^torch==//p' constraints.txt" in dockerfile
    version = torch_pin.removeprefix("torch==")
    assert f"{version}+cu128" in SpecifierSet(f"=={version}")
    assert {"dagster-postgres==0.29.27", "kubernetes-validate==1.37.0"} <= set(constraints)


def test_readme_states_what_is_validated():
    readme = (K8S_DIR / "README.md").read_text()
    for needle in (
        f"Kubernetes {K8S_VERSION}",
        "kubectl describe node",
        "create secret generic lab-assets-postgres",
        "create secret generic lab-assets-wandb",
        "create secret generic lab-assets-s3",
        "--build-arg TORCH_INDEX_URL=",
        "docker push",
        "helm upgrade --install",
        "Not tested against a live cluster",
    ):
        assert needle in readme, needle
