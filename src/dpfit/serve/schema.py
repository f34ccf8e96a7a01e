"""A dataset's public schema: the columns analysts may use, their types, bounds and levels.

The steward writes it (TOML, YAML or JSON) and registers it with the data; analysts read it,
never a value. Everything a fit needs that would otherwise be read off the data is here and
public: the bounds of every numeric column (the fit clips into them) and the levels of every
categorical one (a record with another value is the zero record). Only declared columns are
ever loaded from the data file, so an undeclared column cannot be reached by any formula.

Example (TOML)::

    privacy_unit = "person_id"     # optional: stored and shown; fits are row-level for now
    rho = 2.0                      # optional: the total budget (the command line may give it)
    delta = 1e-6                   # optional: delta of the (epsilon, delta) statements

    [columns.age]
    type = "numeric"
    bounds = [16, 90]
    description = "age in years"

    [columns.region]
    type = "categorical"
    levels = ["north", "south", "east", "west"]

    [columns.smoker]
    type = "boolean"               # values 0/1 or true/false; bounds [0, 1]

A codebook's spellings (``number``, ``category``; ``dpfit.codebook``) are accepted for
``numeric`` and ``categorical``, so one file can be both.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = [
    "COLUMN_TYPES",
    "ColumnSpec",
    "PublicSchema",
    "canonical_level",
    "parse_schema",
    "read_schema_file",
]

#: The column types a schema declares.
COLUMN_TYPES = ("numeric", "boolean", "categorical")
#: The same types as a codebook spells them (``dpfit.codebook``), so one file serves both.
_CODEBOOK_TYPES = {"number": "numeric", "category": "categorical"}
#: Column names are identifiers, so formulas name them without quoting.
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
#: Names of the functions formulas call: a column so named would shadow one.
_RESERVED = frozenset(
    {
        "np",
        "numpy",
        "C",
        "I",
        "Q",
        "log",
        "log2",
        "log10",
        "exp",
        "exp2",
        "exp10",
        "abs",
        "contr",
        "Treatment",
        "Sum",
        "Helmert",
        "Diff",
        "Poly",
        "Intercept",
        "True",
        "False",
        "None",
    }
)
_MAX_COLUMNS = 500
_MAX_LEVELS = 1000
_KEYS = frozenset({"columns", "privacy_unit", "rho", "delta", "description"})
_COLUMN_KEYS = frozenset({"type", "bounds", "levels", "description"})


def canonical_level(value: Any) -> str | None:
    """A categorical value as the text it is compared by, or None (missing).

    Numbers, and strings that read as numbers, compare as numbers, as in dpfit's formula
    layer: integral ones are written without a decimal point (``2``, ``2.0`` and ``" 2.0"``
    are one level), others with Python's shortest repr. Other strings lose surrounding
    blanks. Each value is read on its own, so one record never changes how another is read.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        text = value.strip()
        try:
            if "_" in text:  # Python reads 1_000 as a number; a data file never means it
                raise ValueError
            value = float(text)
        except ValueError:
            return text
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(number):
        return None
    if math.isfinite(number) and number == int(number):
        return str(int(number))
    return repr(number)


@dataclass(frozen=True, slots=True, kw_only=True)
class ColumnSpec:
    """One declared column: its type, public bounds (numeric, boolean) or levels (categorical)."""

    name: str
    type: str
    bounds: tuple[float, float] | None = None
    levels: tuple[str, ...] | None = None
    description: str = ""


@dataclass(frozen=True, kw_only=True)
class PublicSchema:
    """The declared columns of a dataset, and its privacy unit column if any."""

    columns: tuple[ColumnSpec, ...]
    privacy_unit: str | None = None
    description: str = ""

    def column(self, name: str) -> ColumnSpec | None:
        """The declared column ``name``, or None."""
        return next((c for c in self.columns if c.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        """The declared column names, in order."""
        return tuple(c.name for c in self.columns)

    def empty_frame(self) -> pd.DataFrame:
        """A frame with no rows and the declared dtypes: formulas are checked on it."""
        return pd.DataFrame(
            {
                c.name: pd.Series(
                    [],
                    dtype=pd.CategoricalDtype(list(c.levels))
                    if c.type == "categorical"
                    else "float64",
                )
                for c in self.columns
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """The schema as plain data (what the database stores and analysts read)."""
        columns = {}
        for c in self.columns:
            entry: dict[str, Any] = {"type": c.type}
            if c.type == "numeric":
                entry["bounds"] = list(c.bounds)
            if c.levels is not None:
                entry["levels"] = list(c.levels)
            if c.description:
                entry["description"] = c.description
            columns[c.name] = entry
        out: dict[str, Any] = {"columns": columns}
        if self.privacy_unit is not None:
            out["privacy_unit"] = self.privacy_unit
        if self.description:
            out["description"] = self.description
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())  # keeps the steward's column order


def _bounds(name: str, value: Any) -> tuple[float, float]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError(f"column {name!r}: bounds must be a pair [low, high]")
    low, high = value
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in value):
        raise ValueError(f"column {name!r}: bounds must be numbers")
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"column {name!r}: bounds must be finite with low < high")
    return low, high


def _levels(name: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not 2 <= len(value) <= _MAX_LEVELS:
        raise ValueError(f"column {name!r}: levels must be a list of 2 to {_MAX_LEVELS} values")
    levels = []
    for item in value:
        if not isinstance(item, str | int | float) or isinstance(item, bool):
            raise ValueError(f"column {name!r}: levels must be strings or numbers")
        text = canonical_level(item)
        if not text or len(text) > 64 or not text.isprintable():
            raise ValueError(f"column {name!r}: each level must be 1 to 64 printable characters")
        levels.append(text)
    if len(set(levels)) != len(levels):
        raise ValueError(f"column {name!r}: levels repeat (after removing blanks)")
    return tuple(levels)


def _column(name: Any, spec: Any) -> ColumnSpec:
    if not isinstance(name, str) or not _NAME.match(name) or name in _RESERVED:
        raise ValueError(
            f"column name {name!r} must be an identifier of at most 64 characters (letters, "
            "digits, underscores) and not a formula function's name"
        )
    if not isinstance(spec, Mapping):
        raise ValueError(f"column {name!r} must be a table with a 'type'")
    unknown = sorted(set(spec) - _COLUMN_KEYS)
    if unknown:
        raise ValueError(f"column {name!r}: unknown keys {unknown}; allowed {sorted(_COLUMN_KEYS)}")
    kind = spec.get("type")
    kind = _CODEBOOK_TYPES.get(kind, kind) if isinstance(kind, str) else kind
    if kind not in COLUMN_TYPES:
        allowed = [*COLUMN_TYPES, *_CODEBOOK_TYPES]
        raise ValueError(f"column {name!r}: type must be one of {allowed}, got {kind!r}")
    description = spec.get("description", "")
    if not isinstance(description, str) or len(description) > 500:
        raise ValueError(f"column {name!r}: description must be text of at most 500 characters")
    if kind == "categorical":
        if "bounds" in spec or "levels" not in spec:
            raise ValueError(f"column {name!r}: a categorical column has levels, not bounds")
        return ColumnSpec(
            name=name, type=kind, levels=_levels(name, spec["levels"]), description=description
        )
    if "levels" in spec:
        raise ValueError(f"column {name!r}: only a categorical column has levels")
    if kind == "boolean":
        if "bounds" in spec:
            raise ValueError(f"column {name!r}: a boolean column's bounds are [0, 1]")
        return ColumnSpec(name=name, type=kind, bounds=(0.0, 1.0), description=description)
    if "bounds" not in spec:
        raise ValueError(f"column {name!r}: a numeric column needs public bounds [low, high]")
    return ColumnSpec(
        name=name, type=kind, bounds=_bounds(name, spec["bounds"]), description=description
    )


def parse_schema(document: Any) -> PublicSchema:
    """Check a schema document (parsed TOML, YAML or JSON) and return the schema.

    Raises
    ------
    ValueError
        Naming the key or column at fault.
    """
    if not isinstance(document, Mapping):
        raise ValueError("a schema must be a table with a 'columns' table")
    unknown = sorted(set(document) - _KEYS)
    if unknown:
        raise ValueError(f"schema: unknown keys {unknown}; allowed {sorted(_KEYS)}")
    columns = document.get("columns")
    if not isinstance(columns, Mapping) or not 1 <= len(columns) <= _MAX_COLUMNS:
        raise ValueError(f"schema: 'columns' must be a table of 1 to {_MAX_COLUMNS} columns")
    specs = tuple(_column(name, spec) for name, spec in columns.items())
    unit = document.get("privacy_unit")
    if unit is not None and (not isinstance(unit, str) or not _NAME.match(unit)):
        raise ValueError("schema: privacy_unit must name a column of the data file")
    if unit is not None and unit in columns:
        raise ValueError(
            f"schema: the privacy unit {unit!r} identifies people; it cannot also be a "
            "formula column"
        )
    description = document.get("description", "")
    if not isinstance(description, str) or len(description) > 2000:
        raise ValueError("schema: description must be text of at most 2000 characters")
    return PublicSchema(columns=specs, privacy_unit=unit, description=description)


def read_schema_file(path: str | Path) -> tuple[PublicSchema, dict[str, float]]:
    """The schema in a ``.toml``, ``.yaml``/``.yml`` or ``.json`` file, and its optional
    budget keys (``rho``, ``delta``) as a dict."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise ValueError(f"schema file not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        if suffix == ".toml":
            document = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            import yaml

            document = yaml.safe_load(text)
        elif suffix == ".json":
            document = json.loads(text)
        else:
            raise ValueError(f"schema file must end in .toml, .yaml, .yml or .json: {path}")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"schema file {path} does not parse: {exc}") from None
    except Exception as exc:  # yaml.YAMLError, without importing yaml for other formats
        if type(exc).__module__.startswith("yaml"):
            raise ValueError(f"schema file {path} does not parse as YAML: {exc}") from None
        raise
    schema = parse_schema(document)
    budget = {key: document[key] for key in ("rho", "delta") if key in document}
    for key, value in budget.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"schema file {path}: {key} must be a number")
    return schema, {key: float(value) for key, value in budget.items()}
