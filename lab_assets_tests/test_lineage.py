"""Provenance: the device recorded is the one the cell's computation used (lineage.device_used)."""

import numpy as np
import torch

from lab_assets.core import lineage
from lab_assets.dr.methods import METHODS
from lab_assets_tests.conftest import swissroll_points

X = swissroll_points(120)


def test_autoencoder_reports_the_device_its_tensors_were_on():
    entry = METHODS["autoencoder"]
    estimator = entry(0, **entry.validate({"epochs": 2, "width": 8, "device": "auto"}))
    assert lineage.device_used(estimator) == "cpu"  # before any fit: nothing computed on an accelerator
    estimator.fit(X)
    weights_on = str(next(estimator.net.parameters()).device)
    assert lineage.device_used(estimator) == weights_on == ("cuda:0" if torch.cuda.is_available() else "cpu")


def test_torchdr_reports_where_its_embedding_tensor_lives():
    entry = METHODS["torchdr_tsne"]
    estimator = entry(0, **entry.validate({"n_neighbors": 15, "max_iter": 20, "device": "cpu"}))
    estimator.fit_transform(X)
    assert lineage.device_used(estimator) == str(estimator.embedding_.device) == "cpu"
    # What is read is the tensor's device, not the estimator's setting: a tensor elsewhere says so.
    estimator.embedding_ = torch.empty(3, 2, device="meta")
    assert lineage.device_used(estimator) == "meta"


class _Requested:
    """An estimator configured for a GPU that computed with numpy (on the CPU)."""

    device = "cuda"
    embedding_ = np.zeros((3, 2))


def test_a_requested_device_that_was_not_used_is_not_recorded():
    assert lineage.device_used(_Requested()) == "cpu"
    assert lineage.device_used(METHODS["pca"](0, **METHODS["pca"].validate({}))) == "cpu"


def test_provenance_records_the_machine_packages_and_commit_it_ran_with(lab):
    # Each field from a source independent of lineage.py: the platform module, importlib.metadata,
    # git itself. (The device is what the caller measured with `device_used`, above; that the
    # embedding step passes it, not the request, is test_autoencoder's `device: auto` recorded as
    # the device its weights were on.)
    import os
    import platform
    import subprocess
    from importlib import metadata

    subprocess.run(["git", "init", "-q"], cwd=lab, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
        cwd=lab,
        check=True,
    )
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=lab, capture_output=True, text=True, check=True
    ).stdout.strip()
    prov = lineage.provenance({"a": 1}, 7, "v1", packages=("torch",))
    assert (prov["config"], prov["seed"], prov["code_version"], prov["git_sha"], prov["git_dirty"]) == (
        {"a": 1},
        7,
        "v1",
        sha,
        False,
    )
    assert prov["host"] == f"{platform.machine()}, {os.cpu_count()} cores"
    assert prov["packages"] == {p: metadata.version(p) for p in (*lineage.KEY_PACKAGES, "torch")}
    assert prov["device"] == "cpu"  # nothing measured: the default
