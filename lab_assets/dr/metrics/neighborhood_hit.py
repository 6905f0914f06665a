"""Neighbourhood hit (Paulovich et al. 2008): the average share of each point's k embedding
neighbours that have its class. Range [0, 1]; 1 = every neighbourhood pure. Only for datasets
with class (integer) labels.
"""

from typing import Annotated

from pydantic import Field

from lab_assets.dr.metrics import METRICS, k_below_points
from lab_assets.dr.metrics.neighbors import Neighborhoods
from lab_assets.dr.metrics.silhouette import class_labels


def neighborhood_hit(nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)]) -> float:
    """Mean fraction of the k embedding neighbours that share the point's class label."""
    nb.check_k(k)
    labels = class_labels(nb, "neighborhood_hit")
    return float((labels[nb.emb_idx[:, :k]] == labels[:, None]).mean())


neighborhood_hit = METRICS(
    "neighborhood_hit", packages=["numpy", "scikit-learn"], valid_range="[0, 1]", better="higher", limits=k_below_points
)(neighborhood_hit)
