"""A codebook: the public facts a private fit needs about each column, kept in one file.

A private fit needs public bounds for every numeric column it uses and the levels of every
categorical one, chosen without looking at the data (a questionnaire's range, a legal limit,
the categories of a survey item). A codebook writes them down once, in TOML or YAML::

    [columns.educ]
    type = "number"
    bounds = [0, 18]

    [columns.region]
    type = "category"
    levels = ["north", "south", "west"]

so that ``dpfit fit DATA --codebook FILE``, ``dpfit.ols(..., codebook=FILE)`` and
``dpfit.iv(..., codebook=FILE)`` read them instead of a ``--bound`` per term, and
``dpfit check DATA --codebook FILE`` can say, before anything is charged, what is missing.
An empty ``bounds = []`` or ``levels = []`` is a placeholder still to fill in (``dpfit
codebook init`` writes them, from the data's schema only). ``dpfit serve``'s schema spellings
are accepted too (``numeric``, ``categorical``, and ``boolean`` for a number in [0, 1]), so one
file can be both.

A Stata file's value labels are the same kind of fact, stored in the file's metadata: the
reader turns them into category entries (``codes`` maps each stored code to its level).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .._validation import shown

__all__ = ["TYPES", "Codebook", "Column", "load_codebook"]

#: The column types a codebook declares.
TYPES = ("number", "category")
#: The same types as ``dpfit serve``'s schema spells them (``dpfit.serve.schema``), so one
#: file serves both: a boolean is a number in [0, 1].
_SCHEMA_TYPES = {"numeric": "number", "categorical": "category", "boolean": "number"}
_KEYS = frozenset({"type", "bounds", "levels", "codes", "description"})


@dataclass(frozen=True, kw_only=True)
class Column:
    """One column's public facts.

    Parameters
    ----------
    name : str
    type : {"number", "category"}
    bounds : (float, float) or None
        Public (low, high) of a number; None while still to fill in.
    levels : tuple or None
        Every level of a category, in order (the first is the reference level); None while
        still to fill in.
    codes : mapping, optional
        Stored code -> level (a Stata file's value labels).
    description : str, default=""
    """

    name: str
    type: str
    bounds: tuple[float, float] | None = None
    levels: tuple[Any, ...] | None = None
    codes: Mapping[Any, Any] = field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "codes", MappingProxyType(dict(self.codes)))


def _where(name: str, source: str) -> str:
    return f"codebook {source}: column {name!r}" if source else f"codebook: column {name!r}"


def _bounds(value: Any, where: str) -> tuple[float, float] | None:
    if value is None or (isinstance(value, list | tuple) and len(value) == 0):
        return None  # a placeholder
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError(f"{where}: bounds must be [LOW, HIGH], got {value!r}")
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in value):
        raise TypeError(f"{where}: bounds must be two numbers, got {value!r}")
    low, high = float(value[0]), float(value[1])
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"{where}: bounds must be finite with LOW < HIGH, got {value!r}")
    return low, high


def _levels(value: Any, where: str) -> tuple[Any, ...] | None:
    if value is None or (isinstance(value, list | tuple) and len(value) == 0):
        return None
    if not isinstance(value, list | tuple):
        raise TypeError(f"{where}: levels must be a list, e.g. ['north', 'south']")
    if any(not isinstance(v, str | int | float | bool) for v in value):
        raise TypeError(f"{where}: levels must be strings or numbers")
    if len(set(value)) != len(value):
        raise ValueError(f"{where}: levels must not repeat")
    return tuple(value)


def _column(name: str, entry: Any, source: str) -> Column:
    where = _where(name, source)
    if not isinstance(entry, Mapping):
        raise TypeError(f"{where}: expected a table of type/bounds/levels, got {entry!r}")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown} (allowed: {sorted(_KEYS)})")
    kind = entry.get("type", "category" if entry.get("levels") else "number")
    boolean = kind == "boolean"
    kind = _SCHEMA_TYPES.get(kind, kind) if isinstance(kind, str) else kind
    if kind not in TYPES:
        allowed = [*TYPES, *_SCHEMA_TYPES]
        raise ValueError(f"{where}: type must be one of {allowed}, got {shown(kind)}")
    bounds, levels = _bounds(entry.get("bounds"), where), _levels(entry.get("levels"), where)
    if boolean and bounds not in (None, (0.0, 1.0)):
        raise ValueError(f"{where}: a boolean's bounds are [0, 1]")
    bounds = (0.0, 1.0) if boolean else bounds
    if kind == "number" and levels is not None:
        raise ValueError(f"{where}: a number has bounds, not levels (or set type = 'category')")
    if kind == "category" and bounds is not None:
        raise ValueError(f"{where}: a category has levels, not bounds (or set type = 'number')")
    codes = entry.get("codes") or {}
    if not isinstance(codes, Mapping):
        raise TypeError(f"{where}: codes must map each stored code to a level")
    return Column(
        name=name,
        type=kind,
        bounds=bounds,
        levels=levels,
        codes=codes,
        description=str(entry.get("description", "")),
    )


@dataclass(frozen=True)
class Codebook:
    """Public bounds and levels of a dataset's columns (module docstring)."""

    columns: Mapping[str, Column]
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", MappingProxyType(dict(self.columns)))

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any], source: str = "") -> Codebook:
        """A codebook from ``{"columns": {name: {"type": ..., "bounds": [...]}}}`` (the
        file's layout) or from ``{name: {...}}`` directly."""
        if not isinstance(mapping, Mapping):
            raise TypeError(f"codebook {source}: expected a table of columns".replace("  ", " "))
        columns = mapping.get("columns", mapping) if "columns" in mapping else mapping
        if not isinstance(columns, Mapping):
            raise TypeError(f"codebook {source}: [columns] must be a table")
        return cls({str(k): _column(str(k), v, source) for k, v in columns.items()}, source)

    def merged(self, other: Codebook) -> Codebook:
        """This codebook with ``other``'s entries added (``other`` wins for a shared column)."""
        return Codebook({**self.columns, **other.columns}, other.source or self.source)

    def bounds(self, name: str) -> tuple[float, float] | None:
        """The public bounds of ``name``, or None (no entry, a category, or a placeholder)."""
        column = self.columns.get(name)
        return None if column is None else column.bounds

    def categories(self) -> dict[str, tuple[Any, ...]]:
        """Column -> declared levels, for every category whose levels are filled in."""
        return {
            name: column.levels
            for name, column in self.columns.items()
            if column.type == "category" and column.levels is not None
        }


def _parse(path: Path) -> Any:
    suffix = path.suffix.lower()
    text = path.read_bytes()
    if suffix == ".toml":
        import tomllib

        try:
            return tomllib.loads(text.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"codebook {path} is not valid TOML: {exc}") from None
    if suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise ImportError(
                f"codebook {path}: reading YAML needs PyYAML (pip install 'dpfit[formats]'), "
                "or write the codebook in TOML"
            ) from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            first = " ".join(str(exc).split())
            raise ValueError(f"codebook {path} is not valid YAML: {first}") from None
    raise ValueError(f"codebook {path} must end in .toml, .yaml or .yml")


def load_codebook(codebook: Any) -> Codebook:
    """A :class:`Codebook` from a path (``.toml``, ``.yaml``, ``.yml``), a mapping, or itself.

    Raises
    ------
    ValueError, TypeError
        The file is missing, not TOML/YAML, or an entry is malformed (named).
    """
    if isinstance(codebook, Codebook):
        return codebook
    if isinstance(codebook, Mapping):
        return Codebook.from_mapping(codebook)
    if isinstance(codebook, str | os.PathLike):
        path = Path(codebook)
        if not path.is_file():
            raise ValueError(f"codebook file not found: {path}")
        return Codebook.from_mapping(_parse(path) or {}, str(path))
    raise TypeError(
        f"codebook must be a path, a mapping or a dpfit.codebook.Codebook, got "
        f"{type(codebook).__name__}"
    )
