"""Run every docstring example in dpfit (STYLE 2.5: examples are seeded doctests)."""

import doctest
import importlib
import pkgutil

import pytest

import dpfit

OPTIONAL = ("torch", "dask", "opacus")  # extras that may be absent


def _modules():
    for info in pkgutil.walk_packages(dpfit.__path__, prefix="dpfit."):
        if info.name.endswith("__main__"):
            continue
        yield info.name


@pytest.mark.parametrize("name", sorted(_modules()))
def test_docstring_examples(name):
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        if any(opt in str(exc) for opt in OPTIONAL):
            pytest.skip(f"optional dependency missing for {name}: {exc}")
        raise
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
