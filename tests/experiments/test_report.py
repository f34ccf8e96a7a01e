"""The report: every claim shown with its verdict and numbers; failures never hidden."""

import dataclasses
import re

import pytest

from dpfit.experiments import run, write_report


@pytest.fixture
def report(tmp_path, harness):
    result = run(
        ["mechanism-check", harness.FAILING],
        scale="smoke",
        store_path=tmp_path / "s.sqlite",
        jobs=1,
        progress=False,
    )
    return write_report(result, tmp_path / "out")


def test_verdicts_pass_fail_error_and_not_evaluated(report):
    got = {(v.experiment, v.claim): v.status for v in report.verdicts}
    assert got == {
        ("mechanism-check", "variance"): "PASS",
        ("mechanism-check", "ledger"): "PASS",
        ("harness-failing", "positive"): "PASS",
        ("harness-failing", "asserted-deviation"): "DEVIATION",
        ("harness-failing", "impossible"): "FAIL",
        ("harness-failing", "broken"): "ERROR",
        ("harness-failing", "paper-only"): "NOT EVALUATED",
    }
    assert report.failed and not report.plot_errors


def test_html_shows_failures_numbers_figures_privacy_and_provenance(report):
    html = report.html.read_text()
    rows = re.findall(r'<tr class="claim ([a-z-]+)">', html)
    # each claim twice: in the summary table and in its experiment's section
    assert sorted(rows) == sorted(
        2 * ["pass", "pass", "pass", "deviation", "fail", "error", "not-evaluated"]
    )
    assert "2 claim(s) FAILED" in html
    assert "not evaluated at this scale" in html
    assert "deviation (asserted)" in html and "Fig. 0: the mean is negative (-1)." in html
    assert "mean of double <b>3</b>" in html and "threshold <b>1000000</b>" in html
    assert "RuntimeError: this claim is broken on purpose" in html
    imgs = re.findall(r'<img src="([^"]+)"', html)
    assert imgs == ["figures/mechanism-check-1.png", "figures/harness-failing-1.png"]
    for img in imgs:
        assert (report.html.parent / img).read_bytes()[:4] == b"\x89PNG"
    assert "One Gaussian release per trial" in html  # privacy parameters
    for field in ("code version", "run time (wall)", "scale", "git commit"):
        assert field in html
    assert 'href="data/mechanism-check.csv"' in html
    assert (report.html.parent / "data" / "harness-failing.csv").read_text().count("\n") == 5


def test_markdown_summary_lists_every_verdict(report):
    md = report.markdown.read_text()
    assert (
        "| harness-failing | impossible | **FAIL** | mean of double = 3; threshold = 1000000 |"
        in md
    )
    assert "| harness-failing | broken | **ERROR** |" in md
    assert "| harness-failing | paper-only | **not evaluated at this scale** |" in md
    assert "| mechanism-check | variance | **PASS** |" in md
    assert (
        "| harness-failing | asserted-deviation | **deviation (asserted)** | mean of double = 3 "
        "| Fig. 0: the mean is negative (-1). |" in md
    )
    assert "Claims: 3 PASS, 1 DEVIATION, 1 FAIL, 1 ERROR, 1 NOT EVALUATED" in md


def test_plot_error_is_reported(tmp_path, harness):
    def plot(results):
        raise ValueError("no axes today")

    exp = dataclasses.replace(harness.FAILING, claims=[], plot=plot)
    result = run(exp, scale="smoke", store_path=tmp_path / "s.sqlite", jobs=1, progress=False)
    rep = write_report(result, tmp_path / "out")
    assert rep.failed and rep.plot_errors == {"harness-failing": "ValueError: no axes today"}
    assert "PLOT ERROR: ValueError: no axes today" in rep.html.read_text()
    assert "PLOT ERROR" in rep.markdown.read_text()


def test_html_escapes_experiment_text(tmp_path, harness):
    exp = dataclasses.replace(harness.FAILING, description="<script>alert(1)</script>")
    result = run(exp, scale="smoke", store_path=tmp_path / "s.sqlite", jobs=1, progress=False)
    html = write_report(result, tmp_path / "out").html.read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_banner_says_when_nothing_was_checked():
    """A run whose claims were all not evaluated must not show a green 'passed' banner."""
    from dpfit.experiments._html import page
    from dpfit.experiments.verdicts import Verdict

    def verdicts(*statuses):
        return [
            Verdict(experiment="e", claim=f"c{k}", statement="s", status=s)
            for k, s in enumerate(statuses)
        ]

    none = page([], verdicts("NOT EVALUATED", "NOT EVALUATED"), [])
    assert 'class="banner none"' in none and "No claim was evaluated" in none
    assert 'class="banner ok"' not in none
    ok = page([], verdicts("PASS", "NOT EVALUATED"), [])
    assert 'class="banner ok"' in ok and "All 1 evaluated claim(s) passed" in ok
    bad = page([], verdicts("PASS", "ERROR"), [])
    assert 'class="banner bad"' in bad and "1 claim(s) FAILED" in bad


@pytest.mark.parametrize("statuses", [("DEVIATION",), ("PASS", "DEVIATION", "NOT EVALUATED")])
def test_banner_never_says_all_passed_when_a_deviation_is_asserted(statuses):
    from dpfit.experiments._html import page
    from dpfit.experiments.verdicts import Verdict

    verdicts = [
        Verdict(experiment="e", claim=f"c{k}", statement="s", status=s)
        for k, s in enumerate(statuses)
    ]
    html = page([], verdicts, [])
    assert 'class="banner deviation"' in html and 'class="banner ok"' not in html
    assert "passed" not in html.split("</p>")[0]
    assert "1 assert a deviation from the paper" in html
    assert verdicts[list(statuses).index("DEVIATION")].label == "deviation (asserted)"
    assert not any(v.failed for v in verdicts)


def test_results_and_numbers_are_compact():
    """Constant columns are stated once, numbered metric series are left to the CSV (not
    parameters), NaN shows as a dash, "X" and "X se" fold into one value, and numbers labelled
    "<group>: <label>" become a small table."""
    import pandas as pd

    from dpfit.experiments._html import _numbers, results_table
    from dpfit.experiments.verdicts import Verdict

    table = pd.DataFrame(
        {
            "rho": [0.1, 1.0],
            **{f"name_{k}": [1.0, 1.0] for k in range(6)},  # parameters: kept
            "steps": [15, 15],
            "trials": [3, 3],
            "beta_T": [0.07, float("nan")],
            **{f"beta_{k}": [0.1, 0.2] for k in range(1, 16)},
        }
    )
    html = results_table(table)
    assert "In every row:" in html and "steps <b>15</b>" in html
    assert "In the CSV only: beta_1 \u2026 beta_15" in html and "<th>beta_3</th>" not in html
    assert "<th>rho</th>" in html and "\u2014" in html
    v = Verdict(
        experiment="e",
        claim="c",
        statement="s",
        status="PASS",
        numbers={"a: median": 1.0, "a: median se": 0.1, "b: median": 2.0, "lone": 3.0},
    )
    rendered = _numbers(v)
    assert '<table class="numtable">' in rendered and "1 \u00b1 0.1" in rendered
    assert "<th>a</th>" in rendered and "lone <b>3</b>" in rendered
