"""``dpfit.audit.audit``: run a registered target on the canary design and assess the runs."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import check_int
from ..exceptions import InsecureRandomnessWarning
from ..mechanisms import make_noise_source
from . import (  # noqa: F401 - registers the targets
    _ambssgd,
    _entry_points,
    _ftrl,
    _gradient_descent,
    _two_stage,
)
from .bounds import DEFAULT_DELTAS, DEFAULT_THRESHOLDS
from .checks import AuditResult, assess
from .registry import get_target

__all__ = ["audit"]


def audit(
    target: str,
    *,
    runs: int = 2000,
    seed: int | None = None,
    secure: bool = False,
    alpha: float = 1e-3,
    deltas: Sequence[float] = DEFAULT_DELTAS,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    **options: Any,
) -> AuditResult:
    """Audit one of dpfit's private algorithms with a Dirac canary (docs/auditing.md).

    Runs the target ``runs`` times on D and ``runs`` times on the neighbouring D' of the
    canary design, scores every run by the claimed mechanism and applies the three checks of
    :func:`dpfit.audit.assess`: empirical epsilon lower bounds at each delta' next to the
    claimed epsilon (CKS conversion of the claimed rho), the parametric mu test and the
    null calibration.

    Parameters
    ----------
    target : str
        A registered target (``sorted(dpfit.audit.TARGETS)``), e.g. ``"dp_gd"``.
    runs : int, default=2000
        Runs per side M >= 2. The attainable lower bound grows like ln(M): about 5.2 at
        M = 2000, so a correct mechanism is never refuted and gross bugs are.
    seed : int, optional
        Seed of the test data and the noise, for a reproducible audit (the noise is then
        not secret, which an audit of synthetic data does not need, so no
        :class:`~dpfit.InsecureRandomnessWarning` is emitted).
    secure : bool, default=False
        Draw the noise with the secure backend (OpenDP), to audit that path; needs
        ``seed=None`` and is slow (about 100 microseconds per coordinate).
    alpha : float, default=1e-3
        False-alarm level of each check.
    deltas, thresholds : sequences of float
        delta' values and pre-registered score thresholds of the nonparametric check.
    **options
        The target's public configuration (see ``TARGETS[target].defaults``), e.g.
        ``n``, ``d``, ``rho``, ``clip``, ``steps``, ``step_size``, ``relation``.

    Returns
    -------
    AuditResult
        Bounds, claims, checks and verdict; ``print(result.table())`` for a report.

    Notes
    -----
    An audit can refute a privacy claim, never prove it: a correct mechanism yields lower
    bounds well below the claim (the claim at delta' = 1e-5 is out of reach of any M that
    fits in CI), while noise scale errors of about 25 % and more, a missing clip, noise
    drawn once, or an add/remove calibration claimed as replace-one are caught (see
    ``docs/auditing.md`` for measured power).

    Examples
    --------
    >>> res = audit("dp_gd", runs=300, seed=0, rho=0.5, steps=5)
    >>> res.passed, res.runs
    (True, (300, 300))
    """
    spec = get_target(target)
    config = spec.config(options)
    runs = check_int(runs, "runs", low=2)
    if seed is not None:
        seed = check_int(seed, "seed", low=0)
        data_seq, noise_seq = np.random.SeedSequence(seed).spawn(2)
        data_rng = np.random.default_rng(data_seq)
        with warnings.catch_warnings():  # synthetic data: an audit releases nothing private
            warnings.simplefilter("ignore", InsecureRandomnessWarning)
            source = make_noise_source(np.random.default_rng(noise_seq), secure=secure)
    else:
        data_rng = np.random.default_rng()
        source = make_noise_source(None, secure=secure)
    scores = spec.run(config, runs, source, data_rng)
    return assess(
        scores.null,
        scores.alt,
        rho=spec.rho(config),
        target=spec.name,
        exact_null=scores.exact_null,
        shift=scores.shift,
        thresholds=thresholds,
        deltas=deltas,
        alpha=alpha,
        config={**config, **scores.claim, "kind": spec.kind, "noise_backend": source.backend},
    )
