"""The neighbour layer: every public entry point, on D and on adversarial neighbours D'.

For each entry point of ``neighbour_registry.ENTRY_POINTS``,
:func:`dpfit.testing.check_neighbours` runs it on D and on neighbours D' (a fixed list of
worst cases per neighbour kind, then a few more drawn by Hypothesis, derandomised and
without shrinking so the layer stays fast) and asserts

* with the same seed, everything but the noised numbers is identical: the outcome (result
  type, or exception and message), the warnings, the ledger entries, the pickled state, the
  summary (text, HTML, LaTeX), intervals, epsilon, statement and repr; the privacy claim
  (total rho and epsilon) exactly;
* replaying D's mechanism outputs on D', the same mechanism calls are made, every query
  moves by at most its declared sensitivity, and every component is bit-identical;
* some neighbour moves some query by a sizeable share of its sensitivity (the neighbours
  really exercise the entry point), or, for entry points that refuse their public inputs,
  nothing is ever released.

Components of open leaks (``neighbour_known.KNOWN``) are left out here and tested by
``test_known_leaks``.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from neighbour_data import Neighbour, neighbours, worst_cases
from neighbour_known import KNOWN, ignored, reason
from neighbour_registry import ENTRY_POINTS, SEED, EntryPoint

from dpfit.noise import nu_dpftrl
from dpfit.testing import check_neighbours

#: Hypothesis explores beyond the fixed worst cases; derandomised (the suite's profile) and
#: without shrinking, so a failure is reproducible and cheap.
EXPLORE = settings(phases=(Phase.explicit, Phase.generate), deadline=None)


def _check(name: str, entry: EntryPoint, base, neighbour, label: str = "") -> tuple[int, float]:
    try:
        report = check_neighbours(
            entry.run,
            (base,),
            (neighbour.apply(base),),
            encoders=entry.encoders,
            ignore=ignored(name) + entry.ignore,
            skip=entry.skip,
            views=entry.views,
            replay_only=entry.replay_only,
        )
    except AssertionError as exc:
        raise AssertionError(f"{name}{label}, neighbour: {neighbour}\n{exc}") from None
    return report.releases, report.max_share


def _param(name: str):
    whole = [key for key, leak in KNOWN.items() if "*" in leak.components.get(name, ())]
    marks = [pytest.mark.xfail(strict=True, reason=reason(key)) for key in whole]
    if ENTRY_POINTS[name].slow:
        marks.append(pytest.mark.slow)
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [_param(name) for name in sorted(ENTRY_POINTS)])
def test_only_noised_releases_depend_on_one_record(name):
    entry = ENTRY_POINTS[name]
    if entry.needs and importlib.util.find_spec(entry.needs) is None:
        pytest.skip(f"{entry.needs} is not installed (optional extra)")
    base = entry.data(SEED % 1000)
    columns = [c for c in base.columns if base[c].dtype.kind == "f"]
    runs = [_check(name, entry, base, nb) for nb in worst_cases(entry.kinds, columns)]

    @settings(EXPLORE, max_examples=max(entry.examples, 1))
    @given(seed=st.integers(0, 2**16), neighbour=neighbours(entry.kinds, columns, len(base)))
    def explore(seed, neighbour):
        label = f" (data seed {seed})"
        runs.append(_check(name, entry, entry.data(seed), neighbour, label))

    if entry.examples:
        explore()
    releases = sum(r for r, _ in runs)
    if entry.releases:
        assert max(s for _, s in runs) > 0.2, f"{name}: no neighbour moved a query much"
    else:
        assert releases == 0, f"{name} now releases: set releases=True in its registry entry"


@pytest.mark.parametrize(
    "name, data_seed, neighbour",
    [
        ("kl_spider", 1, Neighbour("extreme-cell", 5, "x0", 1e154)),
        ("minimize kl-spider", 1, Neighbour("extreme-cell", 5, "x0", 1e154)),
        ("dp_ftrl epsilon-delta", 1, Neighbour("extreme-cell", 0, "y", -1e154)),
    ],
)
def test_the_layer_measures_what_runs(name, data_seed, neighbour):
    """No false alarms: KL-Spider's early stop (a number of iterates that follows the noisy
    releases) is compared under replay only, and dp_ftrl with (epsilon, delta) is measured
    with the encoder of the nu it selects, not nu = 0.1 (the query 'moved 1.11x')."""
    entry = ENTRY_POINTS[name]
    _check(name, entry, entry.data(data_seed), neighbour)
    if name.startswith("dp_ftrl"):
        config = entry.run(entry.data(data_seed)).config
        run_encoder = nu_dpftrl(config["nu"], steps=config["steps"]).encoder_matrix()
        np.testing.assert_array_equal(entry.encoders[0], run_encoder)
