"""``dpfit check``: a public-only preflight of a formula, a codebook and a dataset's schema.

Everything here reads the codebook, the formula and the data's *schema* (column names and
dtypes, an empty frame): no value of the data, no charge, no noise. It answers the questions a
private fit would otherwise answer by refusing (before its charge, but one at a time): does
the formula parse and use only row-wise terms, does every design column and the response
have public bounds, are the levels of every categorical variable declared, and do the
codebook's types match the data's.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ._apply import apply_levels
from ._codebook import Codebook

__all__ = ["Preflight", "preflight"]


@dataclass(frozen=True)
class Preflight:
    """The outcome: what was checked and what is still wrong (empty when ready to fit)."""

    checked: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        lines = [f"ok: {line}" for line in self.checked]
        lines += [f"problem: {line}" for line in self.problems]
        verdict = "ready: nothing is missing" if self.ok else f"{len(self.problems)} problem(s)"
        return "\n".join([*lines, verdict])


def _type_problems(codebook: Codebook, schema: pd.DataFrame) -> list[str]:
    problems = []
    for name, column in codebook.columns.items():
        if name not in schema.columns:
            if not any(ch in name for ch in "()*+/ "):  # a derived term's own entry is fine
                problems.append(f"codebook column {name!r} is not a column of DATA")
            continue
        dtype = schema[name].dtype
        numeric = pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)
        if column.type == "number" and not numeric:
            problems.append(
                f"column {name!r} is a number in the codebook but DATA has dtype {dtype}: "
                "convert it publicly (e.g. numbers with thousands separators), or declare a "
                "category"
            )
    return problems


def _design(formula: str, schema: pd.DataFrame, declared: frozenset[str]) -> tuple[Any, ...]:
    """(design columns, indicator columns, response) of ``formula`` on the empty ``schema``."""
    from ..models._formula_errors import formula_errors
    from ..models.formula import _design_matrices, iv_matrices, parse_iv_formula

    with formula_errors(schema, formula):
        if "[" in formula.partition("~")[2]:
            parse_iv_formula(formula)
            mats = iv_matrices(formula, schema, declared)
            design = [*mats.exog.columns, *mats.endog.columns, *mats.instruments.columns]
            design = [c for c in dict.fromkeys(design) if c != "Intercept"]
            return design, mats.indicators, str(mats.y.name)
        y, X, _, indicators = _design_matrices(formula, schema, declared)
        return list(X.columns), indicators, str(y.name)


def _formula_checks(
    formula: str, schema: pd.DataFrame, codebook: Codebook
) -> tuple[list[str], list[str]]:
    checked, problems = [], []
    schema, declared = apply_levels(codebook, schema)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            design, indicators, response = _design(formula, schema, declared)
        except (TypeError, ValueError) as exc:
            return checked, [f"formula {formula!r}: {' '.join(str(exc).split())}"]
    problems += [" ".join(str(w.message).split()) for w in caught]
    checked.append(f"formula {formula!r} parses; design columns {design}")
    unbounded = [
        c for c in [*design, response] if c not in indicators and codebook.bounds(c) is None
    ]
    if unbounded:
        problems.append(
            f"no public bounds for {unbounded}: fill in bounds = [LOW, HIGH] in the codebook "
            "(or give them with --bound / --y-bounds)"
        )
    else:
        checked.append(f"every design column and the response {response!r} has public bounds")
    if indicators:
        checked.append(f"indicator columns {list(indicators)} have bounds [0, 1] by construction")
    return checked, problems


def preflight(schema: pd.DataFrame, codebook: Codebook, formula: str | None = None) -> Preflight:
    """Check ``codebook`` (and ``formula``) against ``schema``; reads no data value.

    Parameters
    ----------
    schema : pandas.DataFrame
        The data's columns and dtypes (an empty frame: ``frame.iloc[:0]``).
    codebook : Codebook
    formula : str, optional
        ``"y ~ x1 + x2"`` or an IV formula ``"y ~ exog + [endog ~ instruments]"``. Without
        it, every column of the data must have a filled-in codebook entry.
    """
    schema = schema.iloc[:0]
    problems = _type_problems(codebook, schema)
    checked = [f"codebook {codebook.source or '(mapping)'}: {len(codebook.columns)} column(s)"]
    if formula is not None:
        more, found = _formula_checks(formula, schema, codebook)
        return Preflight(tuple(checked + more), tuple(problems + found))
    for name in schema.columns:
        column = codebook.columns.get(str(name))
        if column is None:
            problems.append(f"column {str(name)!r} has no codebook entry")
        elif column.type == "number" and column.bounds is None:
            problems.append(f"column {str(name)!r}: bounds still to fill in")
        elif column.type == "category" and column.levels is None:
            problems.append(f"column {str(name)!r}: levels still to fill in")
    return Preflight(tuple(checked), tuple(problems))
