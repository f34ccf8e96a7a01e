"""``dpfit fit`` end to end on CSV, parquet and bundled data; bad input exits with status 2."""

import numpy as np
import pandas as pd
import pytest

from dpfit.cli import main


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"x": rng.uniform(0, 10, 800), "z": rng.integers(0, 2, 800)})
    df["y"] = 1.0 + 0.4 * df["x"] - df["z"] + rng.normal(0, 1, 800)
    return df


COMMON = ["--formula", "y ~ x + z", "--rho", "0.5", "--seed", "1", "--total-steps", "300"]
BOUNDS = ["--bound", "x=0,10", "--bound", "z=0,1", "--y-bounds=-5,10"]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_fit_file(tmp_path, frame, suffix, capsys):
    path = tmp_path / f"data{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    png = tmp_path / "plot" / "coef.png"
    assert main(["fit", str(path), *COMMON, *BOUNDS, "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "DP linear regression results" in out and "No. observations:      800 (public)" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fit_same_output_for_csv_and_parquet(tmp_path, frame, capsys):
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet")
    main(["fit", str(tmp_path / "d.csv"), *COMMON, "--clip", "20", "--step-size", "0.005"])
    first = capsys.readouterr().out
    main(["fit", str(tmp_path / "d.parquet"), *COMMON, "--clip", "20", "--step-size", "0.005"])
    assert capsys.readouterr().out == first


def test_fit_bundled_dataset_formats(capsys):
    args = ["fit", "card", "--formula", "lwage ~ educ", "--rho", "0.5", "--seed", "0"]
    args += ["--bound", "educ=0,18", "--y-bounds", "4.6,8", "--total-steps", "200", "--m", "10"]
    assert main([*args, "--format", "latex"]) == 0
    assert r"\begin{tabular}" in capsys.readouterr().out
    assert main([*args, "--format", "html", "--sample", "liang2025"]) == 0
    out = capsys.readouterr().out
    assert "<table" in out and "2191 (public)" in out


def test_plot_message_goes_to_stderr_so_latex_stays_clean(tmp_path, capsys):
    png = tmp_path / "coef.png"
    args = ["fit", "card", "--formula", "lwage ~ educ", "--rho", "0.5", "--seed", "0"]
    args += ["--bound", "educ=0,18", "--y-bounds", "4.6,8", "--total-steps", "200"]
    assert main([*args, "--format", "latex", "--plot", str(png)]) == 0
    captured = capsys.readouterr()
    assert captured.out.rstrip().endswith(r"\end{table}") and "Wrote" not in captured.out
    assert f"Wrote the coefficient plot to {png}" in captured.err


def test_fit_adassp_prints_its_population_interval(capsys):
    args = ["fit", "card", "--formula", "lwage ~ educ", "--rho", "0.5", "--method", "adassp"]
    assert main([*args, "--bound", "educ=0,18", "--y-bounds", "4.6,8", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "AdaSSP" in out and "[0.025" in out
    assert "the population least-squares coefficients" in out


def test_fit_adassp_interval_none_prints_a_point_estimate(capsys):
    args = ["fit", "card", "--formula", "lwage ~ educ", "--rho", "0.5", "--method", "adassp"]
    args += ["--bound", "educ=0,18", "--y-bounds", "4.6,8", "--seed", "0", "--interval", "none"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "AdaSSP" in out and "[0.025" not in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--rho", "-1"], "rho"),
        (["--method", "magic"], "method must be one of"),
        (["--clip", "0"], "clip"),
        (
            ["--bound", "x=0,10"],
            "error: --bound: every design column needs its bounds: add --bound z=LOW,HIGH\n",
        ),
        (["--interval", "bootstrap"], "interval must be one of"),
    ],
)
def test_fit_bad_input_exits_2(tmp_path, frame, capsys, extra, message):
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    options = {"--rho": "0.5", "--clip": "5"}  # an option given twice is its own mistake
    options = {k: v for k, v in options.items() if k != extra[0]}
    args = ["fit", str(path), "--formula", "y ~ x + z", *(t for kv in options.items() for t in kv)]
    assert main([*args, *extra]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("data", ["missing.csv", "unknown_dataset", "data.txt"])
def test_fit_bad_data_argument(data, capsys):
    assert main(["fit", data, "--formula", "y ~ x", "--rho", "1", "--clip", "1"]) == 2
    assert "DATA" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "give --bound TERM=LOW,HIGH for every term and --y-bounds LOW,HIGH (or --clip"),
        (["--bound", "x=0,10", "--bound", "z=0,1"], "give --y-bounds LOW,HIGH (or --clip"),
        (
            ["--bound", "x=0,10", "--y-bounds", "0,1"],
            "every design column needs its bounds: add --bound z=LOW,HIGH\n",
        ),
        (
            [*BOUNDS, "--bound", "w=0,1"],
            "every design column needs its bounds: drop --bound for w (not a design column)",
        ),
        (["--bound", "x=0,10", "--bound", "z=0,1", "--y-bounds", "9,4"], "response y"),
        ([*BOUNDS, "--interval", "none"], "--interval none: the preconditioned fit"),
        ([*BOUNDS, "--method", "adassp", "--no-precondition"], "applies to --method gd only"),
    ],
)
def test_fit_mistakes_are_explained_in_cli_terms(tmp_path, frame, capsys, extra, message):
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    assert main(["fit", str(path), "--formula", "y ~ x + z", "--rho", "0.5", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "unknown []" not in err and "precondition=False" not in err and "column 0" not in err


def test_interval_none_with_no_precondition(tmp_path, frame, capsys):
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    args = ["fit", str(path), *COMMON, *BOUNDS, "--interval", "none", "--no-precondition"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "DP linear regression results" in out and "[0.025" not in out


def test_steps_default_is_the_librarys(capsys):
    # The CLI and dpfit.ols run the same fit: same seed, no --total-steps -> identical coefficients.
    import dpfit
    from dpfit.cli._data import read_data

    args = ["fit", "card", "--formula", "lwage ~ educ", "--rho", "0.5", "--seed", "3"]
    assert main([*args, "--bound", "educ=0,18", "--y-bounds", "4.6,8", "--format", "html"]) == 0
    out = capsys.readouterr().out
    bounds = {"educ": (0, 18)}
    lib = dpfit.ols(
        "lwage ~ educ",
        read_data("card"),
        rho=0.5,
        bounds=bounds,
        y_bounds=(4.6, 8),
        random_state=3,
        bounds_check=0.02,
    )
    assert f"{lib.params['educ']:.4f}" in out


@pytest.mark.parametrize("family", [[], ["--family", "binomial"]])
def test_dry_run_prints_the_plan_and_charges_nothing(tmp_path, frame, capsys, family):
    import dpfit

    path = tmp_path / "d.csv"
    frame.assign(b=frame["z"]).to_csv(path, index=False)
    formula = "b ~ x" if family else "y ~ x + z"
    bounds = ["--bound", "x=0,10"] if family else BOUNDS
    args = ["fit", str(path), "--formula", formula, "--rho", "0.5", *bounds, *family]
    assert main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    kw = {"bounds": {"x": (0, 10)}} if family else {"bounds": {"x": (0, 10), "z": (0, 1)},
                                                    "y_bounds": (-5, 10)}  # fmt: skip
    call = dpfit.logit if family else dpfit.ols
    plan = call(formula, pd.read_csv(path), rho=0.5, dry_run=True, **kw)
    assert out == f"{plan}\nDry run: nothing was charged or drawn.\n"
    assert "noise std" in out and "bounds-check" in out
