"""Ground truth of the built-in sheets (manifolds.py), kept out of their entries so that their
code and data versions stay as they were: each function redraws what its entry drew from the same
generator (sklearn draws the parameters before the noise, so noise=0 gives the same parameters)."""

import numpy as np

from lab_assets.dr.datasets.raw import sklearn_random_state
from lab_assets.dr.latents import LATENTS, Latent


def swiss_roll_arc_length(t: np.ndarray) -> np.ndarray:
    """Arc length of the spiral (t cos t, t sin t) from t = 0: the integral of sqrt(1 + t^2)."""
    return 0.5 * (t * np.sqrt(1.0 + t**2) + np.arcsinh(t))


def swissroll_latent(rng: np.random.Generator, *, n_samples: int, noise: float = 0.0) -> Latent:
    """(arc length along the roll, height): the roll unrolls isometrically onto this rectangle."""
    from sklearn import datasets as skd  # imported on use: registering the entries must stay cheap

    X, t = skd.make_swiss_roll(n_samples, noise=0.0, random_state=sklearn_random_state(rng))
    return Latent(np.column_stack([swiss_roll_arc_length(t), X[:, 1]]))


def s_curve_latent(rng: np.random.Generator, *, n_samples: int, noise: float = 0.0) -> Latent:
    """(t, height): the S is two unit half-circles, so t is already arc length."""
    from sklearn import datasets as skd

    X, t = skd.make_s_curve(n_samples, noise=0.0, random_state=sklearn_random_state(rng))
    return Latent(np.column_stack([t, X[:, 1]]))


LATENTS["swissroll"] = swissroll_latent
LATENTS["s_curve"] = s_curve_latent
