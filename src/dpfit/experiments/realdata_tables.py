"""Tables from the real-data coverage study: warning calibration and the candidates compared.

``python -m dpfit.experiments.realdata_tables calibration --store STORE [--scale quick]
[--code-version V]`` prints the warning calibration table of the registered
``realdata-coverage`` study from a result store filled by ``dpfit reproduce
realdata-coverage --out DIR`` (``DIR/results.sqlite``; missing trials are run first):
for each kind of reason a fit gives (:func:`~.realdata_coverage.warning_kinds`; in its
``CoverageWarning``, its ``IdentificationWarning`` or a note, :data:`KIND_SHOWN`), the fits
that gave it, their intervals, and the share of those intervals that cover theta* anyway
(**false alarms**, for the reasons of a ``CoverageWarning``), also over those of its fits that
gave no ``CoverageWarning`` (where it is the only signal); and for the fits without a
``CoverageWarning``, the share of their intervals that miss theta* (**misses**). A fit can
give several reasons, so it counts in each of their rows. Coverage is per interval (one per
coefficient and fit).

``python -m dpfit.experiments.realdata_tables triage --store STORE [--write CSV]`` prints
the warning triage: a cell (design, n, rho) **covers** when no coefficient's coverage of
theta* is significantly below 0.95 (one-sided binomial test at level 0.01) and its pooled
coverage is at least 0.93; per kind of reason, the **false-alarm rate** is the share of the
fits in covering cells that give it and the **hit rate** the share of the fits in cells that
do not cover, both among the fits of the methods that can give that reason
(:data:`KIND_METHODS`), beside how it is shown and, for a ``CoverageWarning`` reason, its
target (:data:`FALSE_ALARM_TARGETS`); "any" is any ``CoverageWarning``.
``--write`` saves the per-cell summary it is computed from (:func:`warning_cells`), the
small file tests/experiments/data/realdata_warning_cells.csv that the test of the targets
reads.

``python -m dpfit.experiments.realdata_tables candidates --store STORE`` (per cell;
``candidates-pooled``: per candidate and n) runs (or reuses) the candidate comparison of
docs/inference.md, "Clipping bias": the study's trial with ``target="huber"`` beside the
default, at n = 2e4 and 2e5, and prints the coverage and width over HC1 of (a) the default
(a clip that grows with n), (b) the Huber-type fit at the old clip debiased by the released
gap (warning when the gap is material), (c) the default debiased likewise, and the
Huber-type fit itself. Candidate (d), the default of dpfit before this study (commit
f3976b1), is measured by running the same trial on that commit (docs/inference.md gives the
command).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ._coverage_table import grid
from ._silent_coverage import coefficient_rows
from .realdata_coverage import DESIGNS, EXPERIMENT, _trial
from .registry import Experiment
from .runner import run

__all__ = [
    "CANDIDATES",
    "FALSE_ALARM_TARGET",
    "FALSE_ALARM_TARGETS",
    "KIND_METHODS",
    "KIND_SHOWN",
    "calibration_table",
    "candidates_pooled",
    "candidates_table",
    "main",
    "markdown",
    "over_target",
    "triage_table",
    "warning_cells",
]


def calibration_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per warning kind (and "silent"): fits, intervals, false alarms or misses, coverage,
    median width over HC1 (module docstring)."""
    long = coefficient_rows(results)
    kinds = sorted(c.removeprefix("warn_") for c in results.columns if c.startswith("warn_"))
    rows = []
    for kind in kinds:
        fits = results.index[results[f"warn_{kind}"].fillna(0.0) > 0]
        part = long[long["fit"].isin(fits)]
        label = "false alarms (cover)" if _shown(kind) == "CoverageWarning" else "cover"
        rows.append(_row(kind, len(fits), part, label, part["covers"].mean()))
        quiet = part[part["warned"] == 0]["covers"]  # where it is the only signal
        rows[-1]["coverage, no CoverageWarning"] = quiet.mean() if len(quiet) else float("nan")
    silent = long[long["warned"] == 0]
    fits = int((results["warned"] == 0).sum())
    rows.append(_row("no warning", fits, silent, "misses (miss)", 1.0 - silent["covers"].mean()))
    rows[-1]["coverage, no CoverageWarning"] = silent["covers"].mean()
    return pd.DataFrame(rows)


def _shown(kind: str) -> str:
    return KIND_SHOWN.get(kind, "CoverageWarning")


def _row(kind: str, fits: int, part: pd.DataFrame, label: str, share: float) -> dict:
    return {
        "warning": kind,
        "shown as": "--" if kind == "no warning" else _shown(kind),
        "fits": fits,
        "intervals": len(part),
        "share": share,
        "counts as": label,
        "coverage": part["covers"].mean(),
        "median width / HC1": part["width"].median(),
    }


#: Which fits can give each kind of reason: the default DP-GD fit ("gd"), AdaSSP ("adassp"),
#: the IV default ("iv"). A kind's rates count the fits of these methods only.
KIND_METHODS = {
    "drift": ("gd",),
    "swamped": ("gd",),
    "clipping": ("gd", "iv"),
    "clipped-y": ("adassp",),
    "weak-first-stage": ("iv",),
    "weak-instruments": ("iv",),
    "meat": ("gd",),
    "unidentified": ("gd", "adassp", "iv"),
    "meat-note": ("gd", "adassp"),
    "ridge": ("adassp",),
}
#: How each kind is shown: in the fit's CoverageWarning (a forecast that the interval may
#: miss), in its IdentificationWarning (collinear terms named; the interval is wide), or in a
#: note of its summary (nothing to act on) (:mod:`dpfit.inference.doubts`). AdaSSP's
#: "noise swamps the data" is an IdentificationWarning, of kind "unidentified".
KIND_SHOWN = {
    **{kind: "CoverageWarning" for kind in KIND_METHODS},
    "unidentified": "IdentificationWarning",
    "meat-note": "note",
    "ridge": "note",
}
#: The most false alarms a kind of CoverageWarning reason may give (share of the fits in
#: covering cells); the other kinds forecast nothing about coverage and have no target.
FALSE_ALARM_TARGET = 0.05
FALSE_ALARM_TARGETS = {
    k: FALSE_ALARM_TARGET for k, shown in KIND_SHOWN.items() if shown == "CoverageWarning"
}
#: A cell covers when no coefficient's coverage is below 0.95 at this one-sided binomial
#: level and its pooled coverage is at least COVERS_POOLED.
COVERS_LEVEL = 0.01
COVERS_POOLED = 0.93


def _method(design: str) -> str:
    return "iv" if design.startswith("iv-") else "adassp" if design.startswith("adassp-") else "gd"


def warning_cells(
    results: pd.DataFrame, kinds: Mapping[str, tuple[str, ...]] = KIND_METHODS
) -> pd.DataFrame:
    """Per cell: its method, fits, pooled coverage, the worst coefficient's coverage and its
    one-sided binomial p-value against 0.95, whether it covers (module docstring), the fits
    that warned and, per kind (``kinds``: kind -> the methods that can give it; this
    study's by default), the fits that gave it."""
    long = coefficient_rows(results)
    keys = ["design", "n", "rho"]
    per_coef = long.groupby([*keys, "j"])["covers"].agg(["sum", "size"])
    per_coef["p"] = stats.binom.cdf(per_coef["sum"], per_coef["size"], 0.95)
    kinds = sorted(kinds)
    flags = pd.DataFrame(
        {
            **{k: results.get(f"warn_{k}", pd.Series(0.0, index=results.index)).fillna(0.0) > 0
               for k in kinds},
            "warned": results["warned"] > 0,
        }
    )  # fmt: skip
    flags[keys] = results[keys]
    table = pd.DataFrame(
        {
            "fits": results.groupby(keys).size(),
            "coverage": long.groupby(keys)["covers"].mean(),
            "worst": (per_coef["sum"] / per_coef["size"]).groupby(keys).min(),
            "worst_p": per_coef["p"].groupby(keys).min(),
        }
    )
    table["covers"] = (table["worst_p"] >= COVERS_LEVEL) & (table["coverage"] >= COVERS_POOLED)
    counts = flags.groupby(keys)[["warned", *kinds]].sum().astype(int)
    table = table.join(counts).reset_index()
    table.insert(0, "method", table["design"].map(_method))
    return table


def triage_table(
    cells: pd.DataFrame,
    kinds: Mapping[str, tuple[str, ...]] = KIND_METHODS,
    shown: Mapping[str, str] = KIND_SHOWN,
) -> pd.DataFrame:
    """Per kind (and any warning): the fits of its methods in covering cells, the share of
    them that give it (false alarms), the fits in cells that do not cover, the share that
    give it (hits), and the kind's target (module docstring). ``kinds`` and ``shown`` (kind
    -> how it is shown; CoverageWarning when absent) are this study's by default."""
    rows = []
    for kind in [*kinds, "warned"]:
        methods = kinds.get(kind, ("gd", "adassp", "iv"))
        how = shown.get(kind, "CoverageWarning")
        part = cells[cells["method"].isin(methods)]
        good, bad = part[part["covers"]], part[~part["covers"]]
        rows.append(
            {
                "warning": "any" if kind == "warned" else kind,
                "shown as": how,
                "fits in covering cells": int(good["fits"].sum()),
                "false alarms": good[kind].sum() / max(good["fits"].sum(), 1),
                "target": FALSE_ALARM_TARGET
                if how == "CoverageWarning" and kind != "warned"
                else float("nan"),
                "fits in cells that miss": int(bad["fits"].sum()),
                "hits": bad[kind].sum() / bad["fits"].sum() if bad["fits"].sum() else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def over_target(table: pd.DataFrame) -> list[str]:
    """The kinds with a target (those of the CoverageWarning) whose false-alarm rate exceeds
    it."""
    kinds = table[(table["warning"] != "any") & table["target"].notna()]
    return [r["warning"] for _, r in kinds.iterrows() if not r["false alarms"] <= r["target"]]


#: The candidate runs: the registered study's trial with ``target="huber"`` added beside
#: the default, at the two large n (where clipping bias matters) and both rho.
CANDIDATE_DESIGNS = tuple(d for d in DESIGNS if not d.startswith(("adassp-", "iv-")))
CANDIDATES = Experiment(
    name="realdata-coverage-candidates",
    paper=EXPERIMENT.paper,
    figure="candidates for the clipping bias (docs/inference.md)",
    description="The realdata-coverage trial with target='huber' beside the default.",
    grid={
        scale: [
            {**cell, "target": target}
            for cell in grid(CANDIDATE_DESIGNS, [20_000, 200_000], [0.1, 1.0])
            for target in ("least-squares", "huber")
        ]
        for scale in ("smoke", "quick", "paper")
    },
    replicates={"smoke": 1, "quick": 20, "paper": 40},
    trial=_trial,
)


#: The candidates: (target of the fit, the coverage columns read) -> name.
CANDIDATE_NAMES = {
    ("least-squares", "covers_"): "(a) growing clip",
    ("least-squares", "db_covers_"): "(c) growing clip + debias",
    ("huber", "covers_"): "Huber-type fit at 3 sqrt(k) s",
    ("huber", "db_covers_"): "(b) 3 sqrt(k) s + debias",
}


def _candidates(results: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """One long table (one row per fit and coefficient) per candidate (module docstring)."""
    out = {}
    for (target, prefix), name in CANDIDATE_NAMES.items():
        part = results[results["target"] == target]
        if part.empty or f"{prefix}0" not in part:
            continue
        if prefix == "db_covers_":  # debiased by the released gap, which warns when material
            part = part.assign(warned=np.maximum(part["warned"], part["gap_warned"]))
        out[name] = coefficient_rows(part, prefix)
    return out


def candidates_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per cell and candidate: coverage, the worst coefficient's share of silent misses, the
    median width over HC1 and the share of fits that warned (module docstring)."""
    frames = []
    for name, long in _candidates(results).items():
        long["silent_miss"] = (long["warned"] == 0) & (long["covers"] == 0)
        worst = long.groupby(["design", "n", "rho", "j"])["silent_miss"].mean()
        g = long.groupby(["design", "n", "rho"])
        fits = long.drop_duplicates("fit").groupby(["design", "n", "rho"])
        frames.append(
            pd.DataFrame(
                {
                    "candidate": name,
                    "coverage": g["covers"].mean(),
                    "worst silent miss": worst.groupby(["design", "n", "rho"]).max(),
                    "width / HC1": g["width"].median(),
                    "warned": fits["warned"].mean(),
                }
            ).reset_index()
        )
    return pd.concat(frames, ignore_index=True)


def candidates_pooled(results: pd.DataFrame, skewed: str = "k401ksubs") -> pd.DataFrame:
    """Per candidate and n, pooled over rho and the designs other than ``skewed``: coverage
    of theta* over all fits and over silent fits, the share of cells whose coverage is below
    0.90, the share of fits that warned and the median width over HC1; and the coverage
    and warning share on ``skewed`` (the wealth file) beside."""
    rows = []
    for name, long in _candidates(results).items():
        for n, part in long.groupby("n"):
            rest, wealth = part[part["design"] != skewed], part[part["design"] == skewed]
            cells = rest.groupby(["design", "rho"])["covers"].mean()
            fits = rest.drop_duplicates("fit")
            rows.append(
                {
                    "candidate": name,
                    "n": int(n),
                    "coverage": rest["covers"].mean(),
                    "coverage, silent fits": rest.loc[rest["warned"] == 0, "covers"].mean(),
                    "cells below 0.90": float((cells < 0.90).mean()),
                    "warned": fits["warned"].mean(),
                    "median width / HC1": rest["width"].median(),
                    "wealth: coverage": wealth["covers"].mean(),
                    "wealth: warned": wealth.drop_duplicates("fit")["warned"].mean(),
                }
            )
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``calibration`` or ``candidates`` from a result store (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m dpfit.experiments.realdata_tables")
    parser.add_argument(
        "table", choices=["calibration", "triage", "candidates", "candidates-pooled"]
    )
    parser.add_argument("--write", default=None, help="triage: save the per-cell summary (CSV)")
    parser.add_argument("--store", required=True, help="result store (SQLite)")
    parser.add_argument("--scale", default="quick", choices=["smoke", "quick", "paper"])
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument(
        "--code-version",
        default=None,
        help="the version the trials were stored under (dpfit reproduce --code-version)",
    )
    args = parser.parse_args(argv)
    experiment = EXPERIMENT if args.table in ("calibration", "triage") else CANDIDATES
    done = run(
        [experiment],
        scale=args.scale,
        store_path=args.store,
        jobs=args.jobs,
        version=args.code_version,
    )
    results = done.results[experiment.name]
    if args.table == "triage":
        cells = warning_cells(results)
        if args.write:
            cells.to_csv(args.write, index=False, float_format="%.6g")
        print(markdown(triage_table(cells)))
        return 0
    table = {
        "calibration": calibration_table,
        "candidates": candidates_table,
        "candidates-pooled": candidates_pooled,
    }[args.table](results)
    print(markdown(table))
    return 0


def markdown(table: pd.DataFrame) -> str:
    """A pipe table (floats to three decimals), as docs/inference.md shows them."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return "--" if value != value else f"{value:.3f}"  # NaN: no such fits
        return str(value)

    lines = ["| " + " | ".join(map(str, table.columns)) + " |"]
    lines.append("|" + "---|" * len(table.columns))
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(False)]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
