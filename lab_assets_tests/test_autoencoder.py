"""The autoencoder method, its `model` asset (weights, checkpoints, resume) and reconstruction_error."""

import dagster as dg
import numpy as np
import pytest
import torch
from sklearn.decomposition import PCA

from lab_assets.core import checkpoints, keys, storage
from lab_assets.core.checkpoints import Checkpoint
from lab_assets.core.diverged import TrainingDiverged
from lab_assets.core.keys import cell_key
from lab_assets.defs.jobs import CELLS, job_name
from lab_assets.dr.methods import METHODS
from lab_assets.dr.metrics import METRICS, NotApplicable
from lab_assets.dr.metrics.neighbors import Neighborhoods
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.local import definitions
from lab_assets.runner.sweeps import materialize_sweep
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import swissroll_points

SMALL = {"epochs": 20, "width": 16, "batch_size": 32, "lr": 5e-3, "checkpoint_every": 4}


def make(seed=0, **params):
    entry = METHODS["autoencoder"]
    return entry(seed, **entry.validate({**SMALL, **params}))


@pytest.fixture(scope="module")
def X():
    return swissroll_points(300)


def test_fit_is_seeded_and_learns(X):
    a, b, c = make(0).fit(X), make(0).fit(X), make(1).fit(X)
    assert np.array_equal(a.transform(X), b.transform(X))
    assert not np.array_equal(a.transform(X), c.transform(X))
    assert a.transform(X).shape == (300, 2)
    assert a.losses[-1] < 0.5 * a.losses[0]  # standardised data: the first epoch's loss is ~1
    # The decoder inverts the encoder well enough on a 2-d manifold: far better than the mean.
    err = ((a.inverse_transform(a.transform(X)) - X) ** 2).sum(axis=1).mean()
    assert err < 0.5 * ((X - X.mean(axis=0)) ** 2).sum(axis=1).mean()


def test_state_dict_round_trip_is_weights_only(X):
    a = make().fit(X)
    state = checkpoints.from_bytes(a.weights())  # torch.load(weights_only=True)
    b = make().load_state_dict(state)
    assert np.array_equal(a.transform(X), b.transform(X))


class CrashAfter(Checkpoint):
    """A checkpoint that dies (like a killed process) right after its `at`-th epoch's save."""

    def __init__(self, path, version, every, at):
        super().__init__(path, version, every)
        object.__setattr__(self, "at", at)

    def save(self, state):
        super().save(state)
        if state["epoch"] == self.at:
            raise KeyboardInterrupt("killed")


def test_resume_from_checkpoint_equals_an_uninterrupted_run(X, lab):
    whole = make().fit(X)
    path = storage.asset_path("model", "d|m", ".ckpt.pt")
    with pytest.raises(KeyboardInterrupt):
        make().fit(X, checkpoint=CrashAfter(path, "v1", 4, at=8))
    assert checkpoints.from_bytes(storage.read_bytes(path))["epoch"] == 8
    resumed = make()
    resumed.fit(X, checkpoint=Checkpoint(path, "v1", 4))
    assert resumed.resumed_from == 8
    assert resumed.losses == whole.losses
    for k, v in whole.state_dict().items():
        assert torch.equal(v, resumed.state_dict()[k]), k
    # A checkpoint of another version (edited code or data) is never resumed.
    fresh = make()
    fresh.fit(X, checkpoint=Checkpoint(path, "v2", 4))
    assert fresh.resumed_from == 0


def test_divergence_fails_fast_with_a_clear_message(X):
    with pytest.raises(
        TrainingDiverged, match=r"autoencoder: training diverged at epoch \d+: loss (NaN|inf) .*; lower lr"
    ):
        make(lr=1e12, epochs=50).fit(X * 1e6)


def test_constant_column_is_not_a_nan(X):
    Xc = np.c_[X, np.full(len(X), 3.0)]
    a = make().fit(Xc)
    assert np.isfinite(a.transform(Xc)).all()
    assert np.abs(a.inverse_transform(a.transform(Xc))[:, -1] - 3.0).mean() < 0.05


def test_cuda_request_without_cuda_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match="device='cuda' was asked for but torch sees no CUDA device"):
        make(device="cuda")


def test_reconstruction_error_matches_pca_explained_variance(X):
    pca = PCA(n_components=2, svd_solver="full").fit(X)
    Z = pca.transform(X)
    recon = ((pca.inverse_transform(Z) - X) ** 2).sum(axis=1)
    nb = Neighborhoods(X, Z, 0, split=np.array(["train"] * len(X)), reconstruction=recon)
    got = METRICS["reconstruction_error"](nb, split="all")
    assert got == pytest.approx(1 - pca.explained_variance_ratio_.sum(), rel=1e-9)
    assert METRICS["reconstruction_error"](nb, split="all", normalized=False) == pytest.approx(recon.mean())
    with pytest.raises(ValueError, match="no 'test' rows"):
        METRICS["reconstruction_error"](nb)
    with pytest.raises(NotApplicable, match="needs a method that can invert"):
        METRICS["reconstruction_error"](Neighborhoods(X, Z, 0))


SWEEP = """
name: ae
data:
  swissroll: {n_samples: 200, noise: 0.05}
seeds: [0]
methods:
  pca: {}
  tsne: {perplexity: 10}
  autoencoder: {epochs: 30, width: 16, batch_size: 32, lr: 0.005, checkpoint_every: 10}
metrics:
  trustworthiness: {k: [10]}
  reconstruction_error: {}
  silhouette: {}
"""


def test_model_asset_only_for_trainable_methods_and_recorded_fallbacks(lab):
    (lab / "sweeps" / "ae.yaml").write_text(SWEEP)
    sweep = load_sweep(lab / "sweeps" / "ae.yaml")
    result = materialize_sweep(sweep, workers=1)
    assert not result.failed, result.failed
    inst = get_instance()
    models = inst.fetch_materializations(dg.AssetKey("model"), limit=10).records
    ((ae_data, ae_method),) = [(d, m) for d, m in sweep.cells if m.startswith("autoencoder")]
    ae_cell = keys.cell_key(ae_data, ae_method)
    assert [r.asset_materialization.partition for r in models] == [ae_cell]
    meta = models[0].asset_materialization.metadata
    assert meta["epochs"].value == 30 and meta["resumed_from_epoch"].value == 0 and meta["parameters"].value > 0
    # The device the weights were on (`device: auto` on this CPU-only machine), not the request.
    expected = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert meta["device"].value == expected
    embeddings = {
        r.asset_materialization.partition: r.asset_materialization.metadata
        for r in inst.fetch_materializations(dg.AssetKey("embedding"), limit=10).records
    }
    assert embeddings[ae_cell]["device"].value == expected
    assert {m["device"].value for cell, m in embeddings.items() if cell != ae_cell} == {"cpu"}  # scikit-learn methods
    weights = checkpoints.from_bytes(storage.read_bytes(meta["path"].value))
    assert set(weights) >= {"mean", "scale"}
    # The embedding of a trainable method cannot be materialized without its model.
    result = (
        definitions()
        .resolve_job_def(job_name(CELLS))
        .execute_in_process(
            instance=inst,
            partition_key=cell_key(ae_data, ae_method),
            asset_selection=[dg.AssetKey("embedding")],
            raise_on_error=False,
        )
    )
    errors = [e.step_failure_data.error.cause.message for e in result.all_events if e.is_step_failure]
    assert not result.success and "trains a model; select `model` together with `embedding`" in errors[0]

    table = storage.read_parquet(storage.asset_path("metric_table"))
    by_method = table.set_index("method_name")
    recon = "reconstruction_error@normalized=True,split=test"  # defaults are part of the name
    # pca and the autoencoder invert; t-SNE does not: null, with the reason in the metadata.
    assert 0 < by_method.loc["pca", recon] < 1
    assert 0 < by_method.loc["autoencoder", recon] < 1
    assert np.isnan(by_method.loc["tsne", recon])
    # The swiss roll's labels are a coordinate, not classes: silhouette is recorded as null.
    assert table["silhouette@n_points=5000,space=embedding"].isna().all()
    tsne_cell = [keys.cell_key(d, m) for d, m in sweep.cells if m.startswith("tsne")][0]
    records = inst.fetch_materializations(dg.AssetKey("metrics"), limit=10).records
    tsne_meta = [r for r in records if r.asset_materialization.partition == tsne_cell][0].asset_materialization.metadata
    assert "needs a method that can invert" in tsne_meta["not_applicable"].value[recon]
