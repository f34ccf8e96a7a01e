"""Below which size Dask data fit faster in memory: a warning from public sizes only.

A full-batch step on Dask costs at least one call to every worker and back (a few
milliseconds on a busy machine, :mod:`dpfit.distributed.holders`), whatever the size of the
data; in memory it costs a pass over the rows. On the 2-core development machine
(``benchmarks/README.md``, "Dask: when it pays"), the default ``DPLinearRegression`` fit on a
2-worker ``LocalCluster`` took 0.4x the in-memory time at 2e6 x 10 and 2.4-4.2x at 1e5 x 10,
and a DP-GD step on 1e6 x 20 about the in-memory step. So below :data:`IN_MEMORY_VALUES`
values (n_public x columns of float64, 80 MB) a fit on Dask warns that the data would fit
faster in memory (:class:`~dpfit.exceptions.DaskOverheadWarning`). The size is the declared
``n_public`` times the arrays' column counts (metadata): nothing is read from the data, so
the warning says nothing about any record.
"""

from __future__ import annotations

import warnings

from .._validation import user_stacklevel
from ..exceptions import DaskOverheadWarning

__all__ = ["IN_MEMORY_VALUES", "warn_if_small"]

#: Values (records x columns) below which a fit on Dask warns (module docstring).
IN_MEMORY_VALUES = 10_000_000


def warn_if_small(n: int, columns: int) -> None:
    """Warn with :class:`~dpfit.exceptions.DaskOverheadWarning` when ``n`` records of
    ``columns`` values (public sizes) are fewer than :data:`IN_MEMORY_VALUES`."""
    if n * columns < IN_MEMORY_VALUES:
        warnings.warn(
            f"the Dask data are small (n_public x columns = {n * columns:.3g} values, below "
            f"{IN_MEMORY_VALUES:.0e}): each step's round trip to the workers costs more than "
            "its arithmetic, so the same fit is likely faster in memory (X.compute(), "
            "y.compute()); the results are the same either way",
            DaskOverheadWarning,
            stacklevel=user_stacklevel(),
        )
