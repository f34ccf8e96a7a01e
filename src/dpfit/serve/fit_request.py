"""A fit request, checked against limits and the public schema before anything is charged.

:func:`parse_request` checks the request's shape (fields, types, sizes) and
:func:`design_for` checks it against the dataset's public schema: the formula's rules
(:mod:`dpfit.serve.formula_guard`), then dpfit's own formula check on an empty frame with the
schema's dtypes (the same check ``dpfit.ols`` runs first; no data are read), then the public
bounds of every design column. Whatever fails here fails before the charge, with a message
that names the field or term; what passes is a fit the library accepts, so a fit that fails
after its charge is a fault of the service, never of the request.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from formulaic.errors import FormulaicError

from ..models._design import design_spec
from ..models.formula import parse_iv_formula
from .formula_guard import FormulaRefusedError, check_sides
from .schema import PublicSchema

__all__ = [
    "BINARY",
    "MODELS",
    "OFFSETS",
    "FitDesign",
    "FitRequest",
    "Limits",
    "RequestError",
    "design_for",
    "parse_request",
]

#: The models a request may name, each the dpfit function of that name.
MODELS = ("ols", "iv", "logit", "probit", "poisson")
#: The models whose response is 0/1 (its bounds are [0, 1]; y_bounds does not apply).
BINARY = ("logit", "probit")
_FIELDS = frozenset(
    {"dataset", "model", "formula", "rho", "bounds", "y_bounds", "exposure", "offset"}
)
#: The per-record offsets a Poisson request may name (declared numeric columns).
OFFSETS = ("exposure", "offset")
_DECORATION = re.compile(r"\x1b\[[0-9;]*m|[⧛⧚]")
_INTERCEPT = "Intercept"


class RequestError(Exception):
    """A request refused before any charge: an HTTP status, a short code and a message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Sizes the service accepts (``[limits]`` of the site's ``serve.toml``)."""

    max_formula_length: int = 1000
    max_request_bytes: int = 65536
    max_terms: int = 100


@dataclass(frozen=True, kw_only=True)
class FitRequest:
    """A request's fields, checked for type and size (not yet against the schema)."""

    dataset: str
    model: str
    formula: str
    rho: float
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    y_bounds: tuple[float, float] | None = None
    exposure: str | None = None
    offset: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The request as plain data (stored in the audit log)."""
        return {
            **{k: getattr(self, k) for k in OFFSETS if getattr(self, k) is not None},
            "dataset": self.dataset,
            "model": self.model,
            "formula": self.formula,
            "rho": self.rho,
            "bounds": {k: list(v) for k, v in self.bounds.items()},
            "y_bounds": None if self.y_bounds is None else list(self.y_bounds),
        }


@dataclass(frozen=True, kw_only=True)
class FitDesign:
    """What a checked request will fit: term names and the public bounds passed to dpfit."""

    response: str
    terms: tuple[str, ...]
    bounds: Mapping[str, tuple[float, float]]
    y_bounds: tuple[float, float]
    offsets: Mapping[str, tuple[str, tuple[float, float]]] = field(
        default_factory=lambda: MappingProxyType({})
    )


def _bad(code: str, message: str) -> RequestError:
    return RequestError(422 if code != "bad_request" else 400, code, message)


def _pair(value: Any, name: str) -> tuple[float, float]:
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or any(isinstance(v, bool) or not isinstance(v, int | float) for v in value)
    ):
        raise _bad("bad_request", f"{name} must be a pair of numbers [low, high]")
    low, high = float(value[0]), float(value[1])
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise _bad("bad_request", f"{name} must be finite with low < high")
    return low, high


def parse_request(payload: Any, limits: Limits) -> FitRequest:
    """Check a request's fields; :class:`RequestError` (400) names the first one at fault."""
    if not isinstance(payload, Mapping):
        raise _bad("bad_request", "the request body must be a JSON object")
    unknown = sorted(set(payload) - _FIELDS)
    if unknown:
        raise _bad("bad_request", f"unknown fields {unknown}; allowed {sorted(_FIELDS)}")
    dataset = payload.get("dataset")
    if not isinstance(dataset, str) or not 0 < len(dataset) <= 64:
        raise _bad("bad_request", "dataset must be a dataset's name")
    model = payload.get("model", "ols")
    if model not in MODELS:
        raise _bad("bad_request", f"model must be one of {list(MODELS)}, got {model!r}"[:200])
    formula = payload.get("formula")
    if not isinstance(formula, str) or "~" not in formula:
        raise _bad("bad_request", "formula must be text of the form 'y ~ x1 + x2'")
    if len(formula) > limits.max_formula_length:
        raise _bad(
            "bad_request",
            f"formula has {len(formula)} characters; the limit is {limits.max_formula_length}",
        )
    if not formula.replace("\n", " ").replace("\t", " ").isprintable():
        raise _bad("bad_request", "formula must be printable text")
    rho = payload.get("rho")
    if isinstance(rho, bool) or not isinstance(rho, int | float) or not math.isfinite(rho):
        raise _bad("bad_request", "rho must be a finite number > 0")
    if not rho >= 1e-12:
        raise _bad("bad_request", f"rho must be at least 1e-12, got {rho!r}")
    bounds = payload.get("bounds") or {}
    if not isinstance(bounds, Mapping) or len(bounds) > limits.max_terms:
        raise _bad("bad_request", f"bounds must map at most {limits.max_terms} terms to pairs")
    if any(not isinstance(k, str) or len(k) > 500 for k in bounds):
        raise _bad("bad_request", "bounds must be keyed by design-column names")
    y_bounds = payload.get("y_bounds")
    for name in OFFSETS:
        value = payload.get(name)
        if value is not None and (not isinstance(value, str) or not 0 < len(value) <= 200):
            raise _bad("bad_request", f"{name} must be the name of a declared numeric column")
    return FitRequest(
        dataset=dataset,
        model=model,
        formula=formula,
        rho=float(rho),
        bounds={k: _pair(v, f"bounds[{k!r}]") for k, v in bounds.items()},
        y_bounds=None if y_bounds is None else _pair(y_bounds, "y_bounds"),
        exposure=payload.get("exposure"),
        offset=payload.get("offset"),
    )


def _sides(model: str, formula: str) -> dict[str, str]:
    """The formula's sides: ``response`` and the regressor sides (IV: exog, endog, instruments)."""
    if model == "iv":
        parts = parse_iv_formula(formula)
        return {
            "response": parts.dependent,
            "exog": parts.exog,
            "endog": parts.endog,
            "instruments": parts.instruments,
        }
    lhs, rhs = formula.split("~", 1)
    if "[" in rhs and "~" in rhs:
        raise ValueError("this is an IV formula ([endog ~ instruments]): choose model 'iv'")
    return {"response": lhs, "regressors": rhs}


def _designs(model: str, formula: str, schema: PublicSchema) -> dict[str, Any]:
    meta = schema.empty_frame()
    try:
        sides = _sides(model, formula)
        if not sides["response"].strip():
            raise ValueError("the formula needs a response on the left of '~'")
        check_sides(list(sides.values()), schema)
        declared = {c.name for c in schema.columns if c.type == "categorical"}
        return {name: design_spec(side, meta, declared) for name, side in sides.items()}
    except FormulaRefusedError as exc:
        raise _bad("formula_refused", str(exc)) from None
    except FormulaicError as exc:
        text = " ".join(_DECORATION.sub("", str(exc)).split())[:300]
        raise _bad("formula_refused", f"formula error: {text}") from None
    except (TypeError, ValueError) as exc:  # dpfit's formula layer: no data in its messages
        raise _bad("formula_refused", str(exc)) from None


def _bounds(
    given: Mapping[str, tuple[float, float]],
    schema: PublicSchema,
    columns: list[str],
    indicators: set[str],
) -> dict[str, tuple[float, float]]:
    bounds, missing = {}, []
    for column in columns:
        spec = schema.column(column)
        if column in indicators:
            continue  # dpfit bounds a treatment-coded indicator by [0, 1]
        if spec is not None and spec.bounds is not None:
            if column in given:
                raise _bad("bounds", f"{column!r} has declared bounds {list(spec.bounds)}")
            bounds[column] = spec.bounds
        elif column in given:
            bounds[column] = given[column]
        else:
            missing.append(column)
    if missing:
        raise _bad(
            "bounds",
            f"design columns {missing} are not declared columns: give their public bounds "
            "in 'bounds' (a pair [low, high] each; the fit clips into them)",
        )
    unused = sorted(set(given) - set(bounds))
    if unused:
        raise _bad("bounds", f"bounds given for {unused}, which are not design columns")
    return bounds


def _response_bounds(
    model: str, response: str, given: tuple[float, float] | None, schema: PublicSchema
) -> tuple[float, float]:
    """The response's public bounds: declared or given; (0, 1) for a 0/1 response; (0, K)
    for Poisson counts."""
    spec = schema.column(response)
    declared = None if spec is None else spec.bounds
    if model in BINARY:
        if given is not None:
            raise _bad("bounds", f"y_bounds does not apply to {model}: its response is 0/1")
        if declared is not None and not (0.0 <= declared[0] and declared[1] <= 1.0):
            raise _bad(
                "bounds",
                f"{model} needs a 0/1 response: {response!r} is declared on "
                f"{list(declared)} (use e.g. 'I({response} > c) ~ ...')",
            )
        return (0.0, 1.0)
    if declared is not None:
        if given is not None:
            raise _bad("bounds", f"the response {response!r} has declared bounds")
        bounds = declared
    elif given is not None:
        bounds = given
    else:
        raise _bad(
            "bounds",
            f"the response {response!r} is not a declared numeric column: give y_bounds",
        )
    if model == "poisson" and bounds[0] != 0.0:
        raise _bad(
            "bounds",
            f"poisson needs counts bounded by [0, K]: the response {response!r} has bounds "
            f"{list(bounds)}",
        )
    return bounds


def design_for(request: FitRequest, schema: PublicSchema, limits: Limits) -> FitDesign:
    """Check ``request`` against ``schema``; :class:`RequestError` (422) says what to fix.

    The check reads public inputs only, so its outcome for a formula is cached (a repeated
    formula, the common case, is not parsed again).
    """
    bounds = tuple(sorted(request.bounds.items()))
    design = _design(request.model, request.formula, bounds, request.y_bounds, schema, limits)
    offsets = _offsets(request, schema)
    return dataclasses.replace(design, offsets=offsets) if offsets else design


def _offsets(
    request: FitRequest, schema: PublicSchema
) -> Mapping[str, tuple[str, tuple[float, float]]]:
    """A Poisson request's exposure and offset: declared numeric columns, with their public
    bounds (the fit clips into them, so every exposure is positive where the bounds are)."""
    named = {k: getattr(request, k) for k in OFFSETS if getattr(request, k) is not None}
    if named and request.model != "poisson":
        raise _bad("bad_request", f"{' and '.join(named)} apply to model 'poisson' only")
    out = {}
    for kind, column in named.items():
        spec = schema.column(column)
        if spec is None or spec.type != "numeric" or spec.bounds is None:
            raise _bad("bounds", f"{kind} {column!r} is not a declared numeric column")
        if kind == "exposure" and not spec.bounds[0] > 0.0:
            raise _bad(
                "bounds",
                f"exposure {column!r} is declared on {list(spec.bounds)}: an exposure is "
                "positive, so its declared lower bound must be above 0",
            )
        out[kind] = (column, spec.bounds)
    return MappingProxyType(out)


@functools.lru_cache(maxsize=1024)
def _design(
    model: str,
    formula: str,
    given: tuple[tuple[str, tuple[float, float]], ...],
    given_y: tuple[float, float] | None,
    schema: PublicSchema,
    limits: Limits,
) -> FitDesign:
    designs = _designs(model, formula, schema)
    lhs = designs.pop("response")
    response = [c for c in lhs.columns if c != _INTERCEPT]
    if lhs.indicators:
        raise _bad("formula_refused", "the response must be a numeric or boolean column")
    if len(response) != 1:
        raise _bad("formula_refused", "the formula must have one response")
    columns = [c for d in designs.values() for c in d.columns if c != _INTERCEPT]
    if len(columns) + 1 > limits.max_terms:
        raise _bad("formula_refused", f"the formula has more than {limits.max_terms} terms")
    indicators = {c for d in designs.values() for c in d.indicators}
    bounds = _bounds(dict(given), schema, columns, indicators)
    y_bounds = _response_bounds(model, response[0], given_y, schema)
    coefficients = [designs[k] for k in ("regressors", "exog", "endog") if k in designs]
    terms = [c for d in coefficients for c in d.columns]  # the Result's names, in its order
    return FitDesign(
        response=response[0],
        terms=tuple(terms),
        bounds=MappingProxyType(bounds),  # shared by every request of the cache: read-only
        y_bounds=y_bounds,
    )
