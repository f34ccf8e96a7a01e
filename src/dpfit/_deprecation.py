"""Renamed public names: the old name works for one release, with a DeprecationWarning.

Written once so that every rename says the same thing and points at the user's own line
(:func:`dpfit._validation.user_stacklevel`), as NumPy and scikit-learn deprecate: the old
spelling keeps working and names its replacement.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from ._validation import user_stacklevel

__all__ = ["renamed_function", "renamed_keyword", "warn_renamed"]

_F = TypeVar("_F", bound=Callable[..., Any])


def warn_renamed(old: str, new: str) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` (same meaning)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in a future release; use {new} (same meaning)",
        DeprecationWarning,
        stacklevel=user_stacklevel(),
    )


def renamed_keyword(new_value: Any, old_value: Any, *, new: str, old: str) -> Any:
    """The value of keyword ``new``, or of its deprecated spelling ``old`` (with a warning).

    Both None: None. Both given: TypeError (two values for one parameter).
    """
    if old_value is None:
        return new_value
    if new_value is not None:
        raise TypeError(f"give {new} only ({old} is its deprecated name), not both")
    warn_renamed(f"the keyword {old}=", f"{new}=")
    return old_value


def renamed_function(func: _F, old: str, new: str | None = None) -> _F:
    """``func`` under its deprecated name ``old``: the same call, with a warning that names
    ``new`` (default: the function's name)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warn_renamed(old, new or func.__name__)
        return func(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = old.rpartition(".")[2]
    wrapper.__doc__ = f"Deprecated name of :func:`{func.__module__}.{func.__name__}`."
    return wrapper  # type: ignore[return-value]
