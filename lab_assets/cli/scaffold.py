"""What `lab new` writes (cli/new.py): an entry's module and a test that passes as written, from
templates, into the lab's package; a package it creates imports every module in it."""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

from lab_assets.core.input_files import InputError

NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")


class NewEntryError(InputError):
    what = "new entry"


PACKAGE_INIT = '''"""The lab's own datasets, methods and metrics (`lab list` shows them with the built-in ones).

Every module of this package is imported (tests excepted), so adding an entry is adding a file.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("test_"):
        importlib.import_module(f"{__name__}.{_module.name}")
'''

MODULE = {
    "method": '''"""$name: a seeded random linear projection. Replace it with your method."""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.dr.methods import METHODS, fewer_than_points


class Projection:
    """What the entry returns: anything with scikit-learn's `fit_transform(X) -> (n, n_components)`."""

    def __init__(self, n_components: int, seed: int):
        self.n_components, self.seed = n_components, seed

    def fit_transform(self, X):
        rng = np.random.default_rng(self.seed)  # the cell's seed: never global random state
        W = rng.standard_normal((X.shape[1], self.n_components)) / np.sqrt(self.n_components)
        return (X - X.mean(axis=0)) @ W


# slow=True when it iterates, trains or builds an all-pairs graph; packages=[...]: libraries whose
# versions enter its code version. Import heavy libraries inside the function, not up here.
@METHODS("$name", limits=fewer_than_points("n_components"))
def $name(seed: int, *, n_components: Annotated[int, Field(ge=1)] = 2) -> Projection:
    """A seeded Gaussian random projection to n_components dimensions."""
    return Projection(n_components, seed)
''',
    "dataset": '''"""$name: a noisy circle in 2-d. Replace it with your dataset."""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.core.registry import Shape
from lab_assets.dr.datasets import DATASETS, Raw


# shape=: its points x features, known from the parameters, so a sweep whose methods or metrics
# cannot work on it is refused at plan time.
@DATASETS("$name", shape=lambda params: Shape(params["n_samples"], 2))
def $name(
    rng: np.random.Generator,
    *,
    n_samples: Annotated[int, Field(ge=10)] = 500,
    noise: Annotated[float, Field(ge=0)] = 0.05,
) -> Raw:
    """Points on the unit circle plus Gaussian noise; the label is the angle."""
    t = rng.uniform(0, 2 * np.pi, n_samples)  # the given Generator only: never global random state
    X = np.column_stack([np.cos(t), np.sin(t)]) + noise * rng.standard_normal((n_samples, 2))
    return Raw(X, t)
''',
    "metric": '''"""$name: the fraction of each point's k nearest data neighbours that stay its embedding
neighbours. Replace it with your metric."""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS, k_below_points
from lab_assets.dr.metrics.neighbors import Neighborhoods


# valid_range: the values it can take (a value outside fails the cell's check); better: "higher",
# "lower" or None (descriptive: never ranked).
@METRICS("$name", valid_range="[0, 1]", better="higher", limits=k_below_points)
def $name(nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)] = 10) -> float:
    """Mean overlap of the k-nearest-neighbour sets in data and embedding (1 = all kept)."""
    nb.check_k(k)
    data, embedding = nb.data_idx[:, :k], nb.emb_idx[:, :k]
    return float(np.mean([np.intersect1d(a, b).size / k for a, b in zip(data, embedding)]))
''',
}

TEST = {
    "method": """import numpy as np

from $package.$name import $name


def test_${name}_embeds_every_row_reproducibly():
    X = np.random.default_rng(0).normal(size=(40, 5))
    Z = $name(0, n_components=2).fit_transform(X)
    assert Z.shape == (40, 2) and np.isfinite(Z).all()
    np.testing.assert_array_equal(Z, $name(0, n_components=2).fit_transform(X))  # same seed, same result
""",
    "dataset": """import numpy as np

from $package.$name import $name


def test_${name}_has_the_declared_shape_and_is_seeded():
    raw = $name(np.random.default_rng(0), n_samples=50)
    assert raw.X.shape == (50, 2) and np.isfinite(raw.X).all()
    assert raw.labels is None or len(raw.labels) == 50
    assert $name.shape_of({"n_samples": 50}).points == 50
    np.testing.assert_array_equal(raw.X, $name(np.random.default_rng(0), n_samples=50).X)
""",
    "metric": """import numpy as np

from lab_assets.dr.metrics.neighbors import Neighborhoods
from $package.$name import $name


def test_${name}_stays_in_its_range():
    X = np.random.default_rng(0).normal(size=(40, 5))
    assert $name(Neighborhoods(X, X, k_max=5), k=5) == 1.0  # the data as its own embedding
    noise = np.random.default_rng(1).normal(size=(40, 2))
    assert $name.in_range($name(Neighborhoods(X, noise, k_max=5), k=5))
""",
}


def _registry(kind: str):
    from lab_assets.dr.declarations import REGISTRIES

    return next(r for r in REGISTRIES if r.kind == kind)


def write(kind: str, name: str, package: Path) -> list[Path]:
    """Write the entry's module and test into `package` (created with an importing `__init__.py`
    if it does not exist); NewEntryError, nothing written, for a bad or taken name."""
    if not NAME.fullmatch(name):
        raise NewEntryError(f"{name!r}: a name is lower case letters, digits and _, starting with a letter")
    if not package.name.isidentifier():
        raise NewEntryError(f"{package}: {package.name!r} is not a Python package name")
    registry = _registry(kind)
    if name in registry:
        raise NewEntryError(f"{kind} {name!r} exists already ({registry[name].origin}): choose another name")
    module, test = package / f"{name}.py", package / f"test_{name}.py"
    for path in (module, test):
        if path.exists():
            raise NewEntryError(f"{path}: exists already; nothing written")
    written = []
    package.mkdir(parents=True, exist_ok=True)
    init = package / "__init__.py"
    if not init.exists():
        init.write_text(PACKAGE_INIT)
        written.append(init)
    values = {"name": name, "package": package.name}
    module.write_text(Template(MODULE[kind]).substitute(values))
    test.write_text(Template(TEST[kind]).substitute(values))
    return [*written, module, test]
