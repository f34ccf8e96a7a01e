"""The per-record offset of a Poisson fit, offset + log(exposure), checked as a data column is.

An exposure (a time at risk, a population size) or an offset is a private per-record value,
read by the formula API (a column name or an array) and by
:meth:`~dpfit.models.glm.estimators.DPPoissonRegressor.fit`. A missing or infinite value, or
an exposure that is not positive, is refused before anything is charged, with the message a
missing cell of any other column gets (:mod:`dpfit._validation`): nothing is dropped, since
dropping a record would make n depend on the data, and nothing quotes a value. On Dask the
offset would have to travel with the design's row blocks, which the fit does not do: an
exposure or offset with Dask data is refused before any charge.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...distributed import is_dask
from ._fit import per_record_numbers

__all__ = ["record_offsets"]

_NOT_DROPPED = (
    "dpfit does not drop records (that would make n depend on the data): remove them first "
    "and treat the row count after removal as public"
)


def _finite(values: np.ndarray, what: str, invalid: str, ok: np.ndarray) -> np.ndarray:
    if not ok.all():
        raise ValueError(f"{what} has {invalid} values; {_NOT_DROPPED}")
    return values


def record_offsets(
    offset: Any, exposure: Any, *, names: tuple[str | None, str | None] = (None, None),
    dask: bool = False,
) -> np.ndarray | None:  # fmt: skip
    """offset + log(exposure) per record (None when neither is given), refusing missing or
    infinite values and exposures <= 0 (module docstring). ``names`` are the data columns
    the two came from (for the message; None: given as arrays); ``dask``: the design is on
    Dask."""
    if offset is None and exposure is None:
        return None
    if dask or is_dask(offset) or is_dask(exposure):
        raise TypeError(
            "exposure= and offset= need in-memory data: with Dask inputs the per-record "
            "offset would not travel with the design's row blocks (compute the frame, or fit "
            "without them)"
        )
    total = None
    if offset is not None:
        what = "offset" if names[0] is None else f"offset column {names[0]!r}"
        values = per_record_numbers(offset, "offset")
        total = _finite(values, what, "missing or infinite", np.isfinite(values))
    if exposure is not None:
        what = "exposure" if names[1] is None else f"exposure column {names[1]!r}"
        values = per_record_numbers(exposure, "exposure")
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(values) & (values > 0)
        logged = np.log(_finite(values, what, "missing, infinite, zero or negative", ok))
        total = logged if total is None else total + logged
    return total
