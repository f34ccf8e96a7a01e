"""diffprivlib side of ``bench_glm.py``: IBM diffprivlib's LogisticRegression on given data.

Runs in a fresh process of an environment with diffprivlib (0.6.x needs scikit-learn < 1.6,
so usually not dpfit's own environment):

    python benchmarks/diffprivlib_worker.py --data data.npz --epsilon 1.0 --repeats 5 \
        --json out.json

``data.npz`` holds ``X`` (features in [-1, 1]) and ``y`` (0/1). diffprivlib's
``LogisticRegression`` (objective perturbation with the vector mechanism, pure
epsilon-DP; Chaudhuri et al. 2011) is fitted ``repeats`` times with ``data_norm``
sqrt(p), the bound of the rows, and its default ``C = 1`` (the ridge its privacy analysis
needs); the JSON holds each fit's intercept and coefficients.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import types

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    # diffprivlib 0.6.6 imports its tree models at import time; newer scikit-learn versions
    # moved what they need. The benchmark uses the logistic model only.
    stub = types.ModuleType("diffprivlib.models.forest")
    stub.RandomForestClassifier = stub.DecisionTreeClassifier = None
    sys.modules.setdefault("diffprivlib.models.forest", stub)
    import diffprivlib
    from diffprivlib.models import LogisticRegression

    data = np.load(args.data)
    X, y = data["X"], data["y"].astype(int)
    fits = []
    for seed in range(args.repeats):
        model = LogisticRegression(
            epsilon=args.epsilon, data_norm=math.sqrt(X.shape[1]), C=args.C, random_state=seed
        ).fit(X, y)
        fits.append([float(model.intercept_[0]), *map(float, model.coef_.ravel())])
    with open(args.json, "w") as handle:
        json.dump({"version": diffprivlib.__version__, "C": args.C, "fits": fits}, handle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
