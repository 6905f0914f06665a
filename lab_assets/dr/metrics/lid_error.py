"""LID error: how far each point's local intrinsic dimension in the embedding is from its local
dimension in the data, the mean over points of |LID_embedding(i) - LID_data(i)| (Levina-Bickel
estimates from the k nearest neighbours in each space, as `lid`).

`lid` describes one space; this ranks methods by which keeps the data's local dimension, so the
summary answers "which method best preserves the intrinsic dimension" itself. Range [0, inf);
0 = every point keeps its local dimension. Lower is better.
"""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS, k_below_points
from lab_assets.dr.metrics.lid import pointwise_lid
from lab_assets.dr.metrics.neighbors import Neighborhoods


def lid_error(nb: Neighborhoods, *, k: Annotated[int, Field(ge=2)]) -> float:
    """Mean absolute difference of per-point LID between embedding and data."""
    embedded = pointwise_lid(nb, k, "embedding", "lid_error")
    return float(np.mean(np.abs(embedded - pointwise_lid(nb, k, "data", "lid_error"))))


lid_error = METRICS(
    "lid_error", packages=["numpy", "scikit-learn"], valid_range="[0, inf)", better="lower", limits=k_below_points
)(lid_error)
