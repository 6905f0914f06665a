"""PHATE (Moon et al.): diffusion-based, keeps both local and global (trajectory) structure."""

from typing import Annotated, Any, Literal

from pydantic import Field

from lab_assets.dr.methods import METHODS, fewer_than_points


@METHODS("phate", slow=True, packages=["phate", "graphtools"], limits=fewer_than_points("n_neighbors", "n_components"))
def phate(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1)] = 2,
    n_neighbors: Annotated[int, Field(ge=2)] = 5,
    decay: Annotated[float, Field(gt=0)] = 40.0,
    t: Annotated[int, Field(ge=1)] | Literal["auto"] = "auto",
    mds_solver: Literal["sgd", "smacof"] = "sgd",
) -> Any:
    """The reference `phate` package, seeded and single-threaded. `n_neighbors` is PHATE's `knn`
    (the name every neighbourhood method shares here)."""
    import phate as phate_lib  # heavy import, only when the method runs

    return phate_lib.PHATE(
        n_components=n_components,
        knn=n_neighbors,
        decay=decay,
        t=t,
        mds_solver=mds_solver,
        random_state=seed,
        n_jobs=1,
        verbose=0,
    )
