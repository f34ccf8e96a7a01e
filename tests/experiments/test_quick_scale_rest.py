"""Every registered experiment's claims are asserted at quick scale by some slow test.

The papers' experiments are run by their own slow tests (``test_<paper>.py``, the two
inference-coverage studies and mechanism-check by theirs); the experiments below have no
such test and are run here. A fast test checks that the two lists cover the catalogue, so a
new experiment without a quick-scale test fails it.
"""

import pytest

from dpfit.experiments import get, run
from dpfit.experiments.verdicts import evaluate_claims

#: Experiments whose quick-scale claims are asserted by the test of their paper or study.
OWN_TEST_PREFIXES = ("brown2024-", "choquettechoo2024-", "liang2025-", "menart2024-")
OWN_TEST_PREFIXES += ("varshney2022-",)
OWN_TEST_NAMES = ("mechanism-check", "inference-coverage", "inference-coverage-iv")
OWN_TEST_NAMES += ("realdata-coverage", "weak-iv-coverage", "glm-coverage", "glm-bootstrap")
OWN_TEST_NAMES += ("cluster-coverage",)
#: Experiments asserted at quick scale here.
REST = (
    "inference-coverage-diagnostics",
    "inference-coverage-extremes",
    "inference-coverage-rho-ends",
    "inference-coverage-review",
    "friendlycore-2sls",
)


def test_every_experiment_has_a_quick_scale_test(catalog_names):
    missing = [
        n
        for n in catalog_names
        if not n.startswith(OWN_TEST_PREFIXES) and n not in OWN_TEST_NAMES + REST
    ]
    assert not missing, f"no slow test asserts these experiments' claims: {missing}"
    assert set(REST) <= set(catalog_names)


@pytest.mark.slow
@pytest.mark.parametrize("name", REST)
def test_quick_scale_claims_hold(tmp_path, name):
    exp = get(name)
    result = run([name], scale="quick", store_path=tmp_path / "s.sqlite", jobs=2, progress=False)
    verdicts = evaluate_claims(exp, result.results[name], "quick")
    for v in verdicts:
        print(name, v.claim, v.status, dict(v.numbers))
    assert verdicts and not any(v.failed for v in verdicts), [v.detail for v in verdicts]
