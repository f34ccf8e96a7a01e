"""Liang et al. (2025) Fig. 13 (Card) as a clip sweep, with dpfit's private defaults beside it.

The paper gives no clip for its real-data runs. The oracle rules of
:data:`._liang2025_trials.CLIP_RULES` read one off the data, **non-privately**: 1.25 x or
1 x the largest per-example gradient norm along a non-private 2S-GD run, or its 99% or 90%
quantile. On Card the first stage's largest norm (51.5) is 3.4 times its 99% quantile
(15.3), so the noise (proportional to the clip) differs about fourfold between the rules, and
with it the attenuation of beta by first-stage noise: the rho = 1 verdict of Fig. 13(b)
depends on the clip.

Beside them, ``"library-2s-gd"`` and ``"library-moments"`` fit ``DPIVRegression`` with its
defaults (method ``"2s-gd"``: public default clips in privately standardised units;
``"moments"``: the default noisy-moment 2SLS) from the codebook's public bounds, at the same
true zCDP spend rho as the paper's runs (rho1 = rho2 = rho with the paper's calibration spend
rho in all). Nothing of these is read off the data except through charged noise.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..datasets import load_card
from ..exceptions import CoverageWarning, IdentificationWarning, LargeBudgetWarning
from ..models import DPIVRegression
from ._liang2025_trials import real_setup, real_trial

__all__: list[str] = []

#: Public bounds from the Card codebook (years of schooling 0-18, binary proximity dummies;
#: log wage between 4.6 and 8.0), as in docs/liang2025.md's quick start.
CARD_BOUNDS = {
    "educ": (0, 18),
    "nearc2": (0, 1),
    "nearc4": (0, 1),
    "fatheduc": (0, 18),
    "motheduc": (0, 18),
}
CARD_Y_BOUNDS = (4.6, 8.0)
LIBRARY = ("library-2s-gd", "library-moments")
#: Display order of the clip rules (oracle ones from the smallest clip to the largest).
ORDER = ("q0.9", "q0.99", "max", "max-1.25", *LIBRARY)


def library_trial(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """``DPIVRegression`` with its defaults on the Card sample at true spend ``rho``."""
    df = load_card(sample="liang2025")
    model = DPIVRegression(
        rho=float(params["rho"]),
        method=str(params["clip"]).removeprefix("library-"),
        bounds=CARD_BOUNDS,
        y_bounds=CARD_Y_BOUNDS,
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LargeBudgetWarning)
        warnings.simplefilter("ignore", CoverageWarning)  # only beta is used, not its interval
        warnings.simplefilter("ignore", IdentificationWarning)  # nor its width
        model.fit(df[["educ"]], df["lwage"], Z=df[["nearc2", "nearc4", "fatheduc", "motheduc"]])
    return {
        "beta_T": float(np.asarray(model.coef_)[0]),
        "beta_2sls": real_setup("card")["beta_2sls"],
        "rho_spent": float(model.privacy_.rho),
    }


def card_trial(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """A Fig. 13 run: an oracle-clip DP-2S-GD run, or a library default (``params["clip"]``)."""
    if str(params.get("clip", "")) in LIBRARY:
        return library_trial(params, seed)
    return real_trial(params, seed)


def clip_values() -> dict[str, float]:
    """The first- and second-stage clips of each oracle rule (for the report)."""
    out = {}
    for rule in ORDER[:4]:
        setup = real_setup("card", rule)
        out[f"clip {rule} theta"] = setup["clip_theta"]
        out[f"clip {rule} beta"] = setup["clip_beta"]
    return out


def clip_sweep_plot(results: pd.DataFrame) -> list:
    """Fig. 13's top row as a clip sweep: a box of beta^(T) per clip rule, one panel per rho."""
    import matplotlib.pyplot as plt

    rhos = sorted(results["rho"].unique())
    rules = [r for r in ORDER if r in set(results["clip"])]
    fig, axes = plt.subplots(1, len(rhos), figsize=(3.6 * len(rhos), 3.8), squeeze=False)
    b2sls = float(results["beta_2sls"].iloc[0])
    for ax, rho in zip(axes[0], rhos, strict=True):
        rows = results[np.isclose(results["rho"], rho)]
        data = [rows.loc[rows["clip"] == r, "beta_T"].to_numpy() for r in rules]
        ax.boxplot(data, showfliers=False)
        ax.set_xticks(range(1, len(rules) + 1), [r.replace("library-", "lib ") for r in rules])
        ax.tick_params(axis="x", labelrotation=45, labelsize="small")
        ax.axhline(b2sls, color="r", ls="--", lw=1, label="2SLS 0.0744")
        ax.axhspan(0.9 * b2sls, 1.1 * b2sls, color="r", alpha=0.08, label="within 10%")
        ax.set(title=f"Card, rho1 = rho2 = {rho:g}", ylabel="beta^(T) (educ)")
    axes[0, 0].legend(fontsize="x-small")
    fig.tight_layout()
    return [fig]
