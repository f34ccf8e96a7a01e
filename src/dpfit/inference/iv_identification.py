"""Identification tests of IV regression from a released second-moment matrix.

The private IV default releases M~ = M + E, the second moments of the standardised rows
a_i = (1, design columns, y) with symmetric noise E whose upper triangle is i.i.d. N(0, s^2)
(:mod:`dpfit.models._iv_moments`). Every statistic an applied researcher reads after
2SLS is a function of sample second moments, so each is post-processing of M~; what the noise
changes is its null distribution, which this module accounts for.

Notation (columns of M by role): X the regressors, Z the instruments, W = X and Z's common
columns (the intercept and exogenous regressors), Xe = X minus W (endogenous), Z2 = Z minus
W (excluded instruments, L of them), K_z = |Z|. For a vector c over the columns, the
W-partialled vector is r = c - P_W M_WW^-1 M_W. c (c with its projection on W removed, so
that r' a_i is the residual of c' a_i after W), and g(c) = M_Z2. r = (1/n) Z2' M_W (A c)
the partialled cross moment. S = M_Z2Z2.W, the partialled second moment of Z2. M_WW and S
are inverted with their released eigenvalues raised to the noise floor 2 s sqrt(k), as 2SLS
inverts M_ZZ: nearly collinear controls (an income and its square) would otherwise let the
noise along their near-null direction swing every partialled moment.

Noise of a partialled moment (first order in E): dg = K E_Z. r with K = [I_L, -M_Z2W M_WW^-1]
acting on the rows (Z2, W), so Cov(dg) = s^2 K L_r L_r' K' with L_r of
:func:`~dpfit.inference.population_iv.noise_rows`. This is the noise term every test here
adds to the sampling variance it divides by.

* :func:`first_stage` -- the Cragg & Donald (1993) statistic, which is the first-stage F
  with one endogenous regressor, from the partialled first-stage moments; the noise adds
  s^2 tr(S^-1 Cov(dg_j, dg_k)) to the explained second moment of Xe, which is subtracted
  (noise-corrected), and the noise s.d. of the statistic is given (delta method). Compared
  with Stock & Yogo's (2005) critical values for 10% maximal 2SLS size.
* :func:`overidentification` -- Sargan's (1958) test, or Hansen's (1982) J with the released
  score second moment, with the moment noise's covariance added to the weight.
* :func:`wu_hausman` -- the control-function (Wu 1973; Hausman 1978) test that the
  endogenous regressors are exogenous, with the noise's variance of the control
  coefficients (delta method) added to their sampling variance.

Sampling variances are the homoskedastic ones unless a released score second moment is
given (Hansen's J): a robust version needs moments at hypothesised coefficients that were
not released. Everything here is post-processing of M~ (and Omega~).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import stats

from .population_iv import noise_rows

__all__ = [
    "STOCK_YOGO_SIZE",
    "FirstStage",
    "HypothesisTest",
    "ReleasedMoments",
    "first_stage",
    "noise_jacobian",
    "overidentification",
    "wu_hausman",
]

#: Stock & Yogo (2005, Table 5.2): critical values of the Cragg-Donald statistic for a 5%
#: Wald test on 2SLS whose actual size is at most 10%, one endogenous regressor, by the
#: number of excluded instruments.
STOCK_YOGO_SIZE = {1: 16.38, 2: 19.93, 3: 22.30, 4: 24.58}


@dataclass(frozen=True, kw_only=True, eq=False)
class ReleasedMoments:
    """A released M~ with its noise s.d. per entry, the public n and its columns' roles."""

    matrix: np.ndarray
    noise_std: float
    n: int
    x_idx: tuple[int, ...]
    z_idx: tuple[int, ...]
    y_idx: int

    def with_matrix(self, matrix: np.ndarray) -> ReleasedMoments:
        """The same roles over another matrix (for derivatives in the noise)."""
        return ReleasedMoments(
            matrix=matrix, noise_std=self.noise_std, n=self.n, x_idx=self.x_idx,
            z_idx=self.z_idx, y_idx=self.y_idx,
        )  # fmt: skip

    @property
    def exogenous(self) -> list[int]:
        """W: regressors that are also instruments (the intercept among them)."""
        return [c for c in self.x_idx if c in self.z_idx]

    @property
    def endogenous(self) -> list[int]:
        """Xe: regressors that are not instruments."""
        return [c for c in self.x_idx if c not in self.z_idx]

    @property
    def excluded(self) -> list[int]:
        """Z2: instruments that are not regressors."""
        return [c for c in self.z_idx if c not in self.x_idx]

    def unit(self, column: int) -> np.ndarray:
        """The vector c that picks one column."""
        c = np.zeros(self.matrix.shape[0])
        c[column] = 1.0
        return c

    @property
    def floor(self) -> float:
        """The release's noise floor 2 s sqrt(k) (:attr:`NoisyMoment.floor`): eigenvalues below
        it cannot be told from the noise."""
        return 2.0 * self.noise_std * np.sqrt(self.matrix.shape[0])

    def _floored_inverse(self, block: np.ndarray) -> np.ndarray:
        """The inverse of a symmetric released block with its eigenvalues raised to the noise
        floor (and to 1e-12 of the largest where there is no noise), as 2SLS inverts M_ZZ
        (:func:`~dpfit.inference.population_iv.two_sls_from_moments`): exogenous regressors
        that are nearly collinear (an income and its square) would otherwise let the noise
        along their near-null direction swing every partialled moment."""
        values, vectors = np.linalg.eigh((block + block.T) / 2.0)
        return (vectors / self._floored(values)) @ vectors.T

    def _floored(self, values: np.ndarray) -> np.ndarray:
        """Eigenvalues raised to the noise floor (1e-12 of the largest without noise)."""
        return np.maximum(values, max(self.floor, 1e-12 * float(np.max(np.abs(values)))))

    @cached_property
    def _exogenous_inverse(self) -> np.ndarray:
        W = self.exogenous
        return self._floored_inverse(self.matrix[np.ix_(W, W)])

    def partialled(self, c: np.ndarray) -> np.ndarray:
        """r = c - P_W M_WW^-1 M_W. c: c' a_i's residual after W (M_WW floored)."""
        W, M = self.exogenous, self.matrix
        r = np.array(c, dtype=np.float64)
        if W:
            r[W] -= self._exogenous_inverse @ (M[W] @ c)
        return r

    @cached_property
    def _row_map(self) -> np.ndarray:
        """K = [I_L, -M_Z2W M_WW^-1]: dg = K E_(Z2, W). r."""
        W, Z2, M = self.exogenous, self.excluded, self.matrix
        left = np.eye(len(Z2))
        if not W:
            return left
        H = (self._exogenous_inverse @ M[np.ix_(W, Z2)]).T
        return np.hstack([left, -H])

    def noise_map(self, r: np.ndarray) -> np.ndarray:
        """A with dg(r) = A u for the upper-triangle noise u: Cov(dg) = s^2 A A'."""
        return self._row_map @ noise_rows(r, [*self.excluded, *self.exogenous])

    @cached_property
    def partialled_moment(self) -> np.ndarray:
        """M.W = M - M_.W M_WW^-1 M_W.: the second moments of the residuals after W."""
        W, M = self.exogenous, self.matrix
        if not W:
            return M
        out = M - M[:, W] @ self._exogenous_inverse @ M[W]
        return (out + out.T) / 2.0

    @cached_property
    def instrument_moment(self) -> np.ndarray:
        """S = M_Z2Z2.W, the partialled second moment of the excluded instruments, with its
        eigenvalues raised to the release's noise floor 2 s sqrt(k) (as 2SLS treats M_ZZ,
        :func:`~dpfit.inference.population_iv.two_sls_from_moments`), so that it is
        positive definite."""
        values, vectors = np.linalg.eigh(
            self.partialled_moment[np.ix_(self.excluded, self.excluded)]
        )
        return (vectors * self._floored(values)) @ vectors.T


@dataclass(frozen=True, kw_only=True)
class HypothesisTest:
    """A test statistic with its null distribution (``"chi2"`` or ``"F"``) and p-value."""

    name: str
    statistic: float
    dof: tuple[float, ...]
    distribution: str
    null: str

    @property
    def pvalue(self) -> float:
        if self.distribution == "F":
            return float(stats.f.sf(self.statistic, *self.dof))
        return float(stats.chi2.sf(self.statistic, self.dof[0]))

    def __str__(self) -> str:
        dof = ", ".join(f"{d:g}" for d in self.dof)
        return (
            f"{self.name}: {self.distribution}({dof}) = {self.statistic:.4g}, "
            f"p = {self.pvalue:.3g} (H0: {self.null})"
        )


@dataclass(frozen=True, kw_only=True)
class FirstStage:
    """The first-stage strength of the instruments (:func:`first_stage`)."""

    statistic: float
    noise_sd: float
    uncorrected: float
    instruments: int
    endogenous: int

    @property
    def critical(self) -> float | None:
        """Stock & Yogo's 10% maximal size critical value, where tabulated here."""
        if self.endogenous != 1:
            return None
        return STOCK_YOGO_SIZE.get(self.instruments)

    @property
    def name(self) -> str:
        return "first-stage F" if self.endogenous == 1 else "Cragg-Donald statistic"

    def __str__(self) -> str:
        if self.critical is not None:
            verdict = (
                f"Stock-Yogo critical value for at most 10% size of a 5% Wald test: "
                f"{self.critical:g}"
            )
        else:
            verdict = "rule of thumb: weak below 10 (Staiger & Stock 1997)"
        return (
            f"{self.name} = {self.statistic:.4g} (privacy noise s.d. {self.noise_sd:.2g}, "
            f"its expected contribution removed; {verdict})"
        )


def first_stage(m: ReleasedMoments) -> FirstStage:
    """The Cragg-Donald statistic of the released moments, noise-corrected (module docstring).

    With G = M_Z2Xe.W (L x p_e), R = G' S^-1 G (the explained second moment of Xe),
    Sigma = (M_XeXe.W - R) n / (n - K_z) (the first-stage residual covariance):
    CD = lambda_min(Sigma^-1/2 R Sigma^-1/2) n / L (Cragg & Donald 1993; Stock & Yogo 2005,
    eq. 4.3), the first-stage F for p_e = 1. The noise adds N_jk = s^2 tr(S^-1 A_j A_k') to
    R (A_j the noise map of column j's partialled moment), so R - N is used; the statistic's
    noise s.d. is the delta method's s ||dCD/du||.
    """
    if not m.endogenous or not m.excluded:
        raise ValueError("no endogenous regressor with excluded instruments: nothing to test")
    value = _cragg_donald(m, corrected=True)
    # the correction is of order s^2, so its derivative in the noise is negligible
    gradient = noise_jacobian(lambda mm: np.array([_cragg_donald(mm, corrected=False)]), m)
    return FirstStage(
        statistic=value,
        noise_sd=float(m.noise_std * np.linalg.norm(gradient)),
        uncorrected=_cragg_donald(m, corrected=False),
        instruments=len(m.excluded),
        endogenous=len(m.endogenous),
    )


def _cragg_donald(m: ReleasedMoments, *, corrected: bool) -> float:
    Xe, Mp = m.endogenous, m.partialled_moment
    G = Mp[np.ix_(m.excluded, Xe)]
    Sinv = np.linalg.inv(m.instrument_moment)
    R = G.T @ Sinv @ G
    if corrected:
        A = [m.noise_map(m.partialled(m.unit(j))) for j in Xe]
        R = R - m.noise_std**2 * np.array([[np.trace(Sinv @ a @ b.T) for b in A] for a in A])
    total = Mp[np.ix_(Xe, Xe)]
    L, kz, n = len(m.excluded), len(m.z_idx), m.n
    sigma = (total - R) * n / (n - kz)
    values, vectors = np.linalg.eigh((sigma + sigma.T) / 2.0)
    root = (vectors / np.sqrt(m._floored(values))) @ vectors.T
    return float(np.linalg.eigvalsh(root @ R @ root)[0] * n / L)


def noise_jacobian(f: Callable[[ReleasedMoments], np.ndarray], m: ReleasedMoments) -> np.ndarray:
    """d f / d u over the upper-triangle noise coordinates u of M~ (central differences).

    The step is the noise s.d. itself (the scale over which the release is uncertain), so
    that the delta method's s^2 J J' is the variance of f's linear approximation across the
    noise. Shape (len(f), k (k + 1) / 2); zero without noise.
    """
    M, h = m.matrix, m.noise_std
    if h == 0.0:  # nothing released with noise: the noise terms vanish
        return np.zeros((np.size(f(m)), M.shape[0] * (M.shape[0] + 1) // 2))
    columns = []
    for a, b in zip(*np.triu_indices(M.shape[0]), strict=True):
        step = np.zeros_like(M)
        step[a, b] = step[b, a] = h
        columns.append((f(m.with_matrix(M + step)) - f(m.with_matrix(M - step))) / (2 * h))
    return np.column_stack(columns)


def overidentification(
    m: ReleasedMoments, beta: np.ndarray, omega: np.ndarray | None = None
) -> HypothesisTest:
    """Sargan's (1958) test, or Hansen's (1982) J with the released score second moment.

    With the moments m(b) = M_Zy - M_ZX b and the weight Lambda = sigma^2 M_ZZ (Sargan;
    sigma^2 the residual second moment at ``beta``) or Omega~ (Hansen), plus the moment
    noise's covariance n s^2 L L' at ``beta``
    (:func:`~dpfit.inference.population_iv.moment_noise_covariance`): b_L the GMM estimate
    with weight Lambda^-1 and J = n m(b_L)' Lambda^-1 m(b_L), chi-squared with K_z - p degrees
    of freedom under valid instruments. Without noise, Lambda = sigma^2 M_ZZ gives Sargan's
    n R^2 statistic exactly.
    """
    M, Z, X = m.matrix, list(m.z_idx), list(m.x_idx)
    over = len(Z) - len(X)
    if over < 1:
        raise ValueError("the model is exactly identified: there is no overidentifying restriction")
    c = m.unit(m.y_idx)
    c[X] -= np.asarray(beta, dtype=np.float64)
    noise = noise_rows(c, Z)
    if omega is None:
        weight, name = float(c @ M @ c) * M[np.ix_(Z, Z)], "Sargan"
    else:
        weight, name = np.asarray(omega, dtype=np.float64), "Hansen J"
    weight = weight + m.n * m.noise_std**2 * noise @ noise.T
    Q, b = M[np.ix_(Z, X)], M[Z, m.y_idx]
    solve = np.linalg.solve
    gmm = solve(Q.T @ solve(weight, Q), Q.T @ solve(weight, b))
    moment = b - Q @ gmm
    return HypothesisTest(
        name=name,
        statistic=float(m.n * moment @ solve(weight, moment)),
        dof=(float(over),),
        distribution="chi2",
        null="the overidentifying restrictions hold",
    )


def wu_hausman(m: ReleasedMoments) -> HypothesisTest:
    """The control-function test that the endogenous regressors are exogenous.

    Regress y on X and the first-stage residuals V = Xe - Z Pi (Pi = M_ZZ^-1 M_ZXe): all are
    linear combinations of M's columns (a map T), so the regression's moments are T' M T and
    T' M e_y. The coefficients d of V are zero when Xe is exogenous (Hausman 1978, sec. 2;
    Wu 1973); the statistic d' (sigma^2 [(T'MT)^-1]_dd / n + s^2 J J')^-1 d adds the noise's
    variance of d (delta method, J = dd/du) and is chi-squared with p_e degrees of freedom.
    """
    if not m.endogenous or not m.excluded:
        raise ValueError("no endogenous regressor with excluded instruments: nothing to test")
    p_e = len(m.endogenous)
    coef, cov = _control_function(m)
    jacobian = noise_jacobian(lambda mm: _control_function(mm)[0][-p_e:], m)
    total = cov[-p_e:, -p_e:] + m.noise_std**2 * jacobian @ jacobian.T
    d = coef[-p_e:]
    return HypothesisTest(
        name="Wu-Hausman",
        statistic=float(d @ np.linalg.solve(total, d)),
        dof=(float(p_e),),
        distribution="chi2",
        null="the endogenous regressors are exogenous",
    )


def _control_function(m: ReleasedMoments) -> tuple[np.ndarray, np.ndarray]:
    """OLS of y on (X, V) from the moments: coefficients and their homoskedastic covariance."""
    M, Z, k = m.matrix, list(m.z_idx), m.matrix.shape[0]
    T = np.zeros((k, len(m.x_idx) + len(m.endogenous)))
    T[list(m.x_idx), np.arange(len(m.x_idx))] = 1.0
    for j, col in enumerate(m.endogenous):
        t = len(m.x_idx) + j
        T[col, t] = 1.0
        T[Z, t] -= np.linalg.solve(M[np.ix_(Z, Z)], M[Z, col])
    DD, Dy = T.T @ M @ T, T.T @ M[:, m.y_idx]
    coef = np.linalg.solve(DD, Dy)
    sigma2 = max(float(M[m.y_idx, m.y_idx] - coef @ Dy), 1e-300) * m.n / (m.n - T.shape[1])
    return coef, sigma2 * np.linalg.inv(DD) / m.n
