"""Every dependency is bounded above, and the installed versions are inside the bounds.

A new release of an unbounded dependency broke the suite on fresh clones once (CLARABEL 0.11
changed a solver status): results depend on these versions, so each is bounded below the
next release that has not been tested. ``make test-newest`` runs the suite against the newest
versions the bounds allow, in a fresh environment, so the next breaking release is found
here before it reaches users; raising a bound is a commit that passed it.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _requirements() -> list[tuple[str, Requirement]]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    groups = {"core": project["dependencies"], **project["optional-dependencies"]}
    return [(group, Requirement(line)) for group, lines in groups.items() for line in lines]


REQUIREMENTS = _requirements()


@pytest.mark.parametrize(("group", "req"), REQUIREMENTS, ids=lambda r: str(r))
def test_every_dependency_has_an_upper_bound(group, req):
    uppers = [s for s in req.specifier if s.operator in ("<", "<=", "==", "~=")]
    assert uppers, f"{req} ({group}) has no upper bound: a new release could change results"


@pytest.mark.parametrize(("group", "req"), REQUIREMENTS, ids=lambda r: str(r))
def test_installed_versions_are_inside_the_bounds(group, req):
    try:
        version = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{req.name} ({group}) is not installed here")
    assert req.specifier.contains(version, prereleases=True), (
        f"{req.name} {version} is outside {req.specifier}: reinstall (make clean && make test)"
    )


def test_the_newest_allowed_versions_have_a_make_target():
    makefile = (PYPROJECT.parent / "Makefile").read_text()
    assert "test-newest:" in makefile and "--upgrade-strategy eager" in makefile
