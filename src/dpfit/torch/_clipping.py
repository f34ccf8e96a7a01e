"""Per-sample clipped gradient sums of a PyTorch model (library-internal).

Two routes, chosen from the model's structure, dtypes and the clip (never from data):

* book-keeping (:mod:`dpfit.torch._bookkeeping`) for float32 models made of ``nn.Linear``
  layers and element-wise activations: per-example norms from layer inputs and output
  gradients, one forward and one backward pass, no per-example gradients;
* ``vmap(grad(loss of one example))`` for every other model: every example's gradient in
  one batched pass.

Clip factors come from :func:`dpfit.mechanisms.clip_factors` (the library's one clipping
rule: the bound with a 2^-40 margin, non-finite gradients zeroed). Two summation routes, both
with a proven rounding bound that the declared sensitivity includes:

* ``exact=True`` (float64): the clipped gradients are summed in float64; one record moves
  the computed sum of n summands by at most :func:`dpfit.privacy.sum_sensitivity`
  ``(clip, n=n)`` (Higham 2002, eq. 4.4).
* ``exact=False`` (float32 models, fixed batch positions): chunks of
  :data:`~dpfit.torch._rounding.CHUNK` rows summed in float32, chunk sums added in float64,
  with the excess :func:`~dpfit.torch._rounding.chunked_sum_excess` declared through
  ``sum_excess`` (the bound is proved in :mod:`dpfit.torch._rounding`).

The vmap route's norms of float32 gradients are float32 norms of blocks of
:data:`~dpfit.torch._rounding.NORM_BLOCK` entries, squared and added in float64; a computed
block norm is at least sqrt(1 - gamma_1024) (1 - u) times the true one, so the clip factor
gets the extra margin :data:`~dpfit.torch._rounding.FLOAT32_MARGIN` (also covering the
rounding of the factor to float32), which keeps f_b ||g_b|| <= clip in exact arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from .._records import Substitution, evaluate_records
from ..mechanisms import clip_factors, row_norms
from ._bookkeeping import bookkeeping_clipped_sum, linear_plan
from ._rounding import CHUNK, FLOAT32_MARGIN, MIN_FAST_CLIP, float32_sq_norms

__all__: list[str] = []


def trainable(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """The (name, parameter) pairs that are trained, in ``model.named_parameters()`` order."""
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def refuse_batch_mixing(model: nn.Module) -> None:
    """Refuse layers whose output for one example depends on the other examples of its batch.

    Per-example clipping bounds one record's effect on the gradient sum only when each
    example's loss depends on that example alone (Abadi et al. 2016); BatchNorm in training
    mode normalises by the batch's mean and variance, so it breaks that (and torch.func's
    per-example gradients then fail with an in-place error). As Opacus's ModuleValidator,
    refuse it up front; in eval mode it uses fixed running statistics and is row-wise.
    """
    for name, module in model.named_modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm) and module.training:
            raise ValueError(
                f"model layer {name or type(module).__name__!r} ({type(module).__name__}): "
                "BatchNorm mixes examples in a batch; use GroupNorm/LayerNorm, or put it in "
                "eval mode (module.eval())"
            )


def clipped_sum(
    model: nn.Module,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    inputs: torch.Tensor,
    targets: torch.Tensor,
    clip: float,
    *,
    exact: bool,
) -> tuple[torch.Tensor, int]:
    """Flat float64 sum of the batch's per-example gradients, each clipped to norm ``clip``.

    ``exact`` selects the summation route (module docstring); float64 models always use the
    exact one. Returns the sum (in ``model.parameters()`` order) and the **non-private**
    number of examples whose gradient was scaled down. An example on which the model or
    ``loss_fn`` raises contributes zero (:mod:`dpfit.torch._failures`).

    Raises
    ------
    DataError
        The batch raises although no example raises alone (a fixed message).
    """
    refuse_batch_mixing(model)  # model.train() may have been called since make_private
    named = trainable(model)
    dim = sum(p.numel() for _, p in named)
    device = named[0][1].device
    n = inputs.shape[0]
    if n == 0:  # an empty Poisson batch: the sum is zero
        return torch.zeros(dim, dtype=torch.float64, device=device), 0
    plan = linear_plan(model, clip)

    def evaluate(sub: Substitution | None) -> tuple[torch.Tensor, int]:
        x, t, zero = inputs, targets, None
        if sub is not None:
            x, t, zero = _take(inputs, sub.index), _take(targets, sub.index), sub.failed
        if plan is not None:
            done = bookkeeping_clipped_sum(plan, loss_fn, x, t, clip, dim, exact=exact, zero=zero)
            if done is not None:
                return done
        return _vmap_clipped_sum(model, named, loss_fn, x, t, clip, exact=exact, zero=zero)

    # an example on which the model or loss_fn raises counts zero (dpfit/torch/_failures.py)
    done, _ = evaluate_records(evaluate, n, what="the model or loss_fn on a batch", hint=_HINT)
    return done


_HINT = (
    "call loss_fn(model(x), y) yourself under torch.func.vmap on a batch of one example, as "
    "the private step does, to see it"
)


def _take(batch: torch.Tensor, index: np.ndarray) -> torch.Tensor:
    """Rows ``index`` of ``batch``; ``-1`` is an all-zero row (:class:`Substitution`)."""
    rows = batch[torch.from_numpy(np.maximum(index, 0)).to(batch.device)]
    missing = torch.from_numpy(index < 0).to(batch.device)
    if bool(missing.any()):
        rows[missing] = 0
    return rows


def _vmap_clipped_sum(model, named, loss_fn, inputs, targets, clip, *, exact, zero=None):
    """The general route: materialised per-example gradients (module docstring); the
    examples marked in ``zero`` get the clip factor 0."""
    dim = sum(p.numel() for _, p in named)
    device = named[0][1].device
    n = inputs.shape[0]
    params = {name: p.detach() for name, p in named}
    buffers = {name: b.detach() for name, b in model.named_buffers()}

    def example_loss(prm, x, y):
        out = functional_call(model, (prm, buffers), (x.unsqueeze(0),))
        return loss_fn(out, y.unsqueeze(0))

    per_example = vmap(grad(example_loss), in_dims=(None, 0, 0))(params, inputs, targets)
    grads = [per_example[name].reshape(n, -1) for name, _ in named]
    float32 = clip >= MIN_FAST_CLIP and all(g.dtype == torch.float32 for g in grads)
    fast = float32 and not exact
    if float32:
        sq = sum(float32_sq_norms(g) for g in grads)
    else:
        sq = sum(torch.linalg.vector_norm(g.double(), dim=1) ** 2 for g in grads)
    norms = torch.sqrt(sq).cpu().numpy()
    redo = ~np.isfinite(norms)  # overflow (or NaN): the library's scaled float64 route
    if redo.any():
        mask = torch.from_numpy(redo).to(device)
        rows = torch.cat([g[mask].double() for g in grads], dim=1)
        norms[redo] = row_norms(rows.cpu().numpy())
    factors = clip_factors(norms, clip)
    if zero is not None:
        factors[zero] = 0.0
    if float32:
        factors = factors * FLOAT32_MARGIN
    f64 = torch.from_numpy(factors).to(device)
    out = torch.empty(dim, dtype=torch.float64, device=device)
    offset = 0
    for g in grads:
        g = torch.where(torch.isfinite(g), g, 0.0) if redo.any() else g  # zero-factor rows
        acc = out[offset : offset + g.shape[1]]
        acc.zero_()
        if fast:
            f32 = f64.to(torch.float32)
            for s in range(0, n, CHUNK):
                acc += (f32[s : s + CHUNK] @ g[s : s + CHUNK]).double()
        else:
            for s in range(0, n, CHUNK):
                acc.addmv_(g[s : s + CHUNK].double().T, f64[s : s + CHUNK])
        offset += g.shape[1]
    return out, int(np.count_nonzero(factors < 1.0))
