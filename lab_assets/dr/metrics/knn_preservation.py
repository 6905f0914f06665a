"""kNN preservation: the average share of each point's k data neighbours that are also among its
k embedding neighbours. Range [0, 1]; 1 = identical neighbourhoods, about k/n = chance level.
"""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS, k_below_points
from lab_assets.dr.metrics.neighbors import Neighborhoods, positions


def knn_preservation(nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)]) -> float:
    """Mean fraction of the k data-space neighbours kept among the k embedding neighbours."""
    nb.check_k(k)
    # Membership by index in the sliced lists, not by rank: needs no distance scan at all.
    pos = positions(nb.emb_idx[:, :k], nb.data_idx[:, :k])
    return float(np.count_nonzero(pos, axis=1).mean() / k)


knn_preservation = METRICS(
    "knn_preservation", packages=["numpy", "scikit-learn"], valid_range="[0, 1]", better="higher", limits=k_below_points
)(knn_preservation)
