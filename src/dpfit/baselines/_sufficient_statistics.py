"""Shared steps of sufficient-statistics perturbation (SSP and AdaSSP).

Notation: B_X = ``x_bound`` >= ||x_i||, B_Y = ``y_bound`` >= |y_i|, both public. Records are
first clipped to the bounds (rows of X rescaled to norm <= B_X, y clipped to [-B_Y, B_Y]):
a documented, data-independent rule (docs/user-guide.md, on bounds). The L2 sensitivities
of the released statistics, under replace-one (add/remove), are then

* X^T X as its upper triangle (incl. diagonal): sqrt(2) B_X^2 (B_X^2), since
  ||x x^T - x' x'^T||_F^2 = ||x||^4 + ||x'||^4 - 2 (x.x')^2 <= 2 B_X^4;
* X^T y: 2 B_X B_Y (B_X B_Y);
* lambda_min(X^T X): B_X^2 under both (Weyl: ||x x^T - x' x'^T||_2 <= B_X^2);

each plus the float64 rounding allowance of the computed sum of n terms (and of the
eigensolver), from :func:`dpfit.privacy.query_sensitivity`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_positive, check_X_y
from ..mechanisms import (
    NoiseSource,
    check_public_scale,
    clip_rows,
    gaussian,
    make_noise_source,
    noise_std_for_rho,
    release_peaks,
    rho_within,
)
from ..privacy import (
    PrivacyLedger,
    Query,
    Relation,
    parse_relation,
    public_n,
    query_sensitivity,
    split,
)
from ..privacy.ledger import prepare_ledger

__all__: list[str] = []


def check_bound(value: Any, name: str) -> float:
    """A public data bound: required (ValueError when missing), finite and > 0."""
    if value is None:
        raise ValueError(
            f"{name} is required: a public bound chosen without looking at the data "
            "(dpfit never derives bounds from private data)"
        )
    return check_positive(value, name)


def clip_to_bounds(
    X: np.ndarray, y: np.ndarray, x_bound: float, y_bound: float
) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """Clip rows of X to norm ``x_bound`` and y to [-y_bound, y_bound]; non-private counts."""
    Xc = clip_rows(X, x_bound)
    yc = np.clip(y, -y_bound, y_bound)
    counts = {
        "fraction_x_clipped": float(np.mean(np.any(Xc != X, axis=1))),
        "fraction_y_clipped": float(np.mean(yc != y)),
    }
    return Xc, yc, counts


def sensitivities(
    x_bound: float, y_bound: float, relation: Relation, *, n: int, p: int
) -> dict[str, float]:
    """L2 sensitivities of the released statistics over n records of p features (module
    docstring), with their float rounding allowance."""
    common = {"n": n, "relation": relation}
    return {
        "xtx": query_sensitivity(Query.SECOND_MOMENT_SUM, bound=x_bound, **common),
        "xty": query_sensitivity(Query.SUM, bound=x_bound * y_bound, **common),
        "lambda_min": query_sensitivity(Query.EIGENVALUE, bound=x_bound, dim=p, **common),
    }


def check_scales(
    x_bound: float, y_bound: float, relation: Relation, *, n: int, p: int, rho: float
) -> None:
    """Refuse, before any charge, bounds whose statistics or noisy releases could overflow.

    ``rho`` is the share of each release. X^T X and lambda_min reach n B_X^2 and X^T y
    n B_X B_Y (:mod:`dpfit.mechanisms.limits`); B_X is checked on X^T X, then B_Y given B_X.
    """
    common = {"n": n, "rho": rho, "relation": relation}

    def x_peaks(b: float) -> tuple[float, ...]:
        return (
            *release_peaks(Query.SECOND_MOMENT_SUM, bound=b, **common),
            *release_peaks(Query.EIGENVALUE, bound=b, dim=p, **common),
        )

    check_public_scale("x_bound", x_bound, x_peaks, what=f"X'X of n = {n} records")
    check_public_scale(
        "y_bound",
        y_bound,
        lambda b: release_peaks(Query.SUM, bound=x_bound * b, **common),
        what=f"X'y of n = {n} records with x_bound = {x_bound:g}",
    )


def release_gram(
    gram: np.ndarray,
    *,
    sensitivity: float,
    noise_std: float,
    ledger: PrivacyLedger,
    rng: NoiseSource,
    label: str,
) -> np.ndarray:
    """``gram`` (= X^T X) plus a symmetric Gaussian matrix, upper triangle i.i.d. N(0, std^2)."""
    p = gram.shape[0]
    upper = np.triu_indices(p)
    noisy = gaussian(
        gram[upper],
        sensitivity=sensitivity,
        noise_std=noise_std,
        ledger=ledger,
        rng=rng,
        label=label,
    )
    out = np.empty((p, p))
    out[upper] = noisy
    out.T[upper] = noisy
    return out


def solve_ridge(gram: np.ndarray, xty: np.ndarray, ridge: float) -> np.ndarray:
    """solve(gram + ridge I, xty), falling back to least squares when singular."""
    A = gram + ridge * np.eye(gram.shape[0])
    try:
        return np.linalg.solve(A, xty)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(A, xty, rcond=None)[0]


@dataclass(frozen=True)
class StatisticsRun:
    """A checked sufficient-statistics fit before its releases: the data, its ledger and
    noise source, the public n, and each release's sensitivity and noise std."""

    X: np.ndarray
    y: np.ndarray
    relation: Relation
    ledger: PrivacyLedger
    source: NoiseSource
    n: int
    sens: dict[str, float]
    stds: dict[str, float]


def prepare_statistics(
    X: Any,
    y: Any,
    *,
    rho: float,
    x_bound: float,
    y_bound: float,
    relation: Relation | str,
    n_public: int | None,
    ledger: PrivacyLedger | None,
    rng: Any,
    name: str,
    releases: tuple[str, ...],
) -> StatisticsRun:
    """The steps every sufficient-statistics fit takes before its releases (``rho`` and the
    bounds already checked): the ledger, the data, the public n, the scale check and the
    noise of ``releases`` (keys of :func:`sensitivities`), each charged an equal exact share
    of ``rho`` (:func:`dpfit.privacy.split`)."""
    relation = parse_relation(relation)
    ledger = prepare_ledger(ledger, relation, rho, name=name)
    source = make_noise_source(rng)
    X, y = check_X_y(X, y)
    n = public_n(X.shape[0], n_public, relation)
    k = len(releases)
    check_scales(x_bound, y_bound, relation, n=n, p=X.shape[1], rho=rho / float(k))
    sens = sensitivities(x_bound, y_bound, relation, n=n, p=X.shape[1])
    share = split(rho, k)[0]  # k releases whose exact charges sum to at most rho
    stds = {key: noise_std_for_rho(sens[key], rho_within(sens[key], share)) for key in releases}
    return StatisticsRun(
        X=X, y=y, relation=relation, ledger=ledger, source=source, n=n, sens=sens, stds=stds
    )
