"""Experiment definitions are checked when built, so that a bad one fails before any run."""

import dataclasses
import importlib
import pkgutil

import pytest

from dpfit.experiments import Claim, ClaimResult, get, names, register


def _claim(name):
    return Claim(name=name, statement="s", evaluate=lambda r: ClaimResult(passed=True, numbers={}))


@pytest.mark.parametrize(
    "change, match",
    [
        ({"replicates": {"smoke": 0, "quick": 1, "paper": 1}}, "replicates"),
        ({"replicates": {"smoke": True, "quick": 1, "paper": 1}}, "replicates"),
        ({"grid": {"smoke": [{"f": print}], "quick": [], "paper": []}}, "JSON"),
        ({"grid": {"smoke": [{"x": float("inf")}], "quick": [], "paper": []}}, "finite"),
        ({"grid": {"smoke": [], "quick": []}}, "lacks grid"),
        ({"claims": [_claim("a"), _claim("a")]}, "duplicate claim"),
    ],
)
def test_bad_experiment_definitions(change, match):
    with pytest.raises((TypeError, ValueError), match=match):
        dataclasses.replace(get("mechanism-check"), **change)


def test_names_are_unique():
    other = dataclasses.replace(get("mechanism-check"), description="another")
    with pytest.raises(ValueError, match="already registered"):
        register(other)
    assert register(get("mechanism-check")) is get("mechanism-check")


def test_the_catalog_imports_every_experiment_module(catalog_names):
    # Importing every public module of dpfit.experiments registers all experiments there
    # are; a fresh interpreter, which imports only the catalogue, must see the same set.
    package = importlib.import_module("dpfit.experiments")
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"dpfit.experiments.{info.name}")
    assert sorted(catalog_names) == names()
