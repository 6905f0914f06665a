"""PHATE (Moon et al.): diffusion-based, keeps both local and global (trajectory) structure."""

from typing import Annotated, Any, Literal

from pydantic import Field

from lab_assets.methods import METHODS


@METHODS("phate", packages=["phate", "graphtools"])
def phate(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1)] = 2,
    knn: Annotated[int, Field(ge=2)] = 5,
    decay: Annotated[float, Field(gt=0)] = 40.0,
    t: Annotated[int, Field(ge=1)] | Literal["auto"] = "auto",
    mds_solver: Literal["sgd", "smacof"] = "sgd",
) -> Any:
    """The reference `phate` package, seeded and single-threaded."""
    import phate as phate_lib  # heavy import, only when the method runs

    return phate_lib.PHATE(
        n_components=n_components,
        knn=knn,
        decay=decay,
        t=t,
        mds_solver=mds_solver,
        random_state=seed,
        n_jobs=1,
        verbose=0,
    )
