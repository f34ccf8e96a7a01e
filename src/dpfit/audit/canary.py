"""The Dirac-canary design: neighbouring datasets whose difference only one coordinate sees.

The design of docs/auditing.md: append one all-zero feature column to a dataset D0 (public and
data-independent), and let the canary be the record x = e_{d+1} (zero on every real
feature) with response +``response``. Its gradient for any linear model lives on the extra
coordinate alone, which no other record touches, so the final model's extra coordinate is a
one-dimensional random walk driven by the canary and the noise. With a response far larger
than the clip, the canary's gradient saturates the clip at every step, the worst case of
the claimed sensitivity.

Neighbours under the claimed relation:

* replace-one (public n): D = D0 + anti-canary (response -``response``), D' = D0 + canary,
  so the canary coordinate's clipped gradient moves by 2 clip, the full replace-one
  sensitivity;
* add/remove: D = D0, D' = D0 + canary (the public count is len(D')).

The canary is the last row of both datasets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_int, check_positive
from ..privacy import Relation, parse_relation

__all__ = ["CanaryData", "canary_data", "canary_iv_data"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CanaryData:
    """Neighbouring datasets D (``X_null``, ``y_null``) and D' (``X_alt``, ``y_alt``).

    ``column`` is the canary coordinate, ``n_public`` the public record count and
    ``relation`` the neighbouring relation the pair realises. IV designs also carry
    instruments ``Z_null``/``Z_alt`` and the canary's instrument column ``instrument``.
    """

    X_null: np.ndarray
    y_null: np.ndarray
    X_alt: np.ndarray
    y_alt: np.ndarray
    column: int
    n_public: int
    relation: Relation
    Z_null: np.ndarray | None = None
    Z_alt: np.ndarray | None = None
    instrument: int | None = None

    def side(self, alt: bool) -> tuple[np.ndarray, ...]:
        """(X, y) of D' when ``alt`` else of D; (X, y, Z) for an IV design."""
        out = (
            (self.X_alt, self.y_alt, self.Z_alt) if alt else (self.X_null, self.y_null, self.Z_null)
        )
        return out if self.Z_null is not None else out[:2]


def canary_data(
    n: int,
    d: int,
    *,
    response: float,
    relation: Relation | str = "replace-one",
    rng: np.random.Generator,
    feature_scale: float = 1.0,
) -> CanaryData:
    """Build the canary pair on a synthetic D0 of ``n - 1`` Gaussian records with ``d`` features.

    D0 has x ~ N(0, feature_scale^2 I_d) and y = x @ beta + N(0, 1/4) with
    beta = 1/sqrt(d); the canary column is appended as column ``d`` (so p = d + 1).

    Parameters
    ----------
    n : int
        Public record count n >= 2 (D and D' have n rows under replace-one).
    d : int
        Real features d >= 1.
    response : float
        Canary response magnitude; choose it so that the canary's residual always exceeds
        the clip (the audit targets do).
    relation : {"replace-one", "add-remove"}
        Which neighbouring pair to build.
    rng : numpy.random.Generator
        Randomness for D0 (public test data, not privacy noise).
    feature_scale : float, default=1.0
        Scale of D0's features.
    """
    n = check_int(n, "n", low=2)
    d = check_int(d, "d", low=1)
    response = check_positive(response, "response")
    relation = parse_relation(relation)
    # Not privacy noise: the audit's synthetic background dataset D0.
    X0 = feature_scale * rng.standard_normal((n - 1, d))
    y0 = X0 @ np.full(d, 1 / np.sqrt(d)) + 0.5 * rng.standard_normal(n - 1)
    X0 = np.hstack([X0, np.zeros((n - 1, 1))])
    canary = np.zeros((1, d + 1))
    canary[0, d] = 1.0
    X_alt = np.vstack([X0, canary])
    y_alt = np.append(y0, response)
    if relation is Relation.REPLACE_ONE:
        X_null, y_null = X_alt.copy(), np.append(y0, -response)
    else:
        X_null, y_null = X0, y0
    return CanaryData(
        X_null=X_null,
        y_null=y_null,
        X_alt=X_alt,
        y_alt=y_alt,
        column=d,
        n_public=n,
        relation=relation,
    )


def canary_iv_data(
    n: int,
    *,
    response: float,
    regressor: float,
    rng: np.random.Generator,
) -> CanaryData:
    """The canary pair for IV regression under replace-one: a dedicated instrument/regressor pair.

    D0 has n - 1 records of one instrument z ~ N(0, 1), one endogenous regressor
    x = z + u + e and y = x / 2 + u + e' (u, e, e' ~ N(0, 1)), plus an instrument column and
    a regressor column that are zero for every record of D0. The canary has z = e_c (the
    extra instrument), x = ``regressor`` * e_c' (the extra regressor) and y = ``response``;
    the anti-canary in D has the opposite signs of both. The first-stage gradient entry
    (c, c') and, with a public first stage whose extra block is the identity, the second-stage
    coordinate c' are then moved by the canary alone (Liang et al. 2025, the per-example
    gradients of Alg. 1).
    """
    n = check_int(n, "n", low=2)
    response = check_positive(response, "response")
    regressor = check_positive(regressor, "regressor")
    # Not privacy noise: the audit's synthetic IV background dataset D0.
    z = rng.standard_normal(n - 1)
    u = rng.standard_normal(n - 1)
    x = z + u + rng.standard_normal(n - 1)
    y0 = 0.5 * x + u + rng.standard_normal(n - 1)
    Z0 = np.column_stack([z, np.zeros(n - 1)])
    X0 = np.column_stack([x, np.zeros(n - 1)])

    def with_canary(sign: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            np.vstack([X0, [0.0, sign * regressor]]),
            np.append(y0, sign * response),
            np.vstack([Z0, [0.0, 1.0]]),
        )

    X_null, y_null, Z_null = with_canary(-1.0)
    X_alt, y_alt, Z_alt = with_canary(1.0)
    return CanaryData(
        X_null=X_null,
        y_null=y_null,
        X_alt=X_alt,
        y_alt=y_alt,
        column=1,
        n_public=n,
        relation=Relation.REPLACE_ONE,
        Z_null=Z_null,
        Z_alt=Z_alt,
        instrument=1,
    )
