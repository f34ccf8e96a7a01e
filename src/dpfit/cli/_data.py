"""Reading DATA for ``dpfit fit`` and ``dpfit iv``: a CSV/parquet file or a bundled dataset.

Mistakes in the file's shape are refused with a message that says how to fix them and
quotes no value: an empty file, a header without rows, a semicolon-separated file read with
the default comma (one column whose header contains ';'), ragged rows.

pandas infers each column's dtype from all of its values; nothing here relies on it: the
formula layer reads every value on its own (``dpfit/models/_values.py``), so one record's
cell never changes how another record is read (``docs/threat-model.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["BUNDLED", "read_data"]

#: Names of the bundled datasets (``dpfit.datasets.real.DATASETS``; kept here so that
#: ``--help`` does not import pandas, and tested to agree).
BUNDLED = ("card", "diabetes", "labsup", "mroz")
_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def _read_csv(path: Path, sep: str) -> pd.DataFrame:
    import pandas as pd

    try:
        frame = pd.read_csv(path, sep=sep)
    except pd.errors.EmptyDataError:
        raise ValueError(f"DATA file {path} is empty (no header line)") from None
    except pd.errors.ParserError:
        raise ValueError(
            f"DATA file {path} could not be parsed as CSV with separator {sep!r} (rows with "
            "more fields than the header?): check the separator (--sep) and the quoting"
        ) from None
    if frame.shape[1] == 1 and sep != ";" and ";" in str(frame.columns[0]):
        raise ValueError(
            f"DATA file {path} looks semicolon-separated (its one column header contains "
            "';'): pass --sep ';'"
        )
    return frame


def read_data(spec: str, sample: str | None = None, *, sep: str = ",") -> pd.DataFrame:
    """A data frame from a CSV/parquet path or a bundled dataset name."""
    path = Path(spec)
    if path.suffix.lower() in _SUFFIXES:
        if not path.is_file():
            raise ValueError(f"DATA file not found: {spec}")
        if sample is not None:
            raise ValueError("--sample applies to bundled datasets only")
        if _SUFFIXES[path.suffix.lower()] == "csv":
            frame = _read_csv(path, sep)
        else:
            import pandas as pd

            frame = pd.read_parquet(path)
        if len(frame) == 0:
            raise ValueError(f"DATA file {path} has a header but no rows")
        return frame
    if spec in BUNDLED:
        from ..datasets.real import load_dataset

        return load_dataset(spec, **({} if sample is None else {"sample": sample}))
    raise ValueError(
        f"DATA must be a .csv or .parquet file or one of {list(BUNDLED)}, got {spec!r}"
    )
