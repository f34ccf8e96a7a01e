"""Write ``dp_gd_seeded.json``: fixed-seed DP-GD trajectories, the reference for later versions.

Run from the repository root with the dpfit version to be frozen on the path, e.g. the
reference file was made from commit e649cbe by

    git archive e649cbe src | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/src DPFIT_GOLDEN_COMMIT=e649cbe \
        .venv/bin/python tests/algorithms/golden/make_dp_gd_golden.py

The file records the commit, numpy version and BLAS of the run; every iterate is stored as a
float64 hex string (``float.hex``), so a comparison can be exact where the arithmetic is the
same. Later versions sum in another order (row blocks for a large X, a column-major copy of a
small one), so ``tests/algorithms/test_dp_gd.py`` compares the iterates to 1e-12 of their
largest magnitude and the clipped counts, noise std and rho exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from pathlib import Path

import numpy as np

import dpfit
from dpfit.algorithms import dp_gd, dp_gd_given_noise

OUT = Path(__file__).with_name("dp_gd_seeded.json")

#: name -> (n, p, data seed, dp_gd keyword arguments)
CASES = {
    "small-two-runs": (400, 5, 0, {"rho": 0.5, "clip": 3.0, "steps": 12, "runs": 2, "rng": 3}),
    "clipped-tall": (
        50_000,
        3,
        1,
        {"rho": 0.2, "clip": 1.5, "steps": 15, "step_size": 0.3, "rng": 7},
    ),
    "wide": (20_000, 40, 2, {"rho": 1.0, "clip": 20.0, "steps": 8, "rng": 11}),
    "row-blocks": (150_000, 10, 4, {"rho": 0.5, "clip": 4.0, "steps": 6, "rng": 13}),
    "add-remove": (
        30_000,
        10,
        3,
        {
            "rho": 0.3,
            "clip": 2.0,
            "steps": 10,
            "relation": "add-remove",
            "n_public": 30_001,
            "rng": 5,
        },
    ),
}


def data(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Heavy-tailed synthetic data (some residuals clip at every step)."""
    gen = np.random.default_rng(seed)
    X = gen.standard_normal((n, p))
    y = X @ np.linspace(1.0, -1.0, p) + gen.standard_t(3, size=n)
    return X, y


def _hex(a: np.ndarray) -> list:
    return [float(v).hex() for v in np.ravel(a)]


def main() -> None:
    commit = (
        os.environ.get("DPFIT_GOLDEN_COMMIT")
        or subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
    )
    out = {
        "provenance": {
            "command": "PYTHONPATH=/tmp/before/src DPFIT_GOLDEN_COMMIT=<commit> "
            "python tests/algorithms/golden/make_dp_gd_golden.py (see its docstring)",
            "dpfit_commit": commit,
            "dpfit_file": dpfit.__file__,
            "numpy": np.__version__,
            "blas": np.show_config(mode="dicts")["Build Dependencies"]["blas"].get("version"),
        },
        "cases": {},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded runs warn
        for name, (n, p, seed, kw) in CASES.items():
            X, y = data(n, p, seed)
            traj = dp_gd(X, y, **kw)
            out["cases"][name] = {
                "n": n,
                "p": p,
                "data_seed": seed,
                "kwargs": kw,
                "iterates": _hex(traj.iterates),
                "clipped_per_step": traj.diagnostics["clipped_per_step"].tolist(),
                "noise_std": float(traj.config["noise_std"]).hex(),
                "rho": float(traj.rho).hex(),
            }
        X, y = data(50_000, 3, 1)
        noise = np.random.default_rng(9).standard_normal((6, 3)) * 1e-3
        out["given_noise"] = {
            "iterates_unclipped": _hex(dp_gd_given_noise(X, y, noise=noise, step_size=0.3)),
            "iterates_clipped": _hex(dp_gd_given_noise(X, y, noise=noise, step_size=0.3, clip=1.5)),
        }
    OUT.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
