"""Per-sample clipped gradient sums of a PyTorch model with ``torch.func`` (library-internal).

``vmap(grad(loss of one example))`` gives every example's gradient in one batched pass; the
clip factors come from :func:`dpfit.mechanisms.clip_factors` (the library's one clipping
rule: the bound with a 2^-40 margin, non-finite gradients zeroed). Two summation routes,
both with a proven rounding bound that the declared sensitivity includes:

* ``exact=True`` (float64): every clipped gradient is converted to float64 and summed there;
  one record moves the computed sum of n summands by at most
  :func:`dpfit.privacy.sum_sensitivity` ``(clip, n=n)`` (Higham 2002, eq. 4.4).
* ``exact=False`` (float32 models, fixed batch positions): the batch is cut into chunks of
  :data:`CHUNK` consecutive rows; each chunk's weighted sum sum_b f_b g_b is one float32
  matrix-vector product, and the chunk sums are added in float64. A float32 inner product of
  c terms errs by at most gamma_c sum_b |f_b g_b| (u = 2^-24), so a chunk's sum moves by at
  most gamma_c c clip beyond the exact sum; under replace-one with the library's fixed batch
  positions a record changes ONE chunk, and the float64 additions of the m = n / c chunk sums
  add gamma^64_m (1 + gamma_c) n clip per sum. Hence :func:`chunked_sum_excess`
  = 2 gamma_c c clip + 2 gamma^64_m (1 + gamma_c) n clip (1.2e-4 clip at n = 256), declared
  through ``sum_excess``. About 4x cheaper than converting B x p gradients to float64.

Norms for the fast route are float32 norms of blocks of :data:`NORM_BLOCK` entries, squared
and added in float64; a computed block norm is at least sqrt(1 - gamma_1024) (1 - u) times the
true one, so the clip factor gets the extra margin :data:`FLOAT32_MARGIN` (also covering the
rounding of the factor to float32), which keeps f_b ||g_b|| <= clip in exact arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from ..mechanisms import clip_factors, row_norms

__all__: list[str] = []

_U32, _U64 = 2.0**-24, 2.0**-53
#: Rows per float32 chunk of the fast sum.
CHUNK = 32
#: Entries per float32 block of the fast norms.
NORM_BLOCK = 1024
#: Below this clip, float32 underflow could matter: the fast route is not used.
_MIN_FAST_CLIP = 1e-12


def _gamma(k: int, u: float) -> float:
    """gamma_k = k u / (1 - k u) (Higham 2002, Lemma 3.1)."""
    return k * u / (1.0 - k * u)


#: Extra factor on float32 clip factors (module docstring).
FLOAT32_MARGIN = math.sqrt(1.0 - _gamma(NORM_BLOCK, _U32)) * (1.0 - _U32) ** 2


def chunked_sum_excess(clip: float, n: int) -> float:
    """How much further than exactly one record moves the fast sum of ``n`` (module docstring)."""
    c = min(CHUNK, n)
    m = math.ceil(n / c)
    g32 = _gamma(c, _U32)
    return 2.0 * g32 * c * clip + 2.0 * _gamma(m, _U64) * (1.0 + g32) * n * clip


def trainable(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """The (name, parameter) pairs that are trained, in ``model.named_parameters()`` order."""
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def _float32_norms(g: torch.Tensor) -> torch.Tensor:
    """float64 squared row norms of a float32 (B, p) tensor, from float32 block norms."""
    B, p = g.shape
    g = g.contiguous()
    nb = p // NORM_BLOCK
    sq = torch.zeros(B, dtype=torch.float64, device=g.device)
    if nb:
        blocks = g.as_strided((B, nb, NORM_BLOCK), (p, NORM_BLOCK, 1))
        sq += (torch.linalg.vector_norm(blocks, dim=2).double() ** 2).sum(dim=1)
    if p > nb * NORM_BLOCK:
        sq += torch.linalg.vector_norm(g[:, nb * NORM_BLOCK :], dim=1).double() ** 2
    return sq


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
    exact one, and norms of float32 gradients always come from float32 blocks. Returns the
    sum (in ``model.parameters()`` order) and the **non-private** number of examples whose
    gradient was scaled down.
    """
    named = trainable(model)
    dim = sum(p.numel() for _, p in named)
    device = named[0][1].device
    n = inputs.shape[0]
    if n == 0:  # an empty Poisson batch: the sum is zero
        return torch.zeros(dim, dtype=torch.float64, device=device), 0
    params = {name: p.detach() for name, p in named}
    buffers = {name: b.detach() for name, b in model.named_buffers()}

    def example_loss(prm, x, y):
        out = functional_call(model, (prm, buffers), (x.unsqueeze(0),))
        return loss_fn(out, y.unsqueeze(0))

    per_example = vmap(grad(example_loss), in_dims=(None, 0, 0))(params, inputs, targets)
    grads = [per_example[name].reshape(n, -1) for name, _ in named]
    float32 = clip >= _MIN_FAST_CLIP and all(g.dtype == torch.float32 for g in grads)
    fast = float32 and not exact
    if float32:
        sq = sum(_float32_norms(g) for g in grads)
    else:
        sq = sum(torch.linalg.vector_norm(g.double(), dim=1) ** 2 for g in grads)
    norms = torch.sqrt(sq).cpu().numpy()
    redo = ~np.isfinite(norms)  # overflow (or NaN): the library's scaled float64 route
    if redo.any():
        mask = torch.from_numpy(redo).to(device)
        rows = torch.cat([g[mask].double() for g in grads], dim=1)
        norms[redo] = row_norms(rows.cpu().numpy())
    factors = clip_factors(norms, clip)
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
