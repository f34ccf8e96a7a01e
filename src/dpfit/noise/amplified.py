"""Noise amplified by Poisson sampling: DP-SGD and banded matrix factorisation (add/remove).

Sampling (public randomness, independent of the data): the records are split into ``groups``
= b fixed groups; step t samples each record of group t mod b independently with probability
q (*cyclic Poisson sampling*; b = 1 is plain Poisson sampling, as in DP-SGD).

Privacy (Choquette-Choo, Ganesh, McKenna, McMahan, Rush, Thakurta & Xu 2023, "(Amplified)
Banded Matrix Factorizations", arXiv 2306.08153, Thm. 4): if the encoder C is lower
triangular Toeplitz with at most b bands, a record's possible steps g, g + b, g + 2b, ...
touch disjoint row blocks of C G, so the release C G + Z is the adaptive composition of
ceil(T / b) Poisson-subsampled Gaussian mechanisms, each of sensitivity
Delta_sum x max_j ||C e_j||_2 = Delta_sum x ||c||_2 and noise std sigma. DP-SGD is C = I,
b = 1: T compositions. The composition is accounted by privacy loss distributions
(:class:`dpfit.privacy.pld.PLDLedger`) and reported as (epsilon, delta) only.

Any Toeplitz C with at most b bands is accepted: the paper's optimised banded C
(:func:`~dpfit.noise.optimal_banded`, with the band width per epsilon from
:func:`~dpfit.noise.amplified_banded_choice`) or a truncated encoder
(:func:`~dpfit.noise.banded_encoder`).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_int, check_positive, check_real
from ..mechanisms.rng import NoiseSource
from ..mechanisms.stream import subsampled_gaussian_rows
from ..privacy import Relation, sum_sensitivity
from ..privacy.pld import PLDLedger
from ._stream_choice import StreamChoice, _exact_mode
from .streams import NoiseStream
from .toeplitz import ToeplitzMechanism

__all__ = ["amplified_noise", "amplified_sensitivity"]


def amplified_sensitivity(
    mechanism: ToeplitzMechanism, *, clip: float, batch_size: int, groups: int
) -> tuple[float, int]:
    """(sensitivity of one composition, number of compositions) under cyclic Poisson sampling.

    ``batch_size`` is a public bound on the number of summands of a step (it sets the
    float64 rounding allowance, :func:`dpfit.privacy.sum_sensitivity`). Raises
    ``ValueError`` unless C has at most ``groups`` bands.
    """
    if not isinstance(mechanism, ToeplitzMechanism):
        raise TypeError("amplification needs a Toeplitz mechanism with a banded encoder")
    groups = check_int(groups, "groups", low=1)
    if mechanism.encoder_bands > groups:
        raise ValueError(
            f"the encoder has {mechanism.encoder_bands} bands, more than groups={groups}: "
            "amplification by cyclic Poisson sampling needs bands <= groups "
            "(use dpfit.noise.banded_encoder)"
        )
    per_step = sum_sensitivity(clip, Relation.ADD_REMOVE, n=batch_size)
    column = math.sqrt(math.fsum(np.asarray(mechanism.inverse) ** 2))
    return per_step * column, math.ceil(mechanism.steps / groups)


def amplified_noise(
    mechanism: ToeplitzMechanism,
    *,
    dim: int,
    clip: float,
    batch_size: int,
    noise_std: float,
    sampling_probability: float,
    groups: int,
    ledger: PLDLedger,
    rng: NoiseSource,
    label: str = "amplified/gradients",
) -> NoiseStream:
    """Charge an amplified correlated-noise release to a PLD ledger and return its stream.

    Parameters
    ----------
    mechanism : ToeplitzMechanism
        C with at most ``groups`` bands: :func:`~dpfit.noise.dpsgd` (DP-SGD) or a
        :func:`~dpfit.noise.banded_encoder`.
    dim, clip, noise_std, rng, label
        As for :func:`~dpfit.noise.correlated_noise`.
    batch_size : int
        Public bound on the number of clipped summands of one step (the rounding allowance;
        the dataset size is always a valid bound).
    sampling_probability : float
        Poisson inclusion probability q of a record at each step of its group.
    groups : int
        b: the number of groups of cyclic Poisson sampling (1 for DP-SGD).
    ledger : PLDLedger
        Charged once, before anything is drawn.

    Returns
    -------
    NoiseStream
        Exact noise of ``mechanism``, streamed in O(bands x d) per step.

    Notes
    -----
    Privacy: see the module docstring; the caller must sample exactly as declared (records
    in fixed groups, group t mod b at step t, each record independently with probability q),
    e.g. with :class:`dpfit.torch.PoissonSampler`.
    """
    if not isinstance(ledger, PLDLedger):
        raise TypeError(f"ledger must be a PLDLedger, got {type(ledger).__name__}")
    dim = check_int(dim, "dim", low=1)
    clip = check_positive(clip, "clip")
    noise_std = check_positive(noise_std, "noise_std")
    q = check_real(sampling_probability, "sampling_probability", low=0.0, high=1.0, high_open=False)
    sensitivity, compositions = amplified_sensitivity(
        mechanism, clip=clip, batch_size=batch_size, groups=groups
    )
    mode = _exact_mode(mechanism, 8 * mechanism.cache_rows * dim, 1 << 28)
    rows = subsampled_gaussian_rows(
        steps=mechanism.steps,
        rows=mechanism.noise_rows,
        dim=dim,
        sensitivity=sensitivity,
        noise_std=noise_std,
        sampling_probability=q,
        compositions=compositions,
        ledger=ledger,
        rng=rng,
        label=label,
        cache_rows=mechanism.cache_rows if mode == "buffered" else 0,
    )
    choice = StreamChoice(
        mode=mode,
        mechanism=mechanism.name,
        requested=mechanism.name,
        error_ratio=1.0,
        per_step="constant",
        reason=f"exact, amplified: {compositions} Poisson-subsampled compositions (q = {q:g})",
    )
    return NoiseStream(mechanism, rows, mode, choice)
