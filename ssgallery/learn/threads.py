"""BLAS threading for training.

Per-client problems are small (n in the hundreds, d under a hundred, m + 1 unknowns in
the beta-step), and a multi-threaded BLAS spends more time synchronising its threads
than computing on them: on the 2-core development machine, compressing 5 sample_data
clients took 12.7 s with OpenBLAS's default 2 threads and 1.8 s with one (measured in
one process, alternating, while the other core was busy). Training entry points
therefore run with one BLAS thread; parallelism comes from processing clients in
parallel (``roc --jobs``), not from BLAS.
"""

import contextlib


@contextlib.contextmanager
def single_threaded_blas():
    """Context manager (and decorator) limiting BLAS to one thread inside it."""
    import numpy  # noqa: F401  (load the BLAS libraries so that the limit applies)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
