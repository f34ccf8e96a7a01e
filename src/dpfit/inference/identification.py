"""Which terms lie behind a direction that a released second moment cannot identify.

A linear fit's coefficients are identified along every direction v in which the design moves:
(1/n) ||X v||^2 = v' (X'X/n) v > 0. When two columns are (nearly) proportional, or one is
(nearly) constant and so collinear with the intercept, some direction has v' (X'X/n) v close
to zero, and the fit knows little about the coefficients along it: statsmodels reports the
condition number and "the design matrix is rank-deficient", linearmodels raises. A private
fit cannot read X'X, but it releases a noisy X'X/n (or a whitened version of it), and the
eigenvectors of the release whose eigenvalues cannot be told from zero are post-processing
of that release. This module turns such a direction into the words a researcher acts on:
the terms with the largest loadings ("exper and exper_m are nearly collinear").

Loadings are taken in units where every column has the same typical size: coordinate j of a
direction v is multiplied by sqrt(M_jj), the released root mean square of column j (floored
at one noise s.d., so a column the noise hides does not vanish), so that loading_j = v_j
sqrt(M_jj) measures column j's share of X v, as the variance-decomposition proportions of
Belsley, Kuh & Welsch (1980, ch. 3) measure a column's share of a near-dependency. The terms
named are the fewest whose squared loadings make up :data:`EXPLAINED` of the direction.
Everything here is post-processing of releases.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .population import NoisyMoment

__all__ = [
    "EXPLAINED",
    "collinear_terms",
    "column_scale",
    "describe_directions",
    "swamped",
    "unidentified_directions",
    "unidentified_reason",
]

#: The terms named are the fewest whose squared loadings add up to this share of a direction.
EXPLAINED = 0.9
#: At most this many directions are described in one message.
MOST_DIRECTIONS = 3


def unidentified_directions(moment: NoisyMoment, z: float) -> np.ndarray:
    """The release's eigenvectors (columns, in its coordinates) that it may not identify.

    The directions along which :meth:`~dpfit.inference.population.NoisyMoment.unidentified`
    fails: a de-spread eigenvalue whose lower confidence bound mu - z s sqrt(2) lies below
    one noise s.d. s sqrt(2). Ascending in eigenvalue; shape (k, d), d possibly 0.
    """
    mu, vectors = moment._despread()
    weak = mu - z * moment.identified < moment.identified
    return vectors[:, weak]


def collinear_terms(
    direction: np.ndarray, scale: np.ndarray, names: Sequence[str]
) -> tuple[str, ...]:
    """The terms behind ``direction``: the fewest whose squared loadings reach EXPLAINED.

    ``direction`` is in the coefficients' coordinates and ``scale`` the columns' released
    root mean squares (module docstring), so loading_j = direction_j * scale_j; the terms
    come in the design's order.
    """
    loading = np.asarray(direction, dtype=np.float64) * np.asarray(scale, dtype=np.float64)
    share = loading**2 / max(float(loading @ loading), 1e-300)
    order = np.argsort(-share, kind="stable")
    count = int(np.searchsorted(np.cumsum(share[order]), EXPLAINED) + 1)
    return tuple(names[j] for j in sorted(order[: min(count, len(names))]))


def describe_directions(directions: np.ndarray, scale: np.ndarray, names: Sequence[str]) -> str:
    """One phrase naming the terms behind each direction (columns of ``directions``).

    E.g. "exper and exper_m are nearly collinear" or, for a direction made of one term,
    "educ barely varies in the data". Empty when there is no direction. At most
    MOST_DIRECTIONS directions are named, the least identified first.
    """
    parts = []
    for j in range(min(directions.shape[1], MOST_DIRECTIONS)):
        terms = collinear_terms(directions[:, j], scale, names)
        if len(terms) == 1:
            parts.append(f"{terms[0]} barely varies in the data")
        else:
            parts.append(f"{_join(terms)} are nearly collinear")
    if directions.shape[1] > MOST_DIRECTIONS:
        parts.append(f"{directions.shape[1] - MOST_DIRECTIONS} more direction(s)")
    return "; ".join(parts)


def unidentified_reason(
    directions: np.ndarray, scale: np.ndarray, names: Sequence[str], release: str, sds: str
) -> str:
    """The sentence a warning gives for the unidentified ``directions`` of ``release``, whose
    eigenvalues there are within ``sds`` (e.g. "three") noise s.d. of zero.

    It names the terms behind each direction (:func:`describe_directions`), except where the
    release cannot identify half of the k directions or more (:func:`swamped`): then naming
    terms would mislead, and the sentence says that the noise swamps the data.
    """
    weak, k = directions.shape[1], len(names)
    if swamped(weak, k):
        return (
            f"At this n and rho the noise swamps the data: {release} cannot be told from its "
            f"noise in {weak} of the {k} directions of the coefficients, so the estimate is "
            "mostly noise (too few records for this many terms at this rho)."
        )
    return (
        "The data do not identify every direction of the coefficients at this n and rho: "
        f"{describe_directions(directions, scale, names)} ({release} has an eigenvalue within "
        f"{sds} noise s.d. of zero along it), so the estimate along it is mostly noise and the "
        "intervals of those terms are wide."
    )


def swamped(weak: int, k: int) -> bool:
    """Whether ``weak`` unidentified directions out of ``k`` mean noise everywhere rather
    than collinear terms: at least half of them, and at least two."""
    return weak >= max(2, k / 2)


def column_scale(moment: NoisyMoment) -> np.ndarray:
    """Released root mean square of each column, sqrt(max(M_jj, s sqrt(2)))."""
    return np.sqrt(np.maximum(np.diag(moment.matrix), moment.identified))


def _join(terms: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return terms[0] if len(terms) == 1 else ", ".join(terms[:-1]) + " and " + terms[-1]
