"""Identification tests of a noisy-moment IV fit, on its :class:`~dpfit.models.Result`.

The noisy-moment 2SLS (``DPIVRegression``, ``dpfit.iv``; :mod:`._iv_moments`) keeps its
released second moments M~ and Omega~ on the result (:class:`IVReleases`), so that the tests
a researcher runs after 2SLS (linearmodels' ``first_stage``, ``sargan``, ``wu_hausman`` and
the Anderson-Rubin set) are post-processing of charged releases: no new look at the data.
The tests live in :mod:`dpfit.inference.iv_identification` and
:mod:`dpfit.inference.anderson_rubin`; this module maps their standardised coefficients back
to the original units (each regressor's coefficient is its standardised one times
sd(y) / sd(x), an exact, positive, linear map) and writes the summary's note.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import check_interval_alpha
from ..inference.anderson_rubin import ar_set, ar_test
from ..inference.iv_identification import (
    FirstStage,
    HypothesisTest,
    ReleasedMoments,
    first_stage,
    overidentification,
    wu_hausman,
)

__all__ = ["IVReleases", "IVTestsMixin"]


@dataclass(frozen=True, kw_only=True, eq=False)
class IVReleases:
    """What the identification tests need: the released moments (standardised units), the
    first stage's strength computed from them at fit time (None without an endogenous
    regressor and excluded instruments), the released score second moment (projected onto
    PSD), the released coefficients in those units, each regressor's factor back to the
    original units, and the regressors' names."""

    moments: ReleasedMoments
    stage: FirstStage | None
    omega: np.ndarray
    beta: np.ndarray
    scale: np.ndarray
    names: tuple[str, ...]

    @property
    def endogenous(self) -> list[str]:
        m = self.moments
        return [self.names[i] for i, c in enumerate(m.x_idx) if c in m.endogenous]

    def _position(self, name: str) -> int:
        return self.names.index(name)


class IVTestsMixin:
    """First-stage F, Anderson-Rubin set, Sargan/Hansen and Wu-Hausman tests (IV only)."""

    identification: IVReleases | None

    def _iv(self) -> IVReleases:
        if self.identification is None:
            raise ValueError(
                "identification tests need the released moments of the noisy-moment IV fit "
                "(DPIVRegression or dpfit.iv with method='moments' and instruments); this fit "
                "has none"
            )
        return self.identification

    def first_stage(self) -> FirstStage:
        """The instruments' first-stage strength: the F statistic with one endogenous
        regressor, Cragg & Donald's (1993) statistic with several, from the released moments
        with the privacy noise's expected contribution removed, and Stock & Yogo's (2005)
        critical value (:func:`dpfit.inference.iv_identification.first_stage`)."""
        iv = self._iv()
        return iv.stage if iv.stage is not None else first_stage(iv.moments)  # raises

    @property
    def first_stage_f(self) -> float:
        """The value of :meth:`first_stage` (noise-corrected)."""
        return self.first_stage().statistic

    def ar_test(self, value: float | Sequence[float]) -> HypothesisTest:
        """Anderson & Rubin's (1949) test that the endogenous coefficients equal ``value``
        (original units, one per endogenous regressor), valid however weak the instruments,
        with the privacy noise's variance added (:mod:`dpfit.inference.anderson_rubin`)."""
        iv = self._iv()
        value = np.atleast_1d(np.asarray(value, dtype=np.float64))
        return ar_test(iv.moments, value / self._endogenous_scale(iv))

    def ar_interval(self, alpha: float = 0.05) -> list[tuple[float, float]]:
        """The level 1 - alpha Anderson-Rubin confidence set of the endogenous coefficient.

        It stays valid when the instruments are weak, where the Wald interval of
        ``conf_int`` does not (Anderson & Rubin 1949; Staiger & Stock 1997). Returns the set
        as disjoint (low, high) intervals in the original units: one bounded interval when
        the instruments are strong, two rays or the whole line ``(-inf, inf)`` when they do
        not identify the coefficient, empty when the overidentifying restrictions are
        rejected at every value. One endogenous regressor only (use :meth:`ar_test` for
        joint values with several).
        """
        alpha = check_interval_alpha(alpha)
        iv = self._iv()
        scale = float(self._endogenous_scale(iv)[0])
        centre = float(iv.beta[iv._position(iv.endogenous[0])])
        return [(lo * scale, hi * scale) for lo, hi in ar_set(iv.moments, alpha, centre)]

    def sargan(self, robust: bool = False) -> HypothesisTest:
        """Sargan's (1958) overidentification test, or with ``robust=True`` Hansen's (1982)
        J with the released score second moment; the moment noise's covariance is added to
        the weight (:func:`dpfit.inference.iv_identification.overidentification`)."""
        iv = self._iv()
        return overidentification(iv.moments, iv.beta, iv.omega if robust else None)

    def wu_hausman(self) -> HypothesisTest:
        """The Wu (1973) / Hausman (1978) test that the endogenous regressors are exogenous
        (control function, the noise's variance added;
        :func:`dpfit.inference.iv_identification.wu_hausman`)."""
        return wu_hausman(self._iv().moments)

    def _endogenous_scale(self, iv: IVReleases) -> np.ndarray:
        return np.array([iv.scale[iv._position(name)] for name in iv.endogenous])

    def identification_text(self, alpha: float) -> str | None:
        """The summary's note on identification (None for a fit without released moments,
        or without an endogenous regressor and excluded instruments)."""
        iv = self.identification
        if iv is None or not iv.moments.endogenous or not iv.moments.excluded:
            return None
        try:
            parts = self._identification_parts(iv, alpha)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):  # degenerate releases
            return (
                "Identification tests: not computable from these releases (a released block "
                "is singular at this n and rho)."
            )
        return (
            "Identification (post-processing of the released moments, privacy noise "
            "included; homoskedastic errors): " + " ".join(parts)
        )

    def _identification_parts(self, iv: IVReleases, alpha: float) -> list[str]:
        parts = [f"{self.first_stage()}."]
        if len(iv.endogenous) == 1:
            level = f"{100 * (1 - alpha):g}%"
            pieces = self.ar_interval(alpha)
            shown = " and ".join(f"[{lo:.4g}, {hi:.4g}]" for lo, hi in pieces) or "empty"
            parts.append(
                f"Anderson-Rubin {level} set for {iv.endogenous[0]}: {shown} (valid however weak "
                "the instruments; ar_interval())."
            )
        if len(iv.moments.z_idx) > len(iv.moments.x_idx):
            parts.append(f"{self.sargan()}.")
        parts.append(f"{self.wu_hausman()}.")
        return parts
