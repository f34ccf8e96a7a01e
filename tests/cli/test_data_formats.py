"""DATA in the formats pandas reads, standard input, a codebook from the command line, and the
two public-only commands (codebook init, check)."""

import io
import sys

import numpy as np
import pandas as pd
import pytest

from dpfit.cli import main
from dpfit.cli._data import FORMATS, data_format, read_table
from dpfit.mechanisms import recording

RNG = np.random.default_rng(2)
N = 400
FRAME = pd.DataFrame({"x": RNG.uniform(0, 10, N), "z": RNG.integers(0, 2, N)})
FRAME["y"] = 1.0 + 0.4 * FRAME["x"] - FRAME["z"] + RNG.normal(0, 1, N)
FIT = ["--formula", "y ~ x + z", "--rho", "0.5", "--total-steps", "50", "--seed", "0"]
BOUNDS = ["--bound", "x=0,10", "--bound", "z=0,1", "--y-bounds", "-5,10"]


def _table_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("x "))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("ref") / "d.csv"
    FRAME.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    "name, write",
    [
        ("d.csv.gz", lambda f, p: f.to_csv(p, index=False)),
        ("d.csv.bz2", lambda f, p: f.to_csv(p, index=False)),
        ("d.tsv", lambda f, p: f.to_csv(p, index=False, sep="\t")),
        ("d.tsv.xz", lambda f, p: f.to_csv(p, index=False, sep="\t")),
        ("d.parquet", lambda f, p: f.to_parquet(p)),
        ("d.feather", lambda f, p: f.to_feather(p)),
        ("d.json", lambda f, p: f.to_json(p)),
        ("d.jsonl", lambda f, p: f.to_json(p, orient="records", lines=True)),
        ("d.dta", lambda f, p: f.to_stata(p, write_index=False)),
    ],
)
def test_every_format_gives_the_csv_fit(tmp_path, capsys, reference, name, write):
    write(FRAME, tmp_path / name)
    assert main(["fit", str(reference), *FIT, *BOUNDS]) == 0
    expected = _table_line(capsys.readouterr().out)
    assert main(["fit", str(tmp_path / name), *FIT, *BOUNDS]) == 0
    assert _table_line(capsys.readouterr().out) == expected


def test_standard_input_is_read_as_csv(monkeypatch, capsys, reference):
    assert main(["fit", str(reference), *FIT, *BOUNDS]) == 0
    expected = _table_line(capsys.readouterr().out)
    monkeypatch.setattr(sys, "stdin", io.StringIO(FRAME.to_csv(index=False)))
    assert main(["fit", "-", *FIT, *BOUNDS]) == 0
    assert _table_line(capsys.readouterr().out) == expected


def test_thousands_separators_are_read_with_thousands(tmp_path, capsys):
    text = FRAME.assign(x=[f"{v * 1000:,.2f}" for v in FRAME["x"]])
    path = tmp_path / "t.csv"
    text.to_csv(path, index=False)
    argv = [
        "fit",
        str(path),
        *FIT,
        "--bound",
        "x=0,10000",
        "--bound",
        "z=0,1",
        "--y-bounds",
        "-5,10",
    ]
    with recording() as rec:
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(rec) == 0 and "column 'x' holds text" in err and "--thousands ," in err
    assert main([*argv, "--thousands", ","]) == 0


def test_stata_value_labels_become_declared_levels(tmp_path, capsys):
    coded = FRAME.assign(region=RNG.integers(1, 4, N).astype("int8"))
    path = tmp_path / "d.dta"
    coded.to_stata(
        path, write_index=False, value_labels={"region": {1: "north", 2: "south", 3: "west"}}
    )
    table = read_table(str(path))
    assert list(table.frame["region"].cat.categories) == ["north", "south", "west"]
    assert (table.frame["region"].cat.codes + 1 == coded["region"]).all()
    fit = ["--formula", "y ~ x + region", *FIT[2:]]
    assert main(["fit", str(path), *fit, "--bound", "x=0,10", "--y-bounds", "-5,10"]) == 0
    out = capsys.readouterr()
    assert "region[T.west]" in out.out and "UndeclaredLevels" not in out.err


def test_excel_needs_openpyxl_or_reads(tmp_path, capsys):
    path = tmp_path / "d.xlsx"
    try:
        import openpyxl  # noqa: F401
    except ImportError:
        import zipfile

        with zipfile.ZipFile(path, "w") as archive:  # what pandas looks for in an .xlsx
            archive.writestr("xl/workbook.xml", "<workbook/>")
        assert main(["fit", str(path), *FIT, *BOUNDS]) == 2
        assert "openpyxl" in capsys.readouterr().err
    else:
        FRAME.to_excel(path, index=False)
        assert main(["fit", str(path), *FIT, *BOUNDS]) == 0


def test_format_table_and_compression():
    assert data_format("a.csv.gz") == "csv" and data_format("a.TSV") == "tsv"
    assert data_format("a.parquet.gz") is None  # only text formats are streamed compressed
    assert data_format("a.dta") == "stata" and ".xlsx" in FORMATS


def test_codebook_init_then_check_then_fit(tmp_path, capsys, reference):
    book = tmp_path / "d.toml"
    assert main(["codebook", "init", str(reference), "--output", str(book)]) == 0
    text = book.read_text()
    assert "bounds = []" in text and str(round(FRAME["x"].max(), 3))[:4] not in text
    assert main(["check", str(reference), "--codebook", str(book), "--formula", "y ~ x"]) == 1
    assert "no public bounds for ['x', 'y']" in capsys.readouterr().out
    entries = {"x": "[0, 10]", "z": "[0, 1]", "y": "[-5, 10]"}
    book.write_text("".join(f"[columns.{k}]\nbounds = {v}\n" for k, v in entries.items()))
    assert main(["check", str(reference), "--codebook", str(book), "--formula", "y ~ x + z"]) == 0
    with recording() as rec:
        assert main(["fit", str(reference), *FIT, *BOUNDS]) == 0
        expected = _table_line(capsys.readouterr().out)
        assert main(["fit", str(reference), *FIT, "--codebook", str(book)]) == 0
    assert _table_line(capsys.readouterr().out) == expected and len(rec) > 0


def test_check_charges_nothing(tmp_path, capsys, reference):
    book = tmp_path / "d.toml"
    book.write_text("[columns.x]\nbounds = [0, 10]\n")
    with recording() as rec:
        main(["check", str(reference), "--codebook", str(book), "--formula", "y ~ x"])
    assert len(rec) == 0
