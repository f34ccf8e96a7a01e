"""Registered data are read value by value; a file that breaks the schema is refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpfit.serve.data import DataCache, DatasetUnavailableError, file_sha256, read_dataset
from dpfit.serve.schema import parse_schema

SCHEMA = parse_schema(
    {
        "columns": {
            "x": {"type": "numeric", "bounds": [0, 10]},
            "flag": {"type": "boolean"},
            "g": {"type": "categorical", "levels": ["a", "b", 2]},
        }
    }
)


def write(path, rows: str) -> str:
    path.write_text("x,flag,g,secret\n" + rows)
    return str(path)


def test_values_are_read_one_by_one(tmp_path):
    path = write(tmp_path / "d.csv", "1.5,1,a,s1\n 20 ,true,2.0,s2\n3,FALSE,zz,s3\n4,0,,s4\n")
    frame = read_dataset(path, SCHEMA)
    assert list(frame.columns) == ["x", "flag", "g"]  # the undeclared column is never read
    assert frame["x"].tolist() == [1.5, 20.0, 3.0, 4.0]  # out of bounds is kept: dpfit clips
    assert frame["flag"].tolist() == [1.0, 1.0, 0.0, 0.0]
    # outside the levels (and missing): NaN, the zero record of the fit
    assert frame["g"].astype(object).tolist()[:2] == ["a", "2"]
    assert frame["g"].isna().tolist() == [False, False, True, True]


def test_one_record_does_not_change_how_others_are_read(tmp_path):
    base = "1,1,a,s\n2,0,b,s\n"
    plain = read_dataset(write(tmp_path / "a.csv", base + "3,0,2,s\n"), SCHEMA)
    odd = read_dataset(write(tmp_path / "b.csv", base + "3,0,text,s\n"), SCHEMA)
    assert plain.iloc[:2].equals(odd.iloc[:2])


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("1,1,a,s\nabc,0,b,s\n", "'x' (1 value(s) not finite numbers)"),
        ("1,1,a,s\n,0,b,s\n", "'x' (1 value(s) not finite numbers)"),
        ("1,1,a,s\ninf,0,b,s\n", "'x' (1 value(s) not finite numbers)"),
        ("1,yes,a,s\n2,0,b,s\n", "'flag' (1 value(s) not 0/1/true/false)"),
    ],
)
def test_registration_refuses_values_that_are_not_numbers(tmp_path, rows, message):
    with pytest.raises(ValueError) as info:
        read_dataset(write(tmp_path / "d.csv", rows), SCHEMA)
    assert message in str(info.value) and "never drops rows" in str(info.value)
    assert "abc" not in str(info.value) and "yes" not in str(info.value)  # no value quoted


def test_parquet_and_missing_columns(tmp_path):
    frame = pd.DataFrame({"x": [1.0, 2.0], "flag": [True, False], "g": ["a", "b"], "s": [1, 2]})
    frame.to_parquet(tmp_path / "d.parquet")
    read = read_dataset(tmp_path / "d.parquet", SCHEMA)
    assert read["flag"].tolist() == [1.0, 0.0]
    frame.drop(columns="g").to_csv(tmp_path / "short.csv", index=False)
    with pytest.raises(ValueError, match=r"lacks the schema's columns \['g'\]"):
        read_dataset(tmp_path / "short.csv", SCHEMA)
    with pytest.raises(ValueError, match="must end in"):
        read_dataset(tmp_path / "d.xlsx", SCHEMA)


def test_the_cache_refuses_a_file_changed_since_registration(tmp_path):
    path = write(tmp_path / "d.csv", "1,1,a,s\n2,0,b,s\n")
    cache = DataCache(capacity=1)
    sha = file_sha256(path)
    frame = cache.frame(dataset_id=1, path=path, sha256=sha, schema=SCHEMA)
    assert cache.frame(dataset_id=1, path=path, sha256=sha, schema=SCHEMA) is frame  # cached
    write(tmp_path / "d.csv", "1,1,a,s\n9,0,b,s\n")
    cache.frame(dataset_id=2, path=path, sha256=file_sha256(path), schema=SCHEMA)  # evicts 1
    with pytest.raises(DatasetUnavailableError):
        cache.frame(dataset_id=1, path=path, sha256=sha, schema=SCHEMA)
    assert np.isfinite(frame["x"]).all()
