"""The environment variables that size every native thread pool (BLAS, OpenMP, numba).

A sweep worker, a warm run worker and the plain-loop baseline each run one cell at a time on
one core: process-level parallelism, no oversubscription. The variables must be in the
environment before NumPy/sklearn/numba load (threadpoolctl can limit only libraries already
loaded), so this module imports nothing.
"""

THREAD_POOL_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
SINGLE_THREADED = {v: "1" for v in THREAD_POOL_VARIABLES}
