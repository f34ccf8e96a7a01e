"""Public schemas: TOML, YAML and JSON; every mistake is named."""

from __future__ import annotations

import json

import pytest

from dpfit.serve.schema import canonical_level, parse_schema, read_schema_file

GOOD = {
    "privacy_unit": "person",
    "rho": 2,
    "delta": 1e-6,
    "columns": {
        "age": {"type": "numeric", "bounds": [16, 90], "description": "years"},
        "region": {"type": "categorical", "levels": ["north", "south", 3]},
        "smoker": {"type": "boolean"},
    },
}


def test_the_three_formats_give_one_schema(tmp_path):
    import yaml

    (tmp_path / "s.json").write_text(json.dumps(GOOD))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(GOOD))
    (tmp_path / "s.toml").write_text(
        'privacy_unit = "person"\nrho = 2\ndelta = 1e-6\n'
        '[columns.age]\ntype = "numeric"\nbounds = [16, 90]\ndescription = "years"\n'
        '[columns.region]\ntype = "categorical"\nlevels = ["north", "south", 3]\n'
        '[columns.smoker]\ntype = "boolean"\n'
    )
    read = [read_schema_file(tmp_path / f"s.{ext}") for ext in ("json", "yaml", "toml")]
    assert read[0] == read[1] == read[2]
    schema, budget = read[0]
    assert budget == {"rho": 2.0, "delta": 1e-6}
    assert schema.names == ("age", "region", "smoker") and schema.privacy_unit == "person"
    assert schema.column("region").levels == ("north", "south", "3")
    assert schema.column("smoker").bounds == (0.0, 1.0)
    frame = schema.empty_frame()
    assert len(frame) == 0 and str(frame["region"].dtype) == "category"
    assert parse_schema(json.loads(schema.to_json())) == schema


def _with(column: dict) -> dict:
    return {"columns": {"c": column}}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "a table with a 'columns' table"),
        ({"columns": {}}, "1 to 500 columns"),
        ({"columns": {"c": {"type": "numeric", "bounds": [0, 1]}}, "owner": "me"}, "unknown keys"),
        (_with({"type": "text"}), "type must be one of"),
        (_with({"type": "numeric"}), "needs public bounds"),
        (_with({"type": "numeric", "bounds": [1, 0]}), "low < high"),
        (_with({"type": "numeric", "bounds": [0, float("inf")]}), "finite"),
        (_with({"type": "numeric", "bounds": [True, 2]}), "numbers"),
        (_with({"type": "categorical", "levels": ["a"]}), "2 to 1000"),
        (_with({"type": "categorical", "levels": ["a", " a "]}), "repeat"),
        (_with({"type": "categorical", "bounds": [0, 1], "levels": ["a", "b"]}), "not bounds"),
        (_with({"type": "boolean", "bounds": [0, 2]}), "[0, 1]"),
        (_with({"type": "numeric", "bounds": [0, 1], "unit": "kg"}), "unknown keys"),
        ({"columns": {"np": {"type": "boolean"}}}, "formula function"),
        ({"columns": {"x y": {"type": "boolean"}}}, "identifier"),
        ({"columns": {"id": {"type": "boolean"}}, "privacy_unit": "id"}, "cannot also be"),
    ],
)
def test_mistakes_are_named(document, message):
    with pytest.raises(ValueError, match=None) as info:
        parse_schema(document)
    assert message in str(info.value)


def test_levels_compare_as_text_value_by_value():
    assert canonical_level(2) == canonical_level(2.0) == canonical_level(" 2 ") == "2"
    assert canonical_level(2.5) == "2.5" and canonical_level(True) == "true"
    assert canonical_level(None) is None and canonical_level(float("nan")) is None


def test_file_errors(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        read_schema_file(tmp_path / "none.toml")
    (tmp_path / "s.txt").write_text("{}")
    with pytest.raises(ValueError, match="must end in"):
        read_schema_file(tmp_path / "s.txt")
    (tmp_path / "s.toml").write_text("columns = [")
    with pytest.raises(ValueError, match="does not parse"):
        read_schema_file(tmp_path / "s.toml")
