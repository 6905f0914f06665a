"""Methods registry: one function per method, `fn(seed, *, params...) -> estimator`.

The estimator follows scikit-learn's contract (`fit_transform`), seeded with the cell's seed.
"""

from typing import Any

from lab_assets.core.registry import Registry, Shape

METHODS = Registry("method", __name__, first="seed")


def fewer_than_points(*names: str):
    """Limits: each named parameter (a neighbourhood size, an embedding dimension) must be
    smaller than the number of points."""

    def limits(params: dict[str, Any], shape: Shape) -> dict[str, str]:
        n = shape.points
        out = {}
        for name in names:
            value = params.get(name)
            if n is not None and value is not None and value >= n:
                out[name] = f"{name}={value} needs more points than the data has ({n}): at most {_below(value, n)}"
        return out

    return limits


def _below(value, n: int):
    return n - 1 if isinstance(value, int) else f"less than {n}"


def both(*checks):
    """Limits: the union of several."""
    return lambda params, shape: {k: v for check in checks for k, v in check(params, shape).items()}
