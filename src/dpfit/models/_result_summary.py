"""The summary table of a :class:`~dpfit.models.Result` (post-processing of the release).

:func:`result_summary` assembles what :meth:`Result.summary` shows: the coefficient table
with standard errors, t statistics, p-values and intervals for one target, a header of
public inputs and privacy facts, the public configuration, the non-private diagnostics only
on request and under a title that says so, and numbered notes ending with the privacy
statement. :class:`~dpfit.models.Summary` renders it; nothing here reads data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..inference.population import CovarianceEstimate
from ..privacy.statement import format_rho
from ._hypothesis import two_sided_pvalues
from .summary import Summary

if TYPE_CHECKING:
    from .results import Result

__all__ = ["POPULATION_HINT", "result_summary"]


def result_summary(
    result: Result, alpha: float, target: str | None, delta: float, diagnostics: bool
) -> Summary:
    """The summary of ``result`` at level 1 - alpha for ``target`` (checked by the caller;
    None when the fit released no interval), with epsilon reported at ``delta``."""
    level = f"{100 * (1 - alpha):g}%"
    table = pd.DataFrame({"coef": result.estimate}, index=list(result.names))
    if target is not None:
        cov = result.covariance(target)
        lower, upper = result._interval(alpha, target)
        # Normal-based intervals head their columns z, as linearmodels does; else Student-t.
        stat = "z" if np.isinf(cov.dof).all() else "t"
        table["std err"] = cov.bse
        table[stat] = result.estimate / cov.bse
        table[f"P>|{stat}|"] = two_sided_pvalues(result.estimate / cov.bse, cov.dof)
        table[f"[{alpha / 2:g}"] = lower
        table[f"{1 - alpha / 2:g}]"] = upper
    seeded = "yes (reproducible; not for real releases)" if result.seeded else "no"
    unit = result.ledger.unit  # a privacy unit: n counts units, the relation is per unit
    header = [
        ("Dep. variable", result.response),
        ("Model", result.model),
        ("Method", result.method),
        ("No. observations", f"{result.n} (public)")
        if unit is None
        else ("No. units", f"{result.n} (public; rows are not released)"),
        ("Privacy (zCDP)", f"rho = {format_rho(result.rho, 4)}"),
        ("(epsilon, delta)-DP", f"({result.epsilon(delta):.4g}, {delta:.3g}) via CKS 2020"),
        (
            "Neighbouring relation",
            str(result.ledger.relation)
            if unit is None
            else f"{result.ledger.relation} unit (1 unit = all rows with the same {unit.column})",
        ),
        ("Noise backend", result.noise_backend),
        ("Seeded noise", seeded),
        ("Interval covers", _covers_text(result, target)),
        (
            "Interval",
            _interval_text(level, result.covariance(target) if target else None),
        ),
        ("dpfit version", result.version),
    ]
    sections: list[tuple[str, list[tuple[str, str]]]] = [
        ("Public configuration", [(k, _config_text(v)) for k, v in result.config.items()])
    ]
    if diagnostics and result.diagnostics:
        sections.append(
            (
                "NON-PRIVATE diagnostics (computed from the raw data; not covered by the "
                "privacy guarantee; do not publish)",
                [(k, _config_text(v)) for k, v in result.diagnostics.items()],
            )
        )
    return Summary(
        title=f"{result.model} results",
        header=header,
        table=table,
        sections=sections,
        notes=_notes(result, alpha, delta, target),
    )


def _notes(result: Result, alpha: float, delta: float, target: str | None) -> list[str]:
    """The numbered notes: what the interval covers, identification (IV), the noise's
    provenance, the fit's own notes, and last the privacy statement."""
    notes = []
    label = "EXPERIMENTAL interval (no coverage guarantee). " if result.experimental else ""
    if target == "population":
        population = result.covariance("population")
        notes.append(label + population.description)
        if population.drift is not None:
            notes.append(
                "Convergence (released iterates): the largest drift between the halves of the "
                f"averaged iterates is {float(np.max(population.relative_drift)):.2g} standard "
                "errors (above about 0.5 the interval's centre is biased; the fit warns when "
                "such a drift is also significant against the iterates' own noise)."
            )
        if population.gap is not None:
            notes.append(_gap_text(population))
        if result.m is not None:
            notes.append(
                "conf_int(target='sample') gives the privacy-only interval instead: "
                + result.interval_method
            )
    elif target == "sample":
        notes.append(label + result.interval_method)
        if result.population is not None:
            notes.append(
                "These intervals do not include sampling error and do not cover the "
                "population coefficients; conf_int(target='population') does."
            )
        else:
            notes.append(
                "No population interval was released: these intervals do not include "
                "sampling error and do not cover the population coefficients. "
                + POPULATION_HINT
                + "."
            )
    else:
        notes.append(result.interval_method or "No confidence interval is released.")
    if (identification := result.identification_text(alpha)) is not None:
        notes.append(identification)
    if result.seeded:
        notes.append(
            "The noise came from a seeded generator (random_state was set): the fit is "
            "reproducible, which is fine for research but not for a real release."
        )
    if result.noise_backend == "fast":
        notes.append(
            "Noise is floating-point Gaussian from numpy, not hardened against "
            "floating-point attacks; use secure=True (OpenDP) for a hardened sampler."
        )
    notes += list(result.notes)
    notes.append(result.ledger.statement(delta))
    return notes


#: Which fits release a population interval (errors and notes of fits that did not).
POPULATION_HINT = (
    "Population intervals come from DPLinearRegression / dpfit.ols with public feature "
    "bounds (bounds=...) and from DPIVRegression / dpfit.iv with method='moments' "
    "(docs/inference.md)"
)

_TARGET_TEXT = {
    "population": "the population coefficients (sampling + privacy error)",
    "sample": "this sample's clipped-loss minimiser only (privacy error, not sampling error)",
    None: "none (no interval released)",
}


def _gap_text(population: CovarianceEstimate) -> str:
    """The released gap between the clipped fit and least squares, in standard errors."""
    gap = population.gap
    measured = float(np.max(gap.relative(population.bse)))
    far = float(np.max(gap.far_relative(population.bse)))
    beyond = (
        f"records far beyond the clip can move a coefficient by at least {far:.2g} standard errors"
        if far > 0
        else "no more records lie far beyond the clip than its noise explains"
    )
    return (
        "Clipping (released check): the gap between the clipped fit and least squares, "
        f"measured just above the clip, is at most {measured:.2g} standard errors (its noise "
        f"s.d. {float(np.max(gap.noise_se / population.bse)):.2g}); {beyond} "
        "(covariance().gap; docs/inference.md, 'Clipping bias')."
    )


def _covers_text(result: Result, target: str | None) -> str:
    """What the interval covers, in words: the fit's own wording for its population
    parameter (e.g. least squares or the Huber-type fit) when it has one."""
    if target == "population" and result.covariance("population").covers is not None:
        return result.covariance("population").covers
    return _TARGET_TEXT[target]


def _interval_text(level: str, cov: CovarianceEstimate | None) -> str:
    if cov is None:
        return "none"
    finite = cov.dof[np.isfinite(cov.dof)]
    if finite.size == 0:
        return f"{level}, normal"
    low, high = float(finite.min()), float(finite.max())
    dof = f"{low:.3g}" if low == high else f"{low:.3g} to {high:.3g}"
    tail = "" if finite.size == cov.dof.size else " (normal where infinite)"
    return f"{level}, Student-t, df = {dof}{tail}"


def _config_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
