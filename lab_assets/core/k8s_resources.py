"""Kubernetes run tags from a sweep-level resource request.

`k8s_tags({"gpu": 1, "memory": "16Gi", "cpu": "4"})` returns the tags that make Dagster's
Kubernetes machinery (dagster-k8s) put a run or a step on a GPU node:

- ``dagster-k8s/config``: a JSON string that dagster-k8s merges into the Job it creates
  (``container_config.resources``, ``pod_spec_config.tolerations`` and ``node_selector``).
- ``lab_assets/gpu: "true"`` (only when a GPU is requested): the tag the instance's
  ``QueuedRunCoordinator.tag_concurrency_limits`` counts, so at most N GPU runs are in flight
  however large a backfill is (``k8s/base/dagster.yaml``, ``k8s/helm/values.yaml``).

Why these exact pieces (the cluster convention is documented in ``k8s/README.md``):

- GPU nodes carry the taint ``nvidia.com/gpu=present:NoSchedule`` so ordinary pods never land
  on (and block) an expensive node; a GPU pod must tolerate it. The toleration uses
  ``operator: Exists`` so it also matches clouds that taint with another value.
- The scheduler only counts GPUs that the NVIDIA device plugin advertises as the extended
  resource ``nvidia.com/gpu``; extended resources are given as *limits* (the request defaults
  to the limit) and cannot be overcommitted, so one GPU limit means one whole GPU.
- ``node_selector`` on ``lab-assets/accelerator: nvidia`` keeps GPU pods to the node pool we
  labelled, rather than any node that happens to expose the resource.
- Memory: request = limit (memory is not compressible: a pod past its request on a busy node is
  evicted at random; past its limit it is OOM-killed, which names the culprit). CPU: request
  only, no limit (a CPU limit throttles data loading and compilation for no benefit).

Where to put the tags: as *run* tags they shape the run worker pod that ``K8sRunLauncher``
creates (and the concurrency limit sees them). With ``k8s_job_executor`` each step gets its own
pod, configured from the step's *op* tags (``op_tags=`` on ``@dg.asset``), not from run
tags; the ``lab_assets/gpu`` run tag is still what the run queue counts. Dagster validates
asset ``tags=`` strictly (short label-like values), so this JSON belongs in ``op_tags``.

Input is validated here rather than by the cluster: a typo in a sweep file should fail when
the sweep is planned, not twenty minutes later as a pod that is never scheduled.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from numbers import Real

from lab_assets.core import keys

K8S_CONFIG_TAG = "dagster-k8s/config"
GPU_TAG = keys.tag("gpu")
GPU_RESOURCE = "nvidia.com/gpu"
GPU_TAINT_KEY = "nvidia.com/gpu"  # taint nvidia.com/gpu=present:NoSchedule on every GPU node
ACCELERATOR_LABEL = "lab-assets/accelerator"  # node label lab-assets/accelerator=nvidia
ACCELERATOR_VALUE = "nvidia"
KEYS = ("gpu", "cpu", "memory")

SUFFIXES = "n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei"


def _quantity(name: str, value: object) -> str:
    """A positive k8s quantity as a string ("4", "500m", "16Gi"); numbers are accepted as is.
    Parsed by the Kubernetes client's `parse_quantity`; a sign, spaces or underscores (which
    Python's Decimal would take) are refused first, as the API server refuses them."""
    if isinstance(value, bool) or not isinstance(value, (str, Real)):
        raise ValueError(
            f"resources.{name}: expected a Kubernetes quantity such as '4', '500m' or '16Gi', got {value!r}"
        )
    from kubernetes.utils import parse_quantity  # imported on use: parsing a sweep stays light

    text = value.strip() if isinstance(value, str) else str(value)
    not_a_quantity = ValueError(
        f"resources.{name}: {value!r} is not a Kubernetes quantity "
        f"(a positive number with an optional suffix: {SUFFIXES})"
    )
    if not text or not text.isascii() or text[0] in "+-" or any(c.isspace() or c == "_" for c in text):
        raise not_a_quantity
    try:
        amount = parse_quantity(text)
    except ValueError:
        raise not_a_quantity from None
    if not amount.is_finite():
        raise not_a_quantity
    if amount <= 0:
        raise ValueError(f"resources.{name}: must be greater than zero, got {value!r}")
    if name == "memory" and text.endswith("m"):
        raise ValueError(f"resources.memory: {value!r} means milli-bytes; did you mean {text[:-1]}Mi?")
    return text


def k8s_tags(resources: Mapping[str, object]) -> dict[str, str]:
    """Dagster tags for a resource request ``{"gpu": int, "cpu": quantity, "memory": quantity}``.

    Every key is optional; an empty request gives no tags (the run launcher's defaults apply).
    Raises ValueError naming the key for unknown keys, a negative or non-integer ``gpu`` and
    malformed or non-positive quantities.
    """
    if not isinstance(resources, Mapping):
        raise ValueError(f"resources: expected a mapping such as {{'gpu': 1, 'memory': '16Gi'}}, got {resources!r}")
    unknown = sorted(set(resources) - set(KEYS), key=str)
    if unknown:
        raise ValueError(f"resources: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(KEYS)}")

    gpu = resources.get("gpu", 0)
    if isinstance(gpu, bool) or not isinstance(gpu, int):
        raise ValueError(f"resources.gpu: expected a whole number of GPUs, got {gpu!r}")
    if gpu < 0:
        raise ValueError(f"resources.gpu: must be 0 or more, got {gpu}")

    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if "cpu" in resources:
        requests["cpu"] = _quantity("cpu", resources["cpu"])
    if "memory" in resources:
        requests["memory"] = limits["memory"] = _quantity("memory", resources["memory"])
    if gpu:
        limits[GPU_RESOURCE] = str(gpu)

    config: dict[str, dict] = {}
    if requests or limits:
        config["container_config"] = {"resources": {k: v for k, v in (("requests", requests), ("limits", limits)) if v}}
    if gpu:
        config["pod_spec_config"] = {
            "tolerations": [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "node_selector": {ACCELERATOR_LABEL: ACCELERATOR_VALUE},
        }

    tags: dict[str, str] = {}
    if config:
        tags[K8S_CONFIG_TAG] = json.dumps(config, sort_keys=True)
    if gpu:
        tags[GPU_TAG] = "true"
    return tags
