"""Reading DATA for ``dpfit fit``, ``iv``, ``check`` and ``codebook``: a file, ``-`` or a
bundled dataset.

The file's format follows its name, as pandas reads it: ``.csv``, ``.tsv``/``.tab`` and
``.json``/``.jsonl``, each possibly compressed (``.gz``, ``.bz2``, ``.zip``, ``.xz``,
``.zst``: inferred by pandas); ``.parquet``/``.pq``, ``.feather``, ``.orc``; Stata ``.dta``;
SAS ``.sas7bdat``/``.xpt``; SPSS ``.sav`` (with pyreadstat); Excel ``.xlsx``/``.xlsm``/``.xls``
and ``.ods`` (first sheet; with openpyxl, ``pip install 'dpfit[formats]'``). ``-`` reads CSV
from standard input. A pickle is refused: unpickling a file runs code.

A Stata file's value labels are metadata (public): its labelled variables are read as
categories with the labels as declared levels, like ``pandas.read_stata`` but with levels
from the labels only (pandas adds every unlabelled value found in the data as a category,
which reads them off the data); an unlabelled value is outside the levels, so its record is
the zero record. The labels are returned as a :class:`~dpfit.codebook.Codebook`.

Mistakes in the file's shape are refused with a message that says how to fix them and quotes
no value: an empty file, a header without rows, a semicolon- or tab-separated file read with
the default comma (one column whose header contains ';' or a tab), ragged rows, a file that
is not UTF-8 (``--encoding`` reads another encoding, e.g. cp1252 from Excel on Windows).
Column types are the file's schema (``dpfit/models/_schema.py``): a column pandas reads as
text is not a number.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from ..codebook import Codebook

__all__ = ["BUNDLED", "FORMATS", "Table", "read_data", "read_table", "separator"]

#: Names of the bundled datasets (``dpfit.datasets.real.DATASETS``; kept here so that
#: ``--help`` does not import pandas, and tested to agree).
BUNDLED = ("card", "diabetes", "labsup", "mroz")
#: File suffix -> format.
FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".feather": "feather",
    ".orc": "orc",
    ".dta": "stata",
    ".sas7bdat": "sas",
    ".xpt": "sas",
    ".sav": "spss",
    ".xlsx": "excel",
    ".xlsm": "excel",
    ".xls": "excel",
    ".ods": "excel",
}
#: Compression suffixes pandas infers, for the formats read as a stream of text.
_COMPRESSED = (".gz", ".bz2", ".zip", ".xz", ".zst")
_STREAMED = ("csv", "tsv", "json", "jsonl", "stata")
_PICKLES = (".pkl", ".pickle", ".joblib")
_EXTRAS = {"excel": "openpyxl", "spss": "pyreadstat", "orc": "pyarrow", "feather": "pyarrow"}


@dataclass(frozen=True)
class Table:
    """DATA as a frame, and the levels its file declares (Stata value labels), if any."""

    frame: pd.DataFrame
    labels: Codebook | None = None


def data_format(spec: str) -> str | None:
    """The format of a DATA path from its suffixes, or None when it names none."""
    path = Path(spec)
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSED:
        kind = FORMATS.get(suffixes[-2]) if len(suffixes) > 1 else None
        return kind if kind in _STREAMED else None
    return FORMATS.get(suffixes[-1]) if suffixes else None


#: Separators a one-column header gives away, with the ``--sep`` that reads them.
_SEPARATORS = {
    ";": ("semicolon", "--sep ';'"),
    "\t": ("tab", "--sep '\\t' (or name it .tsv)"),
    ",": ("comma", "--sep ',' (the default: drop --sep)"),
}


def _read_csv(
    source: Any, sep: str, thousands: str | None, name: str, encoding: str | None = None
) -> pd.DataFrame:
    import pandas as pd

    try:
        frame = pd.read_csv(source, sep=sep, thousands=thousands, encoding=encoding)
    except pd.errors.EmptyDataError:
        raise ValueError(f"DATA {name} is empty (no header line)") from None
    except pd.errors.ParserError:
        raise ValueError(
            f"DATA {name} could not be parsed as CSV with separator {sep!r} (rows with more "
            "fields than the header?): check the separator (--sep) and the quoting"
        ) from None
    except UnicodeDecodeError:
        if encoding is not None:
            raise ValueError(f"DATA {name} is not {encoding} text: check --encoding") from None
        raise ValueError(
            f"DATA {name} is not UTF-8 text: if it was saved by Excel or Stata on Windows, "
            "rerun with --encoding cp1252 (or latin-1), or re-encode the file as UTF-8"
        ) from None
    header = str(frame.columns[0]) if frame.shape[1] == 1 else ""
    for other, (word, option) in _SEPARATORS.items():
        if sep != other and other in header:  # the header is the schema (public)
            raise ValueError(
                f"DATA {name} looks {word}-separated (its one column header contains "
                f"{other!r}): pass {option}"
            )
    if isinstance(source, Path):  # pandas renames a repeated name 'x' to 'x.1': read the header
        names = pd.read_csv(source, sep=sep, encoding=encoding, header=None, nrows=1).iloc[0]
        names = names.dropna()  # blank names are pandas' 'Unnamed: j', never repeated
        repeated = sorted({str(c) for c in names[names.duplicated()]})
        if repeated:
            raise ValueError(
                f"DATA {name} has more than one column named {repeated} (pandas would read "
                f"them as {repeated[0]}, {repeated[0]}.1, ...): rename them so that a formula "
                "can tell them apart"
            )
    return frame


def _read_stata(path: Path) -> Table:
    """A Stata file's codes, its labelled variables as categories of their labels."""
    import pandas as pd

    from ..codebook import Codebook, apply_levels

    with pd.io.stata.StataReader(path) as reader:
        frame = reader.read(convert_categoricals=False)
        sets = reader.value_labels()
        # Which label set each variable uses: the reader's parsed header (pandas keeps it
        # as _lbllist; without it, the labels are simply not used).
        names = getattr(reader, "_lbllist", [""] * frame.shape[1])
    entries = {}
    for column, label_set in zip(frame.columns, names, strict=False):
        if label_set and label_set in sets:
            codes = {int(k): str(v) for k, v in sets[label_set].items()}
            entries[str(column)] = {
                "type": "category",
                "levels": list(dict.fromkeys(codes.values())),
                "codes": codes,
            }
    if not entries:
        return Table(frame)
    labels = Codebook.from_mapping(entries, f"{path.name} (value labels)")
    frame, _ = apply_levels(labels, frame)
    return Table(frame, labels)


def _read_file(
    path: Path, kind: str, sep: str | None, thousands: str | None, encoding: str | None
) -> Table:
    import pandas as pd

    if kind in ("csv", "tsv"):
        sep = sep or ("\t" if kind == "tsv" else ",")
        return Table(_read_csv(path, sep, thousands, str(path), encoding))
    if kind == "stata":
        return _read_stata(path)
    readers = {
        "json": lambda: pd.read_json(path),
        "jsonl": lambda: pd.read_json(path, lines=True),
        "parquet": lambda: pd.read_parquet(path),
        "feather": lambda: pd.read_feather(path),
        "orc": lambda: pd.read_orc(path),
        "sas": lambda: pd.read_sas(path),
        "spss": lambda: pd.read_spss(path, convert_categoricals=False),
        "excel": lambda: pd.read_excel(path),
    }
    try:
        return Table(readers[kind]())
    except ImportError:
        package = _EXTRAS.get(kind, "an optional package")
        raise ImportError(
            f"reading {path.suffix} files needs {package}: pip install {package} (or "
            "'dpfit[formats]'), or save DATA as CSV or parquet"
        ) from None
    except MemoryError:
        raise
    except Exception as exc:  # the reader's own text may quote the file's bytes
        raise ValueError(
            f"DATA {path} could not be read as {kind} ({type(exc).__name__}; details withheld): "
            "is the file what its name says?"
        ) from None


def _check_options(kind: str, sep: str | None, thousands: str | None, encoding: str | None) -> None:
    given = {"--sep": sep, "--thousands": thousands, "--encoding": encoding}
    options = [option for option, value in given.items() if value is not None]
    if kind not in ("csv", "tsv") and options:
        raise ValueError(f"{options[0]} applies to CSV and TSV data only, not to {kind} files")
    for option, value in (("--sep", sep), ("--thousands", thousands)):
        if value is not None and len(value) != 1:
            raise ValueError(f"{option} must be one character, got {value!r}")
    if encoding is not None:
        import codecs

        try:
            codecs.lookup(encoding)
        except LookupError:
            raise ValueError(
                f"--encoding {encoding!r} is not an encoding Python knows (e.g. utf-8, cp1252, "
                "latin-1)"
            ) from None


def read_table(
    spec: str,
    sample: str | None = None,
    *,
    sep: str | None = None,
    thousands: str | None = None,
    encoding: str | None = None,
) -> Table:
    """DATA from a file (its format from its name), ``-`` (CSV on standard input) or a
    bundled dataset name; see the module docstring. ``encoding`` is the text encoding of
    CSV and TSV data (default UTF-8)."""
    path = Path(spec)
    kind = "csv" if spec == "-" else data_format(spec)
    if kind is not None and sample is not None:
        raise ValueError("--sample applies to bundled datasets only")
    if kind is not None:
        _check_options(kind, sep, thousands, encoding)
    if spec == "-":
        stdin = sys.stdin if encoding is None else getattr(sys.stdin, "buffer", sys.stdin)
        table = Table(_read_csv(stdin, sep or ",", thousands, "on standard input", encoding))
    elif kind is not None:
        if not path.is_file():
            raise ValueError(f"DATA file not found: {spec}")
        table = _read_file(path, kind, sep, thousands, encoding)
    elif spec in BUNDLED:
        if sep is not None or thousands is not None or encoding is not None:
            raise ValueError("--sep, --thousands and --encoding apply to CSV and TSV files only")
        from ..datasets.real import load_dataset

        frame = load_dataset(spec, **({} if sample is None else {"sample": sample}))
        return Table(frame)
    elif path.suffix.lower() in _PICKLES:
        raise ValueError(
            f"DATA {spec}: pickle files are refused (unpickling runs code); save the frame "
            "with to_parquet or to_csv"
        )
    else:
        known = ", ".join(sorted(FORMATS))
        raise ValueError(
            f"DATA must be a data file ({known}; CSV, TSV and JSON may be compressed, e.g. "
            f".csv.gz), '-' for CSV on standard input, or one of {list(BUNDLED)}; got {spec!r}"
        )
    if len(table.frame) == 0:
        where = "on standard input" if spec == "-" else f"file {path}"
        raise ValueError(f"DATA {where} has a header but no rows")
    return table


def read_data(
    spec: str, sample: str | None = None, *, sep: str | None = None, thousands: str | None = None
) -> pd.DataFrame:
    """The frame of :func:`read_table`."""
    return read_table(spec, sample, sep=sep, thousands=thousands).frame


def separator(text: str) -> str:
    """A ``--sep`` value: one character, or ``\\t`` / ``tab`` for a tab (a shell passes
    ``--sep '\\t'`` as a backslash and a t)."""
    return "\t" if text in ("\\t", "tab") else text
