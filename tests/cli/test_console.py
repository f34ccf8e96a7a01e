"""The command line's warnings (one line each, once, foreign text withheld) and progress bars."""

import warnings

import numpy as np

from dpfit.algorithms import dp_gd
from dpfit.cli._console import release_progress, tidy_warnings
from dpfit.exceptions import LargeBudgetWarning
from dpfit.mechanisms.recorder import observing


def test_warnings_are_one_line_and_never_repeated(capsys):
    with tidy_warnings("fit"):
        for _ in range(3):
            warnings.warn("rho=9 is\na weak guarantee", LargeBudgetWarning, stacklevel=1)
        warnings.warn_explicit(
            "unseen levels {'secret'}", UserWarning, "/site-packages/formulaic/x.py", 1
        )
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "dpfit fit: warning: LargeBudgetWarning: rho=9 is a weak guarantee",
        "dpfit fit: warning: UserWarning: from formulaic (text withheld: it may quote data values)",
    ]
    assert warnings.formatwarning is not None and "dpfit" not in warnings.formatwarning(
        "m", UserWarning, "f.py", 1
    )  # restored on exit


def test_observers_see_every_release_and_the_bar_counts_them():
    X = np.random.default_rng(0).standard_normal((50, 2))
    seen = []
    with observing(seen.append):
        dp_gd(X, X[:, 0], rho=1.0, clip=1.0, steps=7, rng=0)
    assert sum(entry.count for entry in seen) == 7
    with release_progress(True, total=7, desc="t") as bar:
        dp_gd(X, X[:, 0], rho=1.0, clip=1.0, steps=7, rng=0)
        assert bar.n == 7
