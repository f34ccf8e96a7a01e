"""The SQLite trial store: keys, persistence, resume bookkeeping, validation."""

import math
import re
import sqlite3

import numpy as np
import pytest

from dpfit.experiments import ResultStore
from dpfit.experiments.store import canonical_params, code_version


def test_canonical_params_sorted_compact_plain():
    assert canonical_params({"b": np.int64(2), "a": [1.5, "x"]}) == '{"a":[1.5,"x"],"b":2}'


def test_code_version_is_version_plus_source_digest():
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*\+[0-9a-f]{12}", code_version())


def test_add_persist_and_load_in_key_order(tmp_path):
    path = tmp_path / "sub" / "store.sqlite"
    keys = [({"x": 2}, 0, 11), ({"x": 1}, 1, 12), ({"x": 1}, 0, 13)]
    with ResultStore(path) as store:
        for params, rep, seed in keys[::-1]:
            store.add(
                "e", params, rep, seed, {"m": params["x"] * 10 + rep}, version="v", seconds=0.5
            )
        store.add("e", {"x": 2}, 0, 11, {"m": -1.0}, version="v", seconds=0.5)  # ignored
        store.add("e", {"x": 2}, 0, 11, {"m": 99.0}, version="w", seconds=0.5)  # other version
    with ResultStore(path) as store:
        assert store.completed("e", version="v") == {
            ('{"x":2}', 0, 11),
            ('{"x":1}', 1, 12),
            ('{"x":1}', 0, 13),
        }
        df = store.results("e", [*keys, ({"x": 3}, 0, 14)], version="v")
        assert list(df.columns) == ["x", "replicate", "seed", "m"]
        assert df["m"].tolist() == [20.0, 11.0, 10.0]  # order of keys; the missing key skipped
        assert store.results("e", keys, version="w")["m"].tolist() == [99.0]
        assert store.seconds("e", keys, version="v") == pytest.approx(1.5)
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_non_finite_metrics_are_kept(tmp_path):
    with ResultStore(tmp_path / "s.sqlite") as store:
        store.add("e", {}, 0, 1, {"m": float("nan"), "i": math.inf}, version="v", seconds=0)
        row = store.results("e", [({}, 0, 1)], version="v").iloc[0]
    assert math.isnan(row["m"]) and row["i"] == math.inf


@pytest.mark.parametrize(
    "metrics, exc, match",
    [
        ([1.0], TypeError, "dict of metrics"),
        ({"m": True}, TypeError, "metric 'm'"),
        ({"m": "1"}, TypeError, "metric 'm'"),
        ({"seed": 1.0}, ValueError, "clashes"),
        ({"x": 1.0}, ValueError, "clashes"),
    ],
)
def test_bad_metrics_are_rejected_and_nothing_stored(tmp_path, metrics, exc, match):
    with ResultStore(tmp_path / "s.sqlite") as store:
        with pytest.raises(exc, match=match):
            store.add("e", {"x": 1}, 0, 1, metrics, version="v", seconds=0)
        assert store.completed("e", version="v") == set()
