"""Codebooks: loading and checking TOML/YAML, using them in fits, the schema-only template and
the public preflight."""

import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.codebook import Codebook, load_codebook, preflight, template
from dpfit.exceptions import UndeclaredLevelsWarning
from dpfit.mechanisms import recording

RNG = np.random.default_rng(8)
N = 2000
FRAME = pd.DataFrame(
    {
        "educ": RNG.integers(8, 19, N),
        "exper": RNG.uniform(0, 30, N),
        "region": RNG.choice(["north", "south", "west"], N),
    }
)
FRAME["wage"] = 1 + 0.1 * FRAME["educ"] + 0.02 * FRAME["exper"] + RNG.normal(0, 0.5, N)
TOML = """
[columns.educ]
type = "number"
bounds = [0, 18]

[columns.exper]
bounds = [0, 30]

[columns.wage]
bounds = [-2, 6]

[columns.region]
type = "category"
levels = ["north", "south", "west"]
"""
KW = {"rho": 1.0, "random_state": 0}


@pytest.fixture
def toml_path(tmp_path):
    path = tmp_path / "book.toml"
    path.write_text(TOML)
    return path


def _fit(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfit.exceptions.InsecureRandomnessWarning)
        warnings.simplefilter("ignore", dpfit.exceptions.CoverageWarning)
        return dpfit.ols("wage ~ educ + exper + region", FRAME, **KW, **kw)


def test_a_codebook_gives_the_same_fit_as_the_bounds_written_out(toml_path):
    by_book = _fit(codebook=toml_path)
    frame = FRAME.assign(
        region=FRAME["region"].astype(pd.CategoricalDtype(["north", "south", "west"]))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfit.PrivacyWarning)
        by_hand = dpfit.ols(
            "wage ~ educ + exper + region",
            frame,
            bounds={"educ": (0, 18), "exper": (0, 30)},
            y_bounds=(-2, 6),
            **KW,
        )
    np.testing.assert_array_equal(by_book.estimate, by_hand.estimate)
    assert list(by_book.names)[-2:] == ["region[T.south]", "region[T.west]"]


def test_declared_levels_do_not_warn(toml_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndeclaredLevelsWarning)
        _fit(codebook=toml_path)


def test_yaml_and_a_mapping_read_the_same(tmp_path, toml_path):
    pytest.importorskip("yaml")
    yaml_path = tmp_path / "book.yaml"
    yaml_path.write_text(
        "columns:\n  educ: {type: number, bounds: [0, 18]}\n  exper: {bounds: [0, 30]}\n"
        "  wage: {bounds: [-2, 6]}\n  region: {levels: [north, south, west]}\n"
    )
    assert load_codebook(yaml_path).columns == load_codebook(toml_path).columns
    mapping = {"educ": {"bounds": [0, 18]}}
    assert load_codebook(mapping).bounds("educ") == (0.0, 18.0)


def test_explicit_bounds_win_over_the_codebook(toml_path):
    res = _fit(codebook=toml_path, bounds={"educ": (0, 20)})
    assert "educ [0, 20]" in res.config["bounds"]


def test_the_codebook_must_bound_every_design_column(tmp_path):
    path = tmp_path / "b.toml"
    path.write_text("[columns.educ]\nbounds = [0, 18]\n[columns.wage]\nbounds = [-2, 6]\n")
    with (
        recording() as rec,
        pytest.raises(ValueError, match=r"no bounds for design columns \['exper'\]"),
    ):
        dpfit.ols("wage ~ educ + exper", FRAME, codebook=path, **KW)
    assert len(rec) == 0


@pytest.mark.parametrize(
    "text, exc, match",
    [
        ("[columns.x]\nbounds = [1, 0]\n", ValueError, "LOW < HIGH"),
        ("[columns.x]\nbounds = [0]\n", ValueError, r"\[LOW, HIGH\]"),
        ("[columns.x]\nbound = [0, 1]\n", ValueError, "unknown keys \\['bound'\\]"),
        ('[columns.x]\ntype = "text"\n', ValueError, "type must be one of"),
        ('[columns.x]\nlevels = ["a", "a"]\n', ValueError, "must not repeat"),
        ('[columns.x]\ntype = "number"\nlevels = ["a"]\n', ValueError, "not levels"),
        ("[columns.x\n", ValueError, "not valid TOML"),
    ],
)
def test_malformed_codebooks_are_refused_naming_the_column(tmp_path, text, exc, match):
    path = tmp_path / "b.toml"
    path.write_text(text)
    with pytest.raises(exc, match=match):
        load_codebook(path)


def test_other_codebook_mistakes(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load_codebook(tmp_path / "missing.toml")
    (tmp_path / "b.json").write_text("{}")
    with pytest.raises(ValueError, match=r"\.toml, \.yaml or \.yml"):
        load_codebook(tmp_path / "b.json")
    with pytest.raises(TypeError, match="codebook must be"):
        load_codebook(3)


def test_template_holds_names_and_types_never_values():
    frame = FRAME.assign(flag=FRAME["educ"] > 12, when=pd.Timestamp("2020-01-01"))
    text = template(frame.iloc[:0], source="survey.csv")
    book = Codebook.from_mapping(__import__("tomllib").loads(text))
    assert book.columns["educ"].type == "number" and book.columns["educ"].bounds is None
    assert book.columns["region"].type == "category" and book.columns["region"].levels is None
    assert book.columns["flag"].bounds == (0.0, 1.0)  # a bool's dtype says so
    assert "when" not in book.columns and "when: dtype datetime64" in text
    for value in ("north", "south", "18", "30"):  # no level, no maximum
        assert value not in text.replace('north", "south', "")


def test_template_is_the_same_for_any_values_of_the_same_schema():
    other = FRAME.sample(frac=1.0, random_state=1).assign(educ=0, region="zzz")
    assert template(FRAME.iloc[:0], source="d") == template(other.iloc[:0], source="d")


def test_preflight_reports_what_is_missing_without_reading_values(toml_path):
    book = load_codebook(toml_path)
    ready = preflight(FRAME, book, "wage ~ educ + exper + region")
    assert ready.ok and "ready" in str(ready)
    missing = preflight(FRAME, book, "wage ~ educ + I(exper ** 2)")
    assert not missing.ok and "I(exper ** 2)" in str(missing)
    text_col = FRAME.assign(educ=FRAME["educ"].astype(str))
    mismatch = preflight(text_col, book, "wage ~ educ")
    assert "'educ' is a number in the codebook but DATA has dtype" in str(mismatch)
    undeclared = preflight(FRAME.assign(r2=FRAME["region"].astype("category")), book, "wage ~ r2")
    assert "astype('category')" in str(undeclared)
    assert preflight(FRAME, book).ok  # no formula: every column has a filled-in entry
    assert "'extra' has no codebook entry" in str(preflight(FRAME.assign(extra=1.0), book))


def test_preflight_of_an_iv_formula(toml_path):
    book = load_codebook(toml_path)
    report = preflight(FRAME, book, "wage ~ exper + [educ ~ region]")
    assert report.ok, str(report)
