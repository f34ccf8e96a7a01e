"""A :class:`~dpfit.models.results.Result` as JSON and back: how a release crosses the network.

The encoding is plain JSON with tagged nodes for what JSON lacks (arrays, tuples, ordered
mappings, non-finite floats, the relation enum, the dataclasses a result is made of, its
ledger), and it rebuilds the same :class:`Result` a local fit returns: same names, estimates,
intervals, ledger, configuration and notes, hence the same ``summary()``. Decoding builds only
the types listed in :data:`TYPES`; it never imports or calls anything named by the data, so,
unlike a pickle, a document from an untrusted server can at worst fail to decode.

Floats are written with Python's shortest round-trip repr, so a decoded estimate equals the
server's bit for bit. :func:`canonical_json` (sorted keys, no spaces) is the text whose SHA-256
identifies a release. As with a pickle of a result, the non-private ``diagnostics`` are never
encoded; nor are the formula's designs behind ``predict`` on raw columns (formulaic specs, not
data): a decoded result predicts from a frame with one column per term.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..inference.clipping_bias import ClippingGap
from ..inference.diagnostics import Drift
from ..inference.iv_identification import FirstStage, ReleasedMoments
from ..inference.population import CovarianceEstimate
from ..models._result_iv import IVReleases
from ..models.glm.results import GLMMargins, GLMResult
from ..models.results import Result
from ..privacy import GaussianEntry, ParallelEntry, PrivacyLedger, Relation
from ..privacy.entries import ComposedEntry, LedgerEntry, ReservedEntry

__all__ = ["TYPES", "canonical_json", "decode_result", "encode_result", "result_sha256"]

#: The dataclasses a result is made of, by the tag name they are encoded under.
TYPES: dict[str, type] = {
    "Result": Result,
    "GLMResult": GLMResult,
    "GLMMargins": GLMMargins,
    "CovarianceEstimate": CovarianceEstimate,
    "ClippingGap": ClippingGap,
    "Drift": Drift,
    "IVReleases": IVReleases,
    "ReleasedMoments": ReleasedMoments,
    "FirstStage": FirstStage,
    "GaussianEntry": GaussianEntry,
    "ParallelEntry": ParallelEntry,
    "ComposedEntry": ComposedEntry,
    "ReservedEntry": ReservedEntry,
}
_NAMES = {cls: name for name, cls in TYPES.items()}
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _float(value: float) -> Any:
    if math.isfinite(value):
        return value
    return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}


def _result_state(result: Result) -> dict[str, Any]:
    """A result's pickled state without its formula designs (``predictors``: formulaic specs,
    code rather than data); a decoded result predicts from a frame with one column per term."""
    return {**result.__getstate__(), "predictors": ()}


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | np.integer) and not isinstance(value, np.bool_):
        return int(value)
    if isinstance(value, float | np.floating):
        return _float(float(value))
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "fiub":
            raise TypeError(f"cannot encode an array of dtype {value.dtype}")
        return {"$array": _encode(value.tolist()), "dtype": value.dtype.str}
    if isinstance(value, Relation):
        return {"$relation": value.value}
    if isinstance(value, PrivacyLedger):
        return {
            "$ledger": {
                "relation": value.relation.value,
                "entries": [_encode(e) for e in value.entries],
            }
        }
    if type(value) in _NAMES:
        state = (
            _result_state(value)
            if isinstance(value, Result)
            else {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
        )
        return {"$type": _NAMES[type(value)], "fields": {k: _encode(v) for k, v in state.items()}}
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("cannot encode a mapping with keys that are not strings")
        return {"$map": [[k, _encode(v)] for k, v in value.items()]}  # keeps the order
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    raise TypeError(f"cannot encode a {type(value).__name__} in a result")


def _ledger(document: Mapping[str, Any]) -> PrivacyLedger:
    ledger = PrivacyLedger(relation=document["relation"])
    for item in document["entries"]:
        entry = _decode(item)
        if not isinstance(entry, LedgerEntry):
            raise ValueError("a ledger entry must be one of dpfit's ledger entry types")
        ledger.charge(entry)  # no budget: recorded as it is, as Result's own snapshot does
    return ledger


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((tag, body),) = value.items()
        if tag == "$float":
            return _NONFINITE[body]
        if tag == "$relation":
            return Relation(body)
        if tag == "$ledger":
            return _ledger(body)
        if tag == "$map":
            return {str(k): _decode(v) for k, v in body}
        if tag == "$tuple":
            return tuple(_decode(v) for v in body)
    if set(value) == {"$array", "dtype"}:
        dtype = np.dtype(value["dtype"])
        if dtype.kind not in "fiub":
            raise ValueError(f"an encoded array has dtype {dtype}")
        return np.array(_decode(value["$array"]), dtype=dtype)
    if set(value) == {"$type", "fields"}:
        cls = TYPES[value["$type"]]  # KeyError: not a type a result is made of
        return cls(**{k: _decode(v) for k, v in value["fields"].items()})
    raise ValueError(f"not an encoded result node: keys {sorted(value)[:5]}")


def encode_result(result: Result) -> dict[str, Any]:
    """``result`` as a JSON-ready document (its non-private diagnostics left out)."""
    if not isinstance(result, Result):
        raise TypeError(f"result must be a dpfit Result, got {type(result).__name__}")
    return _encode(result)


def decode_result(document: Mapping[str, Any]) -> Result:
    """The :class:`Result` that :func:`encode_result` encoded.

    Raises
    ------
    ValueError
        ``document`` is not an encoded result.
    """
    try:
        result = _decode(dict(document))
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not an encoded dpfit result ({type(exc).__name__})") from None
    if not isinstance(result, Result):
        raise ValueError("not an encoded dpfit result")
    return result


def canonical_json(document: Any) -> str:
    """JSON text with sorted keys and no spaces: one text per document, hashed for identity."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=False)


def result_sha256(document: Any) -> str:
    """SHA-256 (hex) of :func:`canonical_json` of an encoded result."""
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()
