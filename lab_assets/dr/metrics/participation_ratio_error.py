"""Participation ratio error: |PR(embedding) - PR(data)|, how far the number of directions the
embedding really uses is from the data's (`participation_ratio` in each space).

A 2-d embedding cannot reach a data PR above 2; this ranks methods by how close they come, so the
summary compares them without hand-written SQL. Range [0, inf); 0 = the same PR. Lower is better.
"""

from lab_assets.dr.metrics import METRICS
from lab_assets.dr.metrics.neighbors import Neighborhoods
from lab_assets.dr.metrics.participation_ratio import ratio


def participation_ratio_error(nb: Neighborhoods) -> float:
    """Absolute difference of the participation ratios of embedding and data."""
    metric = "participation_ratio_error"
    return abs(ratio(nb.Z, "embedding", metric) - ratio(nb.X, "data", metric))


participation_ratio_error = METRICS(
    "participation_ratio_error", packages=["numpy"], valid_range="[0, inf)", better="lower"
)(participation_ratio_error)
