# ruff: noqa: E501
"""Run the Python API mistakes of this trial and record what dpfit said.

Usage (from this folder, after make_data.py):
    PYTHONPATH=../src /work/main/.venv/bin/python api_mistakes.py > results/api_mistakes_after.txt

Each case prints what the call returned (or the exception, its type and the file that
raised it) and every warning but the seeded-noise notice. Verdicts are in NOTES.md.
"""
import pathlib
import sys
import tempfile
import traceback
import warnings

import pandas as pd

import dpfit

HERE = pathlib.Path(__file__).resolve().parent
df = pd.read_csv(HERE / "survey.csv")
wage1 = pd.read_csv(HERE / "wage1.csv")
B = {"educ": (6, 18), "age": (18, 65)}
KW = {"rho": 0.5, "bounds": B, "y_bounds": (0, 8), "random_state": 0}
F = "log_inc ~ educ + age"
X = df[["educ", "age"]].to_numpy(float)
y = df["log_inc"].to_numpy()
E = {"rho": 0.5, "bounds": [(6, 18), (18, 65)], "y_bounds": (0, 8), "random_state": 0}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    RES = dpfit.ols(F, df, **KW)
STORE = pathlib.Path(tempfile.mkdtemp()) / "budget.sqlite"
dpfit.Budget.open(STORE, dataset="survey", rho=1.0)
DUP = df[["log_inc", "age", "educ"]].assign(partner=df["educ"].iloc[::-1].to_numpy())
DUP.columns = ["log_inc", "age", "educ", "educ"]
LABELS_12 = df.assign(employed=df["employed"] + 1)  # coded 1 = no, 2 = yes

CASES = [
    (20, "Budget.open of a stored dataset with another total", lambda: dpfit.Budget.open(STORE, dataset="survey", rho=2.0)),
    (21, "bounds with three numbers for a column", lambda: dpfit.ols(F, df, **{**KW, "bounds": {"educ": (6, 18, 20), "age": (18, 65)}})),
    (22, "bounds written as a string '6,18' (as on the command line)", lambda: dpfit.ols(F, df, **{**KW, "bounds": {"educ": "6,18", "age": (18, 65)}})),
    (23, "bounds (high, low) in a mapping", lambda: dpfit.ols(F, df, **{**KW, "bounds": {"educ": (18, 6), "age": (18, 65)}})),
    (24, "conf_int(alpha=95) (a level in percent)", lambda: RES.conf_int(alpha=95)),
    (25, "DPLinearRegression.fit(y, X) (arguments swapped)", lambda: dpfit.DPLinearRegression(**E).fit(y, X)),
    (26, "dpfit.logit on a response coded 1/2", lambda: dpfit.logit("employed ~ educ + age", LABELS_12, rho=0.5, bounds=B, random_state=0).params.round(3).to_dict()),
    (27, "DPLogisticRegression on labels 1/2", lambda: dpfit.DPLogisticRegression(rho=0.5, bounds=[(6, 18), (18, 65)], random_state=0).fit(X, LABELS_12["employed"].to_numpy()).coef_.round(3)),
    (28, "res.predict(dict) (statsmodels takes a dict)", lambda: RES.predict({"educ": 12, "age": 40})),
    (29, "a frame with two columns named educ", lambda: dpfit.ols(F, DUP, **KW)),
    (30, "dpfit.iv on a one-row frame", lambda: dpfit.iv("lwage ~ exper + [educ ~ numdep]", wage1.iloc[:1], rho=1.0, bounds={"exper": (0, 50), "educ": (0, 18), "numdep": (0, 10)}, y_bounds=(-1, 4), random_state=0).params.round(3).to_dict()),
]


def main():
    for number, what, call in CASES:
        print(f"## {number}. {what}")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value = call()
                print("  returned:", type(value).__name__, value if not hasattr(value, "summary") else "")
            except Exception as exc:
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                where = frame.filename.split("site-packages/")[-1].split("src/")[-1]
                print(f"  raised: {type(exc).__name__}: {exc}".replace("\n", "\\n")[:900])
                print(f"  raised in: {where}")
        for w in caught:
            if w.category.__name__ == "InsecureRandomnessWarning":
                continue
            print(f"  warning: {w.category.__name__}: {w.message}"[:900])
        print()


if __name__ == "__main__":
    sys.exit(main())
