# ruff: noqa: E501
"""Run the command-line mistakes of this trial and record what dpfit said.

Usage (from this folder, after make_data.py):
    PYTHONPATH=../src /work/main/.venv/bin/python cli_mistakes.py > results/cli_mistakes_after.txt

Each case runs one ``python -m dpfit ...`` command and prints its exit status, whether
standard error holds a Python traceback, the error and warning lines (the seeded-noise
notice left out), and the coefficient rows of any table printed. Verdicts are in NOTES.md.
"""
import os
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
SRC = str(HERE.parent / "src")
B = ["--bound", "educ=6,18", "--bound", "age=18,65"]
Y = ["--y-bounds", "0,8"]
S = ["--seed", "0"]
F = ["--formula", "log_inc ~ educ + age"]
STORE = HERE / "results" / "trial.sqlite"
BOOK3 = HERE / "book_three_numbers.toml"
BOOK3.write_text('[columns.educ]\nbounds = [6, 18, 20]\n[columns.age]\nbounds = [18, 65]\n'
                 '[columns.log_inc]\nbounds = [0, 8]\n')

CASES = [
    (1, "--rho inf (no privacy, spelt as infinity)", ["fit", "survey.csv", *F, "--rho", "inf", *B, *Y, *S]),
    (2, "--rho 1e9 (a huge rho)", ["fit", "survey.csv", *F, "--rho", "1e9", *B, *Y, *S]),
    (3, "--bound educ=0,inf (an open-ended bound)", ["fit", "survey.csv", *F, "--rho", "0.5", "--bound", "educ=0,inf", "--bound", "age=18,65", *Y, *S]),
    (4, "--bound educ=nan,18 (an unknown low)", ["fit", "survey.csv", *F, "--rho", "0.5", "--bound", "educ=nan,18", "--bound", "age=18,65", *Y, *S]),
    (5, "one-row CSV (n = 1 < p = 3)", ["fit", "survey_one.csv", *F, "--rho", "0.5", *B, *Y, *S]),
    (6, "CSV with two columns named educ (a merge gone wrong)", ["fit", "survey_dupcols.csv", *F, "--rho", "0.5", *B, *Y, *S]),
    (7, "parquet with nullable dtypes (Int64, boolean, Float64, string) and two pd.NA", ["fit", "survey_nullable_na.parquet", "--formula", "log_inc ~ educ + age + female + hours", "--rho", "0.5", *B, "--bound", "female=0,1", "--bound", "hours=0,80", *Y, *S]),
    (8, "unicode column with parentheses, unquoted", ["fit", "survey_unicode.csv", "--formula", "log_Einkommen ~ Bildungsjahre + Wochenstunden (h)", "--rho", "0.5", "--bound", "Bildungsjahre=6,18", "--bound", "Wochenstunden (h)=0,80", *Y, *S]),
    (9, "--family binomial on a continuous response (log income)", ["fit", "survey.csv", "--family", "binomial", *F, "--rho", "0.5", *B, *S]),
    (10, "--family logistic (the model's name, not the family's)", ["fit", "survey.csv", "--family", "logistic", "--formula", "employed ~ educ + age", "--rho", "0.5", *B, *S]),
    (11, "--link probit without --family binomial", ["fit", "survey.csv", "--link", "probit", "--formula", "employed ~ educ + age", "--rho", "0.5", *B, "--y-bounds", "0,1", *S]),
    (12, "--offset on a least-squares fit", ["fit", "survey.csv", "--offset", "hours", *F, "--rho", "0.5", *B, *Y, *S]),
    (13, "--method adassp --steps 500 (steps of another method)", ["fit", "survey.csv", "--method", "adassp", "--steps", "500", *F, "--rho", "0.5", *B, *Y, *S]),
    (14, "--sep ';' on a comma-separated file", ["fit", "survey.csv", "--sep", ";", *F, "--rho", "0.5", *B, *Y, *S]),
    (15, "budget show --dataset Survey (the store has 'survey')", ["budget", "show", str(STORE), "--dataset", "Survey"]),
    (16, "the same data under another file name, charged to the store", ["fit", "survey_unicode.csv", "--formula", "log_Einkommen ~ Bildungsjahre + Alter", "--rho", "0.5", "--bound", "Bildungsjahre=6,18", "--bound", "Alter=18,65", *Y, *S, "--budget-store", str(STORE)]),
    (17, "reproduce --out pointing at a file", ["reproduce", "brown2024-fig1", "--scale", "smoke", "--out", "survey.csv"]),
    (18, "iv --family binomial (IV is linear only)", ["iv", "wage1.csv", "--formula", "lwage ~ exper + [educ ~ numdep]", "--family", "binomial", "--rho", "1", "--bound", "exper=0,50", "--bound", "educ=0,18", "--bound", "numdep=0,10", "--y-bounds", "-1,4", *S]),
    (19, "check with a codebook bound of three numbers", ["check", "survey.csv", "--codebook", str(BOOK3), *F]),
]


def run(argv):
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run([sys.executable, "-m", "dpfit", *argv], cwd=HERE, env=env,
                          capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


def main():
    STORE.unlink(missing_ok=True)
    run(["budget", "create", str(STORE), "--dataset", "survey", "--rho", "1"])
    for number, what, argv in CASES:
        status, out, err = run(argv)
        shown = " ".join(a if " " not in a and a else repr(a) for a in argv)
        print(f"## {number}. {what}\n$ dpfit {shown.replace(str(HERE) + '/', '')}")
        print(f"exit {status}; traceback: {'yes' if 'Traceback' in err else 'no'}")
        for line in err.splitlines():
            if "seeded" in line or not line.strip():
                continue
            print("  stderr:", line.replace(str(HERE) + "/", "")[:900])
        for line in out.splitlines():
            if re.match(r"^\S.{0,60}\s+-?\d+\.\d+\s+-?\d+\.\d+\s", line):
                print("  table:", line)
        print()


if __name__ == "__main__":
    main()
