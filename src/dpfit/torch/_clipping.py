"""Per-sample clipped gradient sums of a PyTorch model with ``torch.func`` (library-internal).

``vmap(grad(loss of one example))`` gives every example's gradient in one batched pass. The
per-example norms are computed in float64 and turned into clip factors by
:func:`dpfit.mechanisms.clip_factors` (the library's one clipping rule: the bound with a
2^-40 margin, non-finite gradients zeroed); the scaled gradients are summed in float64.
A float32 clipped gradient is rounded once when scaled (relative error 2^-24), which the
margin alone does not cover, so float32 models get their own margin of 2^-20 (with norms
from float64 arithmetic the scaled vector then provably has norm <= clip). The float64 sum
of n such vectors moves by at most :func:`dpfit.privacy.sum_sensitivity` ``(clip, n=n)``
when one record changes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from ..mechanisms import clip_factors, row_norms

__all__: list[str] = []

#: Extra relative shrink of the clip factor for float32 gradients (see module docstring).
FLOAT32_MARGIN = 1.0 - 2.0**-20


def trainable(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """The (name, parameter) pairs that are trained, in ``model.named_parameters()`` order."""
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def clipped_sum(
    model: nn.Module,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    inputs: torch.Tensor,
    targets: torch.Tensor,
    clip: float,
) -> tuple[list[torch.Tensor], int]:
    """Per-parameter float64 sums of the batch's gradients, each clipped to norm ``clip``.

    Returns the sums (shaped like the parameters) and the **non-private** number of
    examples whose gradient was scaled down.
    """
    named = trainable(model)
    params = {n: p.detach() for n, p in named}
    buffers = {n: b.detach() for n, b in model.named_buffers()}
    if inputs.shape[0] == 0:  # an empty Poisson batch: the sum is zero
        return [torch.zeros_like(p, dtype=torch.float64) for _, p in named], 0

    def example_loss(prm, x, y):
        out = functional_call(model, (prm, buffers), (x.unsqueeze(0),))
        return loss_fn(out, y.unsqueeze(0))

    per_example = vmap(grad(example_loss), in_dims=(None, 0, 0))(params, inputs, targets)
    grads = [per_example[n].reshape(inputs.shape[0], -1) for n, _ in named]
    sq = sum(torch.linalg.vector_norm(g, dim=1, dtype=torch.float64) ** 2 for g in grads)
    norms = torch.sqrt(sq).cpu().numpy()
    redo = ~np.isfinite(norms)  # overflowing float64 squares: the scaled route
    if redo.any():
        rows = torch.cat([g[torch.from_numpy(redo)].double() for g in grads], dim=1)
        norms[redo] = row_norms(rows.cpu().numpy())
    factors = clip_factors(norms, clip)
    if any(g.dtype != torch.float64 for g in grads):
        factors = factors * FLOAT32_MARGIN
    f = torch.from_numpy(factors).to(grads[0].device)
    keep = f > 0
    sums = []
    for (_, p), g in zip(named, grads, strict=True):
        scaled = torch.where(keep[:, None], g * f.to(g.dtype)[:, None], 0.0)
        sums.append(scaled.sum(dim=0, dtype=torch.float64).reshape(p.shape))
    return sums, int(np.count_nonzero(factors < 1.0))
