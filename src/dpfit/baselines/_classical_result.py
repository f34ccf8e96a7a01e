"""What the non-private baseline fits (:class:`~dpfit.baselines.OLSResult`,
:class:`~dpfit.baselines.TwoSLSResult`) share: the residual degrees of freedom and the old name
of their standard errors."""

from __future__ import annotations

import numpy as np

from .._deprecation import warn_renamed

__all__: list[str] = []


class ClassicalFit:
    """Mixin for a fit with ``params`` (p,), standard errors ``bse`` and ``nobs`` rows."""

    params: np.ndarray
    bse: np.ndarray
    nobs: int

    @property
    def std_errors(self) -> np.ndarray:
        """Deprecated name of :attr:`bse` (dpfit's one name for standard errors)."""
        warn_renamed("std_errors", "bse")
        return self.bse

    @property
    def df_resid(self) -> int:
        """Residual degrees of freedom n - p."""
        return self.nobs - self.params.shape[0]
