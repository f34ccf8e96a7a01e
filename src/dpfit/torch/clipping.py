"""Per-sample gradients of a PyTorch model with ``torch.func``, clipped and summed in float64.

``torch.func.vmap(torch.func.grad(...))`` gives every example's gradient in one batched pass.
The per-example norms and the clip factors are computed in float64 by
:func:`dpfit.mechanisms.clip_factors` (the library's one clipping rule: exact bound with a
2^-40 margin, non-finite gradients zeroed), and the clipped gradients are summed in float64,
so the sum has sensitivity 2 x clip per step under replace-one whatever the model's dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from .._validation import check_positive
from ..mechanisms import clip_factors

__all__ = ["ClippedSum", "clipped_grad_sum", "flat_dim"]


def flat_dim(model: nn.Module) -> int:
    """Number of trainable parameters p (the dimension of the privatised gradient)."""
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


@dataclass(frozen=True, slots=True)
class ClippedSum:
    """The sum of per-example clipped gradients, flattened in ``model.parameters()`` order.

    ``clipped`` is the number of examples whose gradient was scaled down (**non-private**).
    """

    value: np.ndarray
    clipped: int


def clipped_grad_sum(
    model: nn.Module,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    clip: float,
) -> ClippedSum:
    """Sum over the batch of each example's gradient clipped to L2 norm ``clip``.

    Parameters
    ----------
    model : torch.nn.Module
        The model; its trainable parameters define the gradient (buffers are held fixed).
    loss_fn : callable
        ``loss_fn(output, target)`` for ONE example (as called under ``vmap``), e.g.
        ``lambda out, y: torch.nn.functional.cross_entropy(out, y)`` with the batch dimension
        added back by this function.
    inputs, targets : torch.Tensor
        One batch; the first dimension indexes examples.
    clip : float
        Per-example L2 bound.

    Returns
    -------
    ClippedSum
        float64 vector of length :func:`flat_dim` ``(model)``.
    """
    clip = check_positive(clip, "clip")
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    params = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    buffers = {n: b.detach() for n, b in model.named_buffers()}

    def example_loss(prm, x, y):
        out = functional_call(model, (prm, buffers), (x.unsqueeze(0),))
        return loss_fn(out, y.unsqueeze(0))

    per_example = vmap(grad(example_loss), in_dims=(None, 0, 0))(params, inputs, targets)
    grads = [per_example[n].reshape(inputs.shape[0], -1).to(torch.float64) for n in names]
    sq = sum((g * g).sum(dim=1) for g in grads)
    norms = torch.sqrt(sq).cpu().numpy()
    norms = np.where(np.isfinite(norms), norms, np.inf)
    factors = clip_factors(norms, clip)
    f = torch.from_numpy(factors).to(grads[0].device)
    parts = [torch.where(f[:, None] > 0, g * f[:, None], 0.0).sum(dim=0) for g in grads]
    value = torch.cat(parts).cpu().numpy()
    return ClippedSum(value=value, clipped=int(np.count_nonzero(factors < 1.0)))
