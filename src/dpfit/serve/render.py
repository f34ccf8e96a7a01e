"""A stored release, shown: its coefficient table, summary, privacy statement and plot.

Everything here is post-processing of the stored release (no data, no new charge), by the
library's own code: :meth:`~dpfit.models.results.Result.summary`, the ledger's privacy
statement and :func:`dpfit.models.plotting.plot_coefficients`, at the dataset's delta. It runs
under the library lock (:data:`dpfit.serve.fitting.LIBRARY_LOCK`), so that dpfit's warnings
are never mixed with a fit's.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

from ..models.plotting import coefficient_frame, plot_coefficients
from ..models.results import Result
from ..remote.codec import decode_result
from .fitting import LIBRARY_LOCK

__all__ = ["display", "plot_png", "result_of"]


def result_of(view: dict[str, Any]) -> Result | None:
    """The :class:`Result` of a release view, or None when it released nothing."""
    document = view.get("result")
    return None if document is None else decode_result(document)


def display(result: Result, *, delta: float, alpha: float = 0.05) -> dict[str, Any]:
    """The pieces of the result page: coefficient rows, the interval's target, the full
    summary as HTML (escaped by the library) and the privacy statement."""
    with LIBRARY_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        target = result.targets[0] if result.targets else None
        rows = [
            {"term": term, "coef": float(coef)}
            for term, coef in zip(result.names, result.estimate, strict=True)
        ]
        if target is not None:
            interval = result.conf_int(alpha, target=target).to_numpy()
            bse = result.covariance(target).bse
            for row, (lower, upper), se in zip(rows, interval, bse, strict=True):
                row.update(lower=float(lower), upper=float(upper), se=float(se))
        return {
            "rows": rows,
            "target": target,
            "level": f"{100 * (1 - alpha):g}%",
            "summary_html": result.summary(alpha, delta=delta).as_html(),
            "summary_text": result.summary(alpha, delta=delta).as_text(),
            "statement": result.ledger.statement(delta),
            "epsilon": result.epsilon(delta),
        }


def plot_png(result: Result) -> bytes:
    """The coefficient plot (one panel per term) as PNG bytes."""
    with LIBRARY_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = coefficient_frame(result)
        figure = plot_coefficients({f"{result.model}, rho = {result.rho:.4g}": frame})
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=150)  # shown 750 px wide: sharp on HiDPI
    return buffer.getvalue()
