"""Any object as comparable text: :func:`describe` (what a pickle would store) and
:func:`mask_numbers` (the same text with every number hidden).

The neighbour checks of :mod:`dpfit.testing` compare these texts between runs on neighbouring
datasets, so they must be complete (every value printed, in full precision) and stable (sorted
attributes, no addresses).
"""

from __future__ import annotations

import enum
import functools
import re
import sys
import types
from collections.abc import Collection, Iterable, Mapping
from dataclasses import fields, is_dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["describe", "mask_numbers"]

#: A number that is not part of a name (``x0``, ``C(g)[T.3]`` keep their digits).
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w])")
_BLANKS = re.compile(r"[ \t]+")
_PADDED = re.compile(r"[ \t]*#[ \t]*")
_CODE = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    functools.partial,
)


def mask_numbers(text: str) -> str:
    """``text`` with every free-standing number replaced by ``#`` and runs of blanks collapsed.

    ``nan`` and ``inf`` stay visible (a non-finite release is a leak). Column widths, the
    padding NumPy puts around array entries and line breaks depend on how long the (noised)
    numbers print and on their signs, so every number is set off by exactly one blank on each
    side, and :func:`compare` also ignores whitespace after masking.

    >>> mask_numbers("coef  -1.25e+03   x0 0.5, C(g)[T.3]")
    'coef # x0 # , C(g)[T.3]'
    >>> mask_numbers("[ 1.5 ,-0.25, 3. ]") == mask_numbers("[-1.5 , 0.25,-3. ]")
    True
    """
    masked = _PADDED.sub(" # ", _NUMBER.sub("#", text))
    return _BLANKS.sub(" ", masked).strip()


def _array_text(a: np.ndarray) -> str:
    if a.dtype == object:
        body = repr(a.tolist())
    else:
        body = np.array2string(
            a, threshold=sys.maxsize, max_line_width=sys.maxsize, floatmode="unique", separator=","
        )
    return f"ndarray{a.shape}<{a.dtype}>{body}"


def describe(obj: Any, *, skip: Collection[str] = ()) -> str:
    """Everything an object holds, as indented text (what a pickle of it would store).

    Walks dataclass fields, ``__getstate__``/``__dict__``/slots, mappings and sequences;
    arrays and frames print every value. Attributes named in ``skip``, as ``"name"`` or
    ``"TypeName.name"``, are left out (e.g. ``"Trajectory.diagnostics"``, the documented
    NON-PRIVATE field of :class:`~dpfit.algorithms.Trajectory`).
    """
    lines: list[str] = []
    _walk(obj, "", lines, set(), frozenset(skip), 0)
    return "\n".join(lines)


def _state(obj: Any) -> Iterable[tuple[str, Any]]:
    if is_dataclass(obj) and not isinstance(obj, type):
        return [(f.name, getattr(obj, f.name, "<unset>")) for f in fields(obj)]
    state = obj.__getstate__() if hasattr(obj, "__getstate__") else getattr(obj, "__dict__", {})
    if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
        merged = dict(state[0] or {})
        merged.update(state[1] or {})
        state = merged
    if isinstance(state, Mapping):
        return sorted(state.items(), key=lambda kv: str(kv[0]))
    return [("state", state)]


def _walk(obj: Any, pad: str, out: list[str], seen: set[int], skip: frozenset, depth: int) -> None:
    if depth > 12:
        out.append(f"{pad}<depth limit> {type(obj).__name__}")
        return
    if obj is None or isinstance(obj, bool | int | float | complex | str | bytes | Fraction):
        out.append(pad + repr(obj))
    elif isinstance(obj, enum.Enum | np.generic | np.dtype | type):
        out.append(pad + repr(obj))
    elif isinstance(obj, np.ndarray):
        out.append(pad + _array_text(obj))
    elif isinstance(obj, pd.DataFrame | pd.Series | pd.Index):
        frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
        out.append(f"{pad}{type(obj).__name__}{obj.shape} index={list(obj.index)!r}")
        if isinstance(frame, pd.DataFrame):
            for name in frame.columns:
                out.append(f"{pad}  {name!r}: {_array_text(frame[name].to_numpy())}")
    elif isinstance(obj, _CODE):
        out.append(f"{pad}<{type(obj).__name__} {getattr(obj, '__qualname__', '')}>")
    elif id(obj) in seen:
        out.append(f"{pad}<cycle {type(obj).__name__}>")
    elif hasattr(obj, "detach") and hasattr(obj, "numpy"):  # a torch tensor
        out.append(pad + _array_text(obj.detach().cpu().numpy()))
    else:
        seen = seen | {id(obj)}
        if isinstance(obj, Mapping):
            items: Iterable[tuple[str, Any]] = ((repr(k), v) for k, v in obj.items())
            out.append(f"{pad}{type(obj).__name__}:")
        elif isinstance(obj, list | tuple | set | frozenset):
            seq = sorted(obj, key=repr) if isinstance(obj, set | frozenset) else obj
            items = ((f"[{i}]", v) for i, v in enumerate(seq))
            out.append(f"{pad}{type(obj).__name__}[{len(obj)}]:")
        else:
            kind = type(obj).__name__
            items = (
                (str(k), v)
                for k, v in _state(obj)
                if str(k) not in skip and f"{kind}.{k}" not in skip
            )
            out.append(f"{pad}{type(obj).__module__}.{type(obj).__qualname__}:")
        for key, value in items:
            out.append(f"{pad}  {key} =")
            _walk(value, pad + "    ", out, seen, skip, depth + 1)
