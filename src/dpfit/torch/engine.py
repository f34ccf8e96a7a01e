"""``make_private``: private training of a PyTorch model where dpfit owns every private step.

Like Opacus' ``PrivacyEngine.make_private``, it takes a model, an optimizer and a data loader
and returns them made private; unlike a trusting wrapper, the returned optimizer accepts no
gradient. dpfit owns

* the batches: a :class:`~dpfit.torch.FixedEpochSampler` (shuffle once, k epochs of b
  fixed-size batches) or a :class:`~dpfit.torch.PoissonSampler` (Poisson or cyclic Poisson
  sampling), drawn from public randomness and replacing the loader's own sampler;
* the clipping: per-example gradient norms by book-keeping for ``nn.Linear`` models, by
  ``torch.func.vmap`` otherwise (:mod:`dpfit.torch._clipping`), clipped to ``clip``;
* the noise: one stream charged once for the whole run, with the sensitivity of exactly the
  pattern the sampler produces;
* the accounting: a zCDP :class:`~dpfit.privacy.PrivacyLedger` (fixed-epoch, replace-one;
  exact (epsilon, delta) by the Gaussian-DP curve) or a PLD
  :class:`~dpfit.privacy.PLDLedger` (Poisson sampling, add/remove; (epsilon, delta) only).

==================  ============  =========================  ===================================
sampling            relation      noise (``noise=``)         privacy
==================  ============  =========================  ===================================
"fixed-epoch"       replace-one   "auto": nu-DP-FTRL at       one Gaussian release, sensitivity
                                  select_nu, streamed as      for (k, b) = (epochs, n // B)
                                  the optimal BLT; or         (Choquette-Choo et al. 2024,
                                  "nu-dpftrl", "dp-sgd", a    App. A.2); exact GDP epsilon
                                  CorrelatedMechanism
"poisson"           add/remove    "auto" / "dp-sgd":          T Poisson-subsampled Gaussians
                                  independent noise           (Abadi et al. 2016), PLD epsilon
"poisson",          add/remove    "amplified-banded": the     ceil(T / b) subsampled Gaussians
groups = b > 1                    optimal_banded encoder of   (Choquette-Choo et al. 2023,
                                  b bands; or a mechanism     arXiv 2306.08153, Thm. 4)
                                  with <= b bands
==================  ============  =========================  ===================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.data import DataLoader, default_collate

from .._validation import check_delta, check_int, check_option, check_positive
from ..mechanisms import make_noise_source
from ..mechanisms.limits import LIMIT, check_noisy_sum_scale
from ..noise import (
    CorrelatedMechanism,
    NoiseStream,
    amplified_noise,
    amplified_sensitivity,
    calibrate,
    correlated_noise,
    dpsgd,
    nu_dpftrl,
    optimal_banded,
    select_nu,
)
from ..privacy import PLDLedger, PrivacyLedger, Relation, subsampled_gaussian_noise_multiplier
from ..privacy.ledger import prepare_ledger
from ._clipping import refuse_batch_mixing, trainable
from ._loader import PrivateDataLoader
from ._rounding import chunked_sum_excess
from .optimizer import DPOptimizer, check_optimizer_params
from .samplers import FixedEpochSampler, PoissonSampler

__all__ = ["PrivateDataLoader", "PrivateTraining", "make_private"]

SAMPLINGS = ("fixed-epoch", "poisson")
SUMS = ("auto", "float64")
NOISES = ("auto", "nu-dpftrl", "dp-sgd", "amplified-banded")


@dataclass(frozen=True, eq=False)
class PrivateTraining:
    """What :func:`make_private` returns; unpacks as ``model, optimizer, data_loader``.

    Attributes
    ----------
    model : torch.nn.Module
        The model (unchanged; no hooks are added).
    optimizer : DPOptimizer
        The private optimizer.
    data_loader : PrivateDataLoader
        The private batches, one epoch per iteration.
    ledger : PrivacyLedger or PLDLedger
        Charged once, before the first step.
    stream : dpfit.noise.NoiseStream
        The noise (``stream.choice`` says which mechanism and why).
    steps : int
        Number of private steps T.
    """

    model: torch.nn.Module
    optimizer: DPOptimizer
    data_loader: PrivateDataLoader
    ledger: PrivacyLedger | PLDLedger
    stream: NoiseStream
    steps: int

    def __iter__(self):
        return iter((self.model, self.optimizer, self.data_loader))

    def epsilon(self, delta: float) -> float:
        """epsilon at ``delta`` of the whole run (exact GDP curve or PLD)."""
        if isinstance(self.ledger, PLDLedger):
            return self.ledger.epsilon(delta)
        eps = self.ledger.gaussian_epsilon(delta)
        return self.ledger.epsilon(delta) if eps is None else eps

    def statement(self, delta: float = 1e-5) -> str:
        """The ledger's privacy statement."""
        return self.ledger.statement(delta)


def _room(info: torch.finfo) -> float:
    """The largest gradient a step may write in a dtype: its range over 2^(bits / 2), at
    most :data:`~dpfit.mechanisms.limits.LIMIT` (room for the optimizer's own arithmetic)."""
    return min(info.max / 2.0 ** (info.bits // 2), LIMIT)


def _fixed_epoch(
    n, batch, epochs, clip, noise, noise_mode, target, ledger, source, dim, limit, sums
):
    sampler = FixedEpochSampler(n, batch_size=batch, epochs=epochs, rng=source)
    T, k, b = sampler.steps, sampler.participations, sampler.separation
    pattern = dict(participations=k, separation=b, order="fixed-epoch")
    if isinstance(noise, CorrelatedMechanism):
        if noise.steps != T:
            raise ValueError(f"noise covers {noise.steps} steps, the run has {T}")
        mech = noise
    elif noise == "dp-sgd":
        mech = dpsgd(T)
    elif noise in ("auto", "nu-dpftrl"):
        mech = nu_dpftrl(select_nu(T, participations=k, separation=b).nu, steps=T)
    else:
        raise ValueError(f"noise={noise!r} needs sampling='poisson'")
    relation = Relation.REPLACE_ONE
    # float32 chunked sums at fixed batch positions (replace-one): their own rounding bound,
    # named in the ledger's statement; float64 sums: the float64 allowance of calibrate
    excess = chunked_sum_excess(clip, batch) if sums == "auto" else None
    label = "torch/gradients"
    if excess is not None:
        label += f" (chunked sums: rounding allowance {excess / clip:.1e} clip a step included)"
    cal = calibrate(
        mech,
        clip=clip,
        batch_size=batch,
        sum_excess=excess,
        relation=relation,
        **target,
        **pattern,
    )
    check_noisy_sum_scale(  # before the charge: no step's gradient can overflow
        clip, summands=batch, noise_std=cal.noise_std, noise_gain=mech.max_decoder_row_norm(),
        divisor=batch, limit=limit,
    )  # fmt: skip
    ledger = prepare_ledger(ledger, relation, cal.rho, name="make_private")
    stream = correlated_noise(
        mech,
        dim=dim,
        clip=clip,
        batch_size=batch,
        noise_std=cal.noise_std,
        ledger=ledger,
        rng=source,
        mode=noise_mode,
        label=label,
        sum_excess=excess,
        **pattern,
    )
    return sampler, stream, ledger, batch


def _poisson(n_public, batch, epochs, clip, noise, groups, target, ledger, source, n, dim, limit):
    if "rho" in target:
        raise TypeError(
            "Poisson sampling is accounted in (epsilon, delta) only: give epsilon and delta"
        )
    q = min(1.0, batch * groups / n_public)
    sampler = PoissonSampler(n, sample_rate=q, epochs=epochs, rng=source, groups=groups)
    T = sampler.steps
    if isinstance(noise, CorrelatedMechanism):
        if noise.steps != T:
            raise ValueError(f"noise covers {noise.steps} steps, the run has {T}")
        mech = noise
    elif noise in ("auto", "dp-sgd"):
        mech = dpsgd(T)
    elif noise == "amplified-banded":
        # the b-banded encoder with the least ||c||^2 x prefix error: with one composition
        # per group the amplified sensitivity is ||c||, so this is the least-error choice
        mech = optimal_banded(T, min(groups, T))
    else:
        raise ValueError(f"noise={noise!r} needs sampling='fixed-epoch'")
    sens, compositions = amplified_sensitivity(mech, clip=clip, batch_size=n_public, groups=groups)
    z = subsampled_gaussian_noise_multiplier(
        target["epsilon"], sampling_probability=q, count=compositions, delta=target["delta"]
    )
    check_noisy_sum_scale(  # before the charge: no step's gradient can overflow
        clip, summands=n_public, noise_std=z * sens, noise_gain=mech.max_decoder_row_norm(),
        divisor=batch, limit=limit,
    )  # fmt: skip
    if ledger is None:
        ledger = PLDLedger(epsilon=target["epsilon"], delta=target["delta"])
    elif not isinstance(ledger, PLDLedger):
        raise TypeError("Poisson sampling is charged to a dpfit.privacy.PLDLedger")
    stream = amplified_noise(
        mech,
        dim=dim,
        clip=clip,
        batch_size=n_public,
        noise_std=z * sens,
        sampling_probability=q,
        groups=groups,
        ledger=ledger,
        rng=source,
        label="torch/gradients",
    )
    return sampler, stream, ledger, batch


def make_private(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    data_loader: DataLoader,
    *,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    clip: float,
    epochs: int,
    epsilon: float | None = None,
    delta: float | None = None,
    rho: float | None = None,
    sampling: str = "fixed-epoch",
    noise: str | CorrelatedMechanism = "auto",
    noise_mode: str = "auto",
    groups: int = 1,
    n_public: int | None = None,
    ledger: PrivacyLedger | PLDLedger | None = None,
    random_state: Any = None,
    sums: str = "auto",
) -> PrivateTraining:
    """Make ``model``'s training private; returns ``(model, optimizer, data_loader)`` and more.

    Parameters
    ----------
    model : torch.nn.Module
        The model; layers must act on each example independently (no BatchNorm in train
        mode). Its trainable parameters are the privatised gradient.
    optimizer : torch.optim.Optimizer
        A first-order optimizer over all trainable parameters (SGD, Adam, ...).
    data_loader : torch.utils.data.DataLoader
        Gives the dataset (items ``(input, target)``), the collate function and the public
        batch size B (the expected batch size under Poisson sampling); its own sampler is
        replaced.
    loss_fn : callable
        ``loss_fn(output, target)`` for a batch of ONE example (called under ``vmap``),
        e.g. ``torch.nn.functional.cross_entropy``.
    clip : float
        Per-example gradient L2 bound (public).
    epochs : int
        Passes over the data (k for fixed-epoch sampling).
    epsilon, delta : float, optional
        Target (epsilon, delta) of the whole run. With ``sampling="fixed-epoch"`` one may
        give ``rho`` instead (zCDP).
    rho : float, optional
        Target zCDP cost (fixed-epoch only).
    sampling : {"fixed-epoch", "poisson"}, default="fixed-epoch"
        Who joins each step (module table).
    noise : {"auto", "nu-dpftrl", "dp-sgd", "amplified-banded"} or CorrelatedMechanism
        The noise correlation (module table); a mechanism object must cover the T steps.
    noise_mode : str, default="auto"
        Stream mode for fixed-epoch sampling (:func:`dpfit.noise.correlated_noise`);
        ``"auto"`` never costs more per step as t grows.
    groups : int, default=1
        Groups of cyclic Poisson sampling (b; Poisson only).
    n_public : int, optional
        Public dataset size, required for Poisson sampling (add/remove: the actual size is
        private); the sampling rate is q = B x groups / n_public.
    ledger : PrivacyLedger or PLDLedger, optional
        Charged with the run; by default a new one with the run's budget.
    random_state : None, int, numpy.random.Generator or NoiseSource
        Source of the sampling randomness and the noise (None: fresh and secure).
    sums : {"auto", "float64"}, default="auto"
        How a step adds its clipped per-example gradients. ``"auto"``: under fixed-epoch
        sampling, for float32 parameters, in float32 chunks of 128 rows whose sums are added
        in float64, with a proven rounding allowance of about 2e-3 clip (0.1% of the
        sensitivity 2 clip) added to the declared sensitivity and named in the ledger's
        statement (``docs/privacy.md``, "PyTorch: float32 sums"); in float64 otherwise.
        ``"float64"``: always in float64, with the float64 allowance only (slower on large
        layers).

    Returns
    -------
    PrivateTraining

    Raises
    ------
    TypeError, ValueError
        Invalid inputs, before anything is charged or drawn.
    BudgetExceededError
        ``ledger`` cannot afford the run; nothing was charged or drawn.

    Notes
    -----
    Privacy: see the module table; the batches, clipping and noise are all the library's,
    and the declared sensitivity is that of the batches it produces. The loss values and the
    number of clipped examples are non-private diagnostics. Tuning hyperparameters on the
    private data is itself a release.

    Examples
    --------
    See ``docs/tutorial-torch.md``.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    refuse_batch_mixing(model)  # before anything is charged
    if not isinstance(data_loader, DataLoader):
        raise TypeError(f"data_loader must be a torch DataLoader, got {type(data_loader)}")
    if not callable(loss_fn):
        raise TypeError("loss_fn must be callable: loss_fn(output, target)")
    clip = check_positive(clip, "clip")
    epochs = check_int(epochs, "epochs", low=1)
    sampling = check_option(sampling, "sampling", SAMPLINGS)
    sums = check_option(sums, "sums", SUMS)
    if not isinstance(noise, CorrelatedMechanism):
        noise = check_option(noise, "noise", NOISES)
    groups = check_int(groups, "groups", low=1)
    batch = data_loader.batch_size
    if batch is None:
        raise ValueError("data_loader must have a batch_size (the public batch size)")
    batch = check_int(batch, "data_loader.batch_size", low=1)
    if (rho is None) == (epsilon is None):
        raise TypeError("give either rho or (epsilon, delta)")
    if epsilon is not None:
        if delta is None:
            raise TypeError("delta is required with epsilon")
        target = {"epsilon": check_positive(epsilon, "epsilon"), "delta": check_delta(delta)}
    else:
        target = {"rho": rho}
    dim = sum(p.numel() for _, p in trainable(model))
    if dim == 0:
        raise ValueError("model has no trainable parameters")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer)}")
    check_optimizer_params(optimizer, model)  # before anything is charged
    source = make_noise_source(random_state, name="random_state")
    # the gradients are written in the parameters' dtypes: room 2^(bits / 2) below each range
    limit = min(_room(torch.finfo(p.dtype)) for _, p in trainable(model))
    n = len(data_loader.dataset)
    if sampling == "fixed-epoch":
        if groups != 1:
            raise ValueError("groups applies to sampling='poisson' only")
        sampler, stream, ledger, divisor = _fixed_epoch(
            n, batch, epochs, clip, noise, noise_mode, target, ledger, source, dim, limit, sums
        )
        max_summands = batch
    else:
        if n_public is None:
            raise ValueError(
                "n_public is required with sampling='poisson' (add/remove: the dataset size "
                "is private); pass the public dataset size"
            )
        n_public = check_int(n_public, "n_public", low=1)
        groups = check_int(groups, "groups", low=1, high=n_public)  # public n only
        sampler, stream, ledger, divisor = _poisson(
            n_public, batch, epochs, clip, noise, groups, target, ledger, source, n, dim, limit
        )
        max_summands = n
    private_optimizer = DPOptimizer(
        optimizer,
        model=model,
        loss_fn=loss_fn,
        stream=stream,
        clip=clip,
        batch_size=divisor,
        max_summands=max_summands,
        # Poisson: insertions shift the chunks, so float64 sums
        exact_sum=sampling == "poisson" or sums == "float64",
    )
    collate = data_loader.collate_fn or default_collate
    loader = PrivateDataLoader(data_loader.dataset, sampler, collate, private_optimizer)
    return PrivateTraining(
        model=model,
        optimizer=private_optimizer,
        data_loader=loader,
        ledger=ledger,
        stream=stream,
        steps=sampler.steps,
    )
