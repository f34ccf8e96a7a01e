"""A battery of user mistakes, through the command line and the API.

Each row asserts the exit status (CLI) or the exception type (API), a one-line message that
names the culprit, no traceback, and that nothing was charged or drawn: the mechanism
recorder sees no release and a shared budget is unchanged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.cli import main
from dpfit.codebook import template
from dpfit.mechanisms import recording

N = 300


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("mistakes")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.uniform(0, 10, N), "z": rng.integers(0, 2, N)})
    frame["y"] = 1.0 + 0.4 * frame["x"] - frame["z"] + rng.normal(0, 1, N)
    frame["w"] = rng.uniform(0, 1, N)
    paths = {"good": root / "good.csv", "semi": root / "semi.csv", "header": root / "header.csv"}
    frame.to_csv(paths["good"], index=False)
    frame.to_csv(paths["semi"], index=False, sep=";")
    paths["header"].write_text("x,z,y\n")
    paths["empty"] = root / "empty.csv"
    paths["empty"].write_text("")
    text = frame.astype({"x": object})
    text.loc[7, "x"] = "n/a (refused)"
    paths["text"] = root / "text.csv"
    text.to_csv(paths["text"], index=False)
    paths["ragged"] = root / "ragged.csv"
    paths["ragged"].write_text("x,z,y\n1,0,1\n2,1,2,9\n")
    paths["file_as_dir"] = root / "good.csv" / "plot.png"
    paths["store_under_file"] = root / "good.csv" / "budget.sqlite"
    dates = frame.assign(hired=pd.Timestamp("2020-01-01") + pd.to_timedelta(frame["z"], "D"))
    paths["dates"] = root / "dates.parquet"
    dates.to_parquet(paths["dates"])
    thousands = frame.assign(x=[f"{1000 * v:,.2f}" for v in frame["x"]])
    paths["thousands"] = root / "thousands.csv"
    thousands.to_csv(paths["thousands"], index=False)
    paths["pickle"] = root / "frame.pkl"
    frame.to_pickle(paths["pickle"])
    # -- the trial of "every mistake ends in one line naming the culprit" ---------------------
    paths["spaced"] = root / "spaced.csv"
    frame.rename(columns={"y": "hourly wage"}).to_csv(paths["spaced"], index=False)
    paths["latin1"] = root / "latin1.csv"
    frame.assign(town="Bogotá").to_csv(paths["latin1"], index=False, encoding="latin-1")
    paths["tabbed"] = root / "tabbed.csv"
    frame.to_csv(paths["tabbed"], index=False, sep="\t")
    paths["csv_dates"] = root / "csv_dates.csv"
    dates.to_csv(paths["csv_dates"], index=False)  # the dates are text in a CSV
    paths["blank"] = root / "blank.csv"
    frame.assign(x=frame["x"].where(frame.index != 5)).to_csv(paths["blank"], index=False)
    paths["template"] = root / "template.toml"
    paths["template"].write_text(template(frame.iloc[:0], source="good.csv"))
    # -- a second new user's mistakes ------------------------------------------------------------
    paths["dupcols"] = root / "dupcols.csv"
    frame.set_axis(["x", "z", "y", "x"], axis=1).to_csv(paths["dupcols"], index=False)
    paths["parens"] = root / "parens.csv"
    frame.rename(columns={"x": "hours (h)"}).to_csv(paths["parens"], index=False)
    paths["store"] = root / "budget.sqlite"
    assert main(["budget", "create", str(paths["store"]), "--dataset", "good", "--rho", "1"]) == 0
    return {k: str(v) for k, v in paths.items()}


FIT = ["--formula", "y ~ x + z", "--rho", "0.5", "--total-steps", "50"]
BOUNDS = ["--bound", "x=0,10", "--bound", "z=0,1", "--y-bounds", "-5,10"]
IV = ["--formula", "y ~ x + [z ~ w]", "--rho", "0.5", "--method", "2s-gd", "--steps", "5"]

#: id -> (argv with {good}/{semi}/... file placeholders, fragments the message must contain)
CLI_MISTAKES = {
    "misspelt variable": (["fit", "{good}", "--formula", "y ~ xx + z", "--rho", "0.5"], ["xx"]),
    "misspelt: suggestion": (["fit", "{good}", "--formula", "y ~ xx", "--rho", "1"], ["'x'"]),
    "formula syntax": (["fit", "{good}", "--formula", "y ~ x +", "--rho", "0.5"], ["syntax"]),
    "formula without ~": (["fit", "{good}", "--formula", "y x", "--rho", "0.5"], ["formula"]),
    "semicolon CSV": (["fit", "{semi}", *FIT, *BOUNDS], ["semicolon", "--sep"]),
    "header-only CSV": (["fit", "{header}", *FIT, *BOUNDS], ["no rows"]),
    "empty CSV": (["fit", "{empty}", *FIT, *BOUNDS], ["empty"]),
    "ragged CSV": (["fit", "{ragged}", *FIT, *BOUNDS], ["--sep"]),
    "missing file": (["fit", "missing.csv", *FIT], ["not found"]),
    "unknown dataset": (["fit", "cardd", *FIT], ["DATA"]),
    "alpha 2": (["fit", "{good}", *FIT, *BOUNDS, "--alpha", "2"], ["--alpha"]),
    "delta 0": (["fit", "{good}", *FIT, *BOUNDS, "--delta", "0"], ["delta"]),
    "plot suffix": (["fit", "{good}", *FIT, *BOUNDS, "--plot", "out.xyz"], ["--plot"]),
    "plot under a file": (["fit", "{good}", *FIT, *BOUNDS, "--plot", "{file_as_dir}"], ["--plot"]),
    "plot without intervals": (
        ["fit", "{good}", *FIT, *BOUNDS, "--method", "ambssgd", "--plot", "p.png"],
        ["--plot"],
    ),
    "rho negative": (["fit", "{good}", *FIT, *BOUNDS, "--rho", "-1"], ["rho"]),
    "rho zero": (["fit", "{good}", *FIT, *BOUNDS, "--rho", "0"], ["rho"]),
    "rho not a number": (["fit", "{good}", *FIT, "--rho", "abc"], ["--rho"]),
    "unknown method": (["fit", "{good}", *FIT, *BOUNDS, "--method", "magic"], ["method"]),
    "clip zero": (["fit", "{good}", *FIT, *BOUNDS, "--clip", "0"], ["clip"]),
    "steps zero": (["fit", "{good}", *FIT, *BOUNDS, "--total-steps", "0"], ["steps"]),
    "unknown interval": (["fit", "{good}", *FIT, *BOUNDS, "--interval", "boot"], ["interval"]),
    "m too small": (["fit", "{good}", *FIT, *BOUNDS, "--m", "1"], ["--m"]),
    "unknown relation": (["fit", "{good}", *FIT, *BOUNDS, "--relation", "swap"], ["relation"]),
    "bound missing a term": (
        ["fit", "{good}", *FIT, "--bound", "x=0,10"],
        ["add --bound z=LOW,HIGH"],
    ),
    "bound of an unknown term": (
        ["fit", "{good}", *FIT, *BOUNDS, "--bound", "q=0,1"],
        ["drop --bound for q"],
    ),
    "bound low > high": (
        ["fit", "{good}", *FIT, "--bound", "x=10,0", "--bound", "z=0,1"],
        ["--bound x", "LOW"],
    ),
    "bound constant": (
        ["fit", "{good}", *FIT, "--bound", "x=3,3", "--bound", "z=0,1"],
        ["constant"],
    ),
    "bound malformed": (["fit", "{good}", *FIT, "--bound", "x=0"], ["--bound"]),
    "bound of the response": (["fit", "{good}", *FIT, *BOUNDS, "--bound", "y=0,1"], ["--y-bounds"]),
    "bound twice": (["fit", "{good}", *FIT, *BOUNDS, "--bound", "x=0,5"], ["twice", "x"]),
    "y-bounds malformed": (["fit", "{good}", *FIT, "--y-bounds", "5"], ["--y-bounds"]),
    "separator too long": (["fit", "{good}", *FIT, *BOUNDS, "--sep", ";;"], ["--sep"]),
    "sample of a file": (["fit", "{good}", *FIT, *BOUNDS, "--sample", "x"], ["--sample"]),
    "unknown format": (["fit", "{good}", *FIT, "--format", "pdf"], ["--format"]),
    "unknown option": (["fit", "{good}", *FIT, "--rhoo", "1"], ["--rhoo"]),
    "iv under-identified": (
        ["iv", "{good}", "--formula", "y ~ [x + z ~ w]", "--rho", "1", "--unscaled"],
        ["under-identified"],
    ),
    "iv without bounds": (["iv", "{good}", *IV], ["--bound"]),
    "iv unscaled and bounds": (["iv", "{good}", *IV, "--unscaled", "--bound", "x=0,1"], ["--"]),
    "iv formula without block": (
        ["iv", "{good}", *IV[2:], "--formula", "y ~ x", "--unscaled"],
        ["["],
    ),
    "iv response in bounds": (["iv", "{good}", *IV, "--bound", "y=0,1"], ["--y-bounds"]),
    "privacy delta 2": (["privacy", "--rho", "1", "--delta", "2"], ["delta"]),
    "privacy rho and epsilon": (["privacy", "--rho", "1", "--epsilon", "1"], ["--epsilon"]),
    "audit unknown target": (["audit", "dp_gdd", "--runs", "10"], ["dp_gdd"]),
    "no command": ([], ["COMMAND"]),
    # -- the mistakes of "Results a researcher can act on" ------------------------------------
    "rho twice": (["fit", "{good}", *FIT, *BOUNDS, "--rho", "5"], ["--rho", "given twice"]),
    "epsilon twice": (
        ["privacy", "--epsilon", "1", "--epsilon", "2", "--delta", "1e-5"],
        ["--epsilon", "twice"],
    ),
    "iv clip twice": (["iv", "{good}", *IV, "--clip", "1", "1", "--clip", "2", "2"], ["--clip"]),
    "alpha as a level": (
        ["fit", "{good}", *FIT, *BOUNDS, "--alpha", "0.95"],
        ["--alpha", "miss rate", "0.05"],
    ),
    "bounds check 0.9": (
        ["fit", "{good}", *FIT, *BOUNDS, "--bounds-check", "0.9"],
        ["--bounds-check", "0.25", "10% of rho"],
    ),
    "a date column": (
        ["fit", "{dates}", *FIT[2:], "--formula", "y ~ x + hired", "--clip", "1"],
        ["column 'hired'", "datetime64", "year"],
    ),
    "exogenous and endogenous": (
        ["iv", "{good}", *IV[2:], "--formula", "y ~ x + [x ~ w]", "--unscaled"],
        ["'x' is both exogenous", "endogenous"],
    ),
    "exogenous and an instrument": (
        ["iv", "{good}", *IV[2:], "--formula", "y ~ x + [z ~ x]", "--unscaled"],
        ["'x' is exogenous and also listed as an instrument"],
    ),
    "dot formula": (["fit", "{good}", *FIT[2:], "--formula", "y ~ ."], ["'y ~ .'", "'.'"]),
    "thousands separators": (
        ["fit", "{thousands}", *FIT, "--bound", "x=0,10000", "--bound", "z=0,1"],
        ["column 'x' holds text", "--thousands ,"],
    ),
    "budget store not creatable": (
        ["budget", "create", "{store_under_file}", "--dataset", "d", "--rho", "1"],
        ["cannot create the budget store", "budget.sqlite", "Not a directory"],
    ),
    "hanging constant": (
        ["fit", "{good}", *FIT[2:], "--formula", "y ~ I(9 ** 9 ** 9)", "--clip", "1"],
        ["'9 ** 9 ** 9'", "constant arithmetic"],
    ),
    "pickle as data": (["fit", "{pickle}", *FIT, *BOUNDS], ["pickle", "runs code"]),
    # -- "every mistake ends in one line naming the culprit" (a new user's 30 mistakes) --------
    "--bounds for --bound": (
        ["fit", "{good}", *FIT, "--bounds", "x=0,10", "--bound", "z=0,1", "--y-bounds", "-5,10"],
        ["unrecognized option --bounds", "did you mean --bound?"],
    ),
    "--epsilon on fit": (
        ["fit", "{good}", "--formula", "y ~ x + z", "--epsilon", "1", *BOUNDS],
        ["--epsilon", "takes --rho", "dpfit privacy --epsilon 1 --delta"],
    ),
    "mistyped action": (["budget", "verfy", "{good}"], ["'verfy'", "did you mean verify?"]),
    "column name with a space": (
        ["fit", "{spaced}", *FIT[2:], "--formula", "hourly wage ~ x", "--clip", "1"],
        ["`hourly` and `wage`", "backticks: `hourly wage`"],
    ),
    "latin-1 CSV": (["fit", "{latin1}", *FIT, *BOUNDS], ["not UTF-8", "--encoding cp1252"]),
    "unknown encoding": (["fit", "{good}", *FIT, *BOUNDS, "--encoding", "utf-9"], ["utf-9"]),
    "tab-separated .csv": (["fit", "{tabbed}", *FIT, *BOUNDS], ["tab-separated", "--sep '\\t'"]),
    "a date column in a CSV": (
        ["fit", "{csv_dates}", *FIT[2:], "--formula", "y ~ x + hired", "--clip", "1"],
        ["column 'hired' holds text", "dates: to a year or to days since a fixed public date"],
    ),
    "iv formula in fit": (
        ["fit", "{good}", *FIT[2:], "--formula", "y ~ x + [z ~ w]", "--clip", "1"],
        ["'[z ~ w]' is instrumental-variable syntax", "dpfit iv"],
    ),
    "unfilled codebook": (
        ["fit", "{good}", *FIT, "--codebook", "{template}"],
        ["no bounds yet for ['x', 'z', 'y']", "placeholder", "--bound TERM=LOW,HIGH"],
    ),
    "missing values": (["fit", "{blank}", *FIT, *BOUNDS], ["column 'x' has missing values"]),
    # -- a second new user's 30 mistakes (an economist's survey and Wooldridge's WAGE1) --------
    "rho inf": (
        ["fit", "{good}", *FIT[:2], "--rho", "inf", *BOUNDS],
        ["--rho", "must be a finite number, got inf"],
    ),
    "bound inf": (
        ["fit", "{good}", *FIT, "--bound", "x=0,inf", "--bound", "z=0,1"],
        ["argument --bound: x: LOW and HIGH must be finite numbers", "public range"],
    ),
    "bound nan": (
        ["fit", "{good}", *FIT, "--bound", "x=nan,10", "--bound", "z=0,1"],
        ["argument --bound: x: LOW and HIGH must be finite numbers"],
    ),
    "two columns of one name": (
        ["fit", "{dupcols}", *FIT, *BOUNDS],
        ["more than one column named ['x']", "rename them"],
    ),
    "--link without --family": (
        ["fit", "{good}", *FIT, *BOUNDS, "--link", "probit"],
        ["--link probit applies to --family binomial only", "add --family binomial"],
    ),
    "--offset on least squares": (
        ["fit", "{good}", *FIT, *BOUNDS, "--offset", "w"],
        ["--offset w applies to --family binomial or poisson", "I(y - w)"],
    ),
    "--exposure on least squares": (
        ["fit", "{good}", *FIT, *BOUNDS, "--exposure", "w"],
        ["--exposure w applies to --family poisson"],
    ),
    "--total-steps with adassp": (
        ["fit", "{good}", *FIT, *BOUNDS, "--method", "adassp"],
        ["steps does not apply to method='adassp'"],
    ),
    "--sep ';' on a comma file": (
        ["fit", "{good}", *FIT, *BOUNDS, "--sep", ";"],
        ["looks comma-separated", "drop --sep"],
    ),
    "dataset in the wrong case": (
        ["budget", "show", "{store}", "--dataset", "Good"],
        ["'Good' has no budget", "did you mean 'good'?", "second total for the same data"],
    ),
    "same data under another name": (
        ["fit", "{tabbed}", *FIT, *BOUNDS, "--sep", "\\t", "--budget-store", "{store}"],
        ["'tabbed' has no budget", "name it with --dataset", "second total"],
    ),
    "reproduce --out a file": (
        ["reproduce", "brown2024-fig1", "--scale", "smoke", "--out", "{good}"],
        ["--out", "is a file, not a folder"],
    ),
    "column name with brackets": (
        ["fit", "{parens}", *FIT[2:], "--formula", "y ~ hours (h)", "--clip", "1"],
        ["backticks: `hours (h)`"],
    ),
}


@pytest.mark.parametrize("argv, fragments", CLI_MISTAKES.values(), ids=CLI_MISTAKES.keys())
def test_cli_mistake(files, capsys, argv, fragments):
    argv = [a.format(**files) for a in argv]
    with recording() as rec:
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse's own errors
            status = exc.code
    err = capsys.readouterr().err
    assert status == 2, err
    assert len(rec) == 0, "a release was made before the error"
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("dpfit"), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_an_unknown_option_suggests_no_unrelated_one(files, capsys):
    """'--family' on dpfit iv is not a misspelling of '--sample' (both end in 'ample' once
    '--' is counted): no suggestion beats a wrong one."""
    with pytest.raises(SystemExit):
        main(["iv", files["good"], *IV, "--family", "binomial"])
    err = capsys.readouterr().err
    assert "unrecognized option --family" in err and "did you mean" not in err


def test_cli_messages_quote_no_data_value(files, capsys):
    """The text column's offending entry never appears in the message."""
    main(["fit", files["text"], *FIT, *BOUNDS])
    assert "n/a (refused)" not in capsys.readouterr().err


def test_text_in_a_numeric_column_is_refused_before_any_charge(files, capsys):
    """A text entry makes pandas read the column as text: the schema (public) then says the
    column is not numeric, and dpfit refuses it naming the column, before anything is
    charged and without quoting the entry."""
    with recording() as rec:
        status = main(["fit", files["text"], *FIT, *BOUNDS])
    err = capsys.readouterr().err
    assert status == 2 and len(rec) == 0
    assert "column 'x' holds text" in err and err.count("\n") == 1
    assert "n/a (refused)" not in err


def test_budget_verify_of_a_data_file_does_not_send_you_back_to_itself(files, capsys):
    assert main(["budget", "verify", files["good"]]) == 1
    err = capsys.readouterr().err
    assert "is not a dpfit budget store" in err and "dpfit budget create" in err
    assert "dpfit budget verify " + files["good"] not in err.partition("FAILED")[2]


def test_a_tab_given_as_backslash_t_reads_the_tab_separated_file(files, capsys):
    assert main(["fit", files["tabbed"], *FIT, *BOUNDS, "--sep", "\\t", "--seed", "0"]) == 0
    assert "y_bounds" in capsys.readouterr().out


def test_negative_y_bounds_are_accepted(files, capsys):
    argv = ["fit", files["good"], *FIT, "--bound", "x=0,10", "--bound", "z=0,1"]
    assert main([*argv, "--y-bounds", "-5,10"]) == 0
    assert "y_bounds" in capsys.readouterr().out


# -- API ---------------------------------------------------------------------------------------
RNG = np.random.default_rng(3)
FRAME = pd.DataFrame({"x": RNG.uniform(0, 10, N), "z": RNG.integers(0, 2, N).astype(float)})
FRAME["y"] = FRAME["x"] - FRAME["z"] + RNG.normal(0, 1, N)
FRAME["w"] = RNG.uniform(0, 1, N)
X2 = FRAME[["x", "z"]].to_numpy()
Y = FRAME["y"].to_numpy()
GOOD = {"bounds": {"x": (0, 10), "z": (0, 1)}, "y_bounds": (-5, 15), "steps": 40, "interval": None}
GOOD["precondition"] = False  # plain DP-GD: a point estimate, no interval


def _ols(**kw):
    return lambda budget: dpfit.ols("y ~ x + z", FRAME, budget=budget, **{"rho": 0.5, **kw})


def _lin(**kw):
    return lambda budget: dpfit.DPLinearRegression(**{"rho": 0.5, "steps": 20, **kw}).fit(
        X2, Y, budget=budget
    )


def _iv(**kw):
    params = {
        "rho": 0.5,
        "method": "2s-gd",
        "steps": 5,
        "m": 2,
        "bounds": {"x": (0, 10), "w": (0, 1)},
    }
    params["y_bounds"] = (-5, 15)
    return lambda budget: dpfit.iv("y ~ [x ~ w]", FRAME, budget=budget, **{**params, **kw})


#: id -> (call taking a budget, exception type, fragments of the message)
API_MISTAKES = {
    "ols rho negative": (_ols(rho=-1.0, **GOOD), ValueError, ["rho"]),
    "ols steps float": (_ols(**{**GOOD, "steps": 2.5}), TypeError, ["steps"]),
    "ols response in bounds": (
        _ols(bounds={"x": (0, 10), "z": (0, 1), "y": (-5, 15)}, y_bounds=None),
        ValueError,
        ["'y'"],
    ),
    "ols constant bounds": (
        _ols(bounds={"x": (3, 3), "z": (0, 1)}, y_bounds=(-5, 15)),
        ValueError,
        ["constant"],
    ),
    "ols data not a frame": (
        lambda budget: dpfit.ols("y ~ x", FRAME.to_numpy(), rho=0.5, budget=budget),
        TypeError,
        ["data"],
    ),
    "ols budget not a Budget": (
        lambda budget: dpfit.ols("y ~ x", FRAME, rho=0.5, budget=0.5, **GOOD),
        TypeError,
        ["budget"],
    ),
    "estimator diffprivlib bounds": (
        _lin(bounds=([0, 0], [10, 1]), y_bounds=(-5, 15)),
        ValueError,
        ["diffprivlib", "zip(lower, upper)"],
    ),
    "estimator (2, p) bounds": (
        lambda budget: dpfit.DPLinearRegression(
            rho=0.5, bounds=np.array([[0, 0, 0], [10, 1, 1]]), y_bounds=(-5, 15)
        ).fit(FRAME[["x", "z", "w"]].to_numpy(), Y, budget=budget),
        ValueError,
        ["diffprivlib"],
    ),
    "estimator y_bounds scalar": (_lin(y_bounds=5.0, clip=1.0), ValueError, ["y_bounds"]),
    "estimator random_state": (_lin(clip=1.0, random_state="seed"), TypeError, ["random_state"]),
    "iv response in bounds": (
        _iv(bounds={"x": (0, 10), "w": (0, 1), "y": (-5, 15)}),
        ValueError,
        ["y_bounds"],
    ),
    "iv y_bounds missing": (_iv(y_bounds=None), ValueError, ["y_bounds is required"]),
    "iv rho_split": (_iv(rho_split=1.5), ValueError, ["rho_split"]),
    "ols date column": (
        lambda budget: dpfit.ols(
            "y ~ x + d", FRAME.assign(d=pd.Timestamp("2020-01-01")), rho=0.5, budget=budget,
            **{**GOOD, "bounds": {"x": (0, 10), "d": (0, 1)}},
        ),
        TypeError,
        ["column 'd'", "datetime64", "convert it publicly"],
    ),
    "ols dot formula": (
        lambda budget: dpfit.ols("y ~ .", FRAME, rho=0.5, budget=budget, clip=1.0),
        ValueError,
        ["'y ~ .'", "not supported"],
    ),
    "ols constant that hangs": (
        lambda budget: dpfit.ols("y ~ I(x * 9 ** 9 ** 9)", FRAME, rho=0.5, budget=budget),
        ValueError,
        ["constant arithmetic"],
    ),
    "ols text column": (
        lambda budget: dpfit.ols(
            "y ~ x + z", FRAME.assign(z=FRAME["z"].map("{:,.1f}".format)), rho=0.5,
            budget=budget, **GOOD,
        ),
        TypeError,
        ["column 'z' holds text", "thousands"],
    ),
    "ols bounds_check 0.9": (_ols(bounds_check=0.9, **GOOD), ValueError, ["bounds_check"]),
    "iv variable with two roles": (
        lambda budget: dpfit.iv("y ~ x + [x ~ w]", FRAME, rho=0.5, budget=budget),
        ValueError,
        ["'x' is both exogenous"],
    ),
    # -- "every mistake ends in one line naming the culprit" (a new user's 30 mistakes) --------
    "ols formula and data swapped": (
        lambda budget: dpfit.ols(FRAME, "y ~ x + z", rho=0.5, budget=budget, **GOOD),
        TypeError,
        ["formula must be a string", "got a DataFrame", "did you swap formula and data?"],
    ),
    "iv formula and data swapped": (
        lambda budget: dpfit.iv(FRAME, "y ~ [x ~ w]", rho=0.5, budget=budget),
        TypeError,
        ["got a DataFrame", "did you swap"],
    ),
    "option given a frame": (
        _ols(**{**GOOD, "relation": FRAME}),
        ValueError,
        ["relation must be one of", "got a DataFrame"],
    ),
    "ols given an iv formula": (
        lambda budget: dpfit.ols("y ~ x + [z ~ w]", FRAME, rho=0.5, budget=budget, **GOOD),
        ValueError,
        ["'[z ~ w]' is instrumental-variable syntax", "dpfit.iv"],
    ),
    "ols missing values": (
        lambda budget: dpfit.ols(
            "y ~ x + z", FRAME.assign(x=FRAME["x"].where(FRAME.index != 3)), rho=0.5,
            budget=budget, **GOOD,
        ),
        ValueError,
        ["column 'x' has missing values"],
    ),
    "minimize both rng spellings": (
        lambda budget: dpfit.minimize(
            dpfit.losses.SquaredLoss(radius=1.0),
            (X2 / 10, Y / 20),
            rho=0.5,
            budget=budget,
            random_state=0,
            rng=0,
        ),
        TypeError,
        ["random_state"],
    ),
}


@pytest.mark.parametrize("call, exc, fragments", API_MISTAKES.values(), ids=API_MISTAKES.keys())
def test_api_mistake(call, exc, fragments):
    budget = dpfit.Budget(rho=2.0)
    with recording() as rec, pytest.raises(exc) as info:
        call(budget)
    message = str(info.value)
    assert "\n" not in message
    assert str(FRAME["x"].iloc[0])[:5] not in message  # no data value, ever
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert len(rec) == 0 and budget.spent == 0.0


def test_api_good_call_spends():
    """The battery's baseline: the same calls without the mistake do spend."""
    budget = dpfit.Budget(rho=2.0)
    _ols(random_state=0, **GOOD)(budget)
    assert budget.spent == pytest.approx(0.5)
