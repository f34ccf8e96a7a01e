"""Book-keeping clipping for models made of ``nn.Linear`` layers (library-internal).

For a linear layer z = W a + b the gradient of one example's loss is G_b a_b^T for W and G_b
for b, where a_b is the layer's input and G_b = d loss_b / d z_b. Writing A_b = [a_b, 1] (the
1 for a trainable bias), the example's gradient in that layer is the outer product G_b A_b^T,
whose squared norm is ||G_b||^2 ||A_b||^2, and the sum of the clipped gradients is
(f * G)^T A: one matrix product per layer. So one forward pass that keeps every layer's A,
and one backward pass of the summed per-example losses that returns every layer's G, give
the clipped sum without the B x p per-example gradients ("book-keeping", Bu, Wang, Zha &
Karypis 2023, arXiv 2210.00038; Opacus' ghost clipping needs a second backward pass instead).

It applies only where it is exact: a plain ``nn.Sequential`` (nested allowed) of
``nn.Linear`` layers, each called once on 2-D inputs (batch, features), and parameter-free
modules from :data:`ELEMENTWISE` (they act on each example alone), with no hooks, and every
trainable parameter a float32 weight or bias of one of those layers. Anything else (other
layers, batch coupling such as BatchNorm, other dtypes) uses the general ``vmap(grad)`` route.

Each example's loss is ``loss_fn`` on a batch of that ONE example, as in the vmap route
(``torch.func.vmap`` over the outputs, or, for ``cross_entropy`` and ``nll_loss``, the same
per-example losses of the whole batch, ``reduction="none"``), so G_b depends on example b
alone.

Rounding (the declared sensitivity must hold for the computed sum; see
:mod:`dpfit.torch._rounding`):

* norms: ||G_b||^2 is a float64 sum of exact squares of float32 entries (a float32 square
  fits in float64 exactly and cannot overflow there; the root taken and squared back adds
  two float64 roundings); ||A_b||^2 comes from float32 norms of blocks of 1024 entries,
  squared and added in float64, as the vmap route's norms (a block norm is at least
  sqrt(1 - gamma_1024) (1 - u) times the exact one; a row whose block norm overflows is
  recomputed exactly). Their product, added over layers in float64, is then at least
  (1 - gamma_1024) (1 - u)^2 (1 - 2^-50) times the exact squared norm, so the per-example
  norm is at least FLOAT32_MARGIN / (1 - u) (1 - 2^-51) times the exact one and the clip
  factor's margin :data:`~dpfit.torch._rounding.FLOAT32_MARGIN` (the vmap route's) keeps
  f_b ||g_b|| <= clip in exact arithmetic;
* float32 sums (fixed-epoch): with r_b = 1 where the computed ||A_b|| = n_b lies in
  [2^-8, 2^8] and r_b = fl32(1 / n_b) otherwise (so r_b > 0), A_b is scaled by r_b in
  float32 (not at all when every r_b is 1) and G_b by f_b / r_b in float64, then rounded to
  float32. r_b cancels exactly in the product, however inexact it is, so each term
  f_b G_bj A_bk gets at most two float32 and two float64 roundings on top of the chunk's
  inner product: within the EXTRA_ROUNDINGS of
  :func:`~dpfit.torch._rounding.chunked_sum_excess`. The scaling keeps |A'_bk| and
  |G'_bj| / clip below 2^8 (r_b = fl32(1 / n_b) is within 2^-5 of 1 / n_b relatively even
  where it is subnormal, as n_b < 2^144), so subnormal results lose at most
  2^-150 x 2^8 max(1, clip) each (far below one rounding of a term), and no product or
  chunk sum overflows float32 while clip <= MAX_FAST_CLIP (2^16 x 128 x 1e30 < 3.4e38).
  Each row's r_b depends on that row alone;
* float64 sums (Poisson sampling): the record's vector is fl(f_b G_b) A_b^T, of norm at most
  clip thanks to the same margin, and each coordinate of (f * G)^T A is a float64 inner
  product of n terms, the error form of :func:`dpfit.privacy.float_sum_excess`;
* non-finite values: a row whose A_b or G_b (in any layer) is not finite gets the factor 0
  (:func:`dpfit.mechanisms.clip_factors`) and is zeroed. The decision is per row, so the
  other rows' vectors, and the other chunks, do not depend on it; a switch of the whole
  batch to the vmap route would change every row's rounding and break the one-chunk bound.

Like the vmap route, this relies on rows of a matrix product being computed independently
of the other rows' values, so a record's A_b, G_b depend on that record alone. That holds
for a fixed batch shape (fixed-epoch sampling), not across shapes: under add/remove the
float32 kernels of a batch one row shorter may round the other rows differently. The clip
factor's margin leaves about 3e-5 clip of slack per record to absorb that; the deviation
measured in ``tests/torch/test_bookkeeping.py`` (up to 2e-7 clip at 200 rows, the vmap
route alike) is far below it, but it is measured, not proved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import vmap

from ..mechanisms import clip_factors
from ._rounding import CHUNK, FLOAT32_MARGIN, MAX_FAST_CLIP, MIN_FAST_CLIP, float32_sq_norms

__all__: list[str] = []

#: Parameter-free modules that act on each example (each row) alone.
ELEMENTWISE = (
    nn.ReLU,
    nn.Tanh,
    nn.Sigmoid,
    nn.GELU,
    nn.SiLU,
    nn.LeakyReLU,
    nn.ELU,
    nn.Softplus,
    nn.Identity,
)
_MAX_WIDTH = 2**30
#: Rows whose input norm lies in this range are not rescaled (module docstring).
_UNSCALED = (2.0**-8, 2.0**8)


@dataclass(frozen=True, eq=False)
class _Layer:
    """A linear layer and where its trainable weight and bias sit in the flat gradient."""

    module: nn.Linear
    weight: slice | None
    bias: slice | None


def _leaves(module: nn.Module) -> list[nn.Module] | None:
    """The modules a plain ``nn.Sequential`` applies in turn (nested ones flattened)."""
    if type(module) is not nn.Sequential:
        return [module]
    out: list[nn.Module] = []
    for child in module:
        sub = _leaves(child)
        if sub is None:
            return None
        out.extend(sub)
    return out


_HOOKS = ("forward_hooks", "forward_pre_hooks", "backward_hooks", "backward_pre_hooks")


def _hooked(module: nn.Module) -> bool:
    """Whether a hook (the module's own or a global one) could see the whole batch."""
    return any(getattr(module, f"_{name}") for name in _HOOKS) or any(
        getattr(torch.nn.modules.module, f"_global_{name}") for name in _HOOKS
    )


def _allowed(m: nn.Module) -> bool:
    if type(m) is nn.Linear:
        return m.in_features < _MAX_WIDTH and m.out_features < _MAX_WIDTH
    if type(m) is nn.Flatten:
        return m.start_dim == 1 and m.end_dim == -1
    return type(m) in ELEMENTWISE


def linear_plan(model: nn.Module, clip: float) -> list[nn.Module] | None:
    """The modules in order, with each trainable ``nn.Linear`` as a :class:`_Layer`; or None.

    None means book-keeping does not apply (module docstring): the caller uses vmap. The
    answer depends on the model's structure, dtypes and ``clip`` only, never on data.
    """
    if not MIN_FAST_CLIP <= clip <= MAX_FAST_CLIP:
        return None
    leaves = _leaves(model)
    if leaves is None or len({id(m) for m in leaves}) != len(leaves):
        return None
    if any(_hooked(m) for m in model.modules()) or not all(_allowed(m) for m in leaves):
        return None
    offsets, start = {}, 0
    for p in model.parameters():
        if p.requires_grad:
            offsets[id(p)] = slice(start, start + p.numel())
            start += p.numel()
    if not offsets:
        return None
    plan: list[nn.Module] = []
    covered: list[slice] = []  # each trainable parameter exactly once (none shared)
    for m in leaves:
        if type(m) is not nn.Linear:
            plan.append(m)
            continue
        if m.weight.dtype != torch.float32:
            return None
        w = offsets.get(id(m.weight))
        b = offsets.get(id(m.bias)) if m.bias is not None else None
        covered += [s for s in (w, b) if s is not None]
        plan.append(_Layer(m, w, b) if w is not None or b is not None else m)
    starts = sorted(s.start for s in covered)
    return plan if starts == sorted(s.start for s in offsets.values()) else None


def _input_sq(a: torch.Tensor) -> torch.Tensor:
    """float64 squared row norms of a layer's float32 inputs from float32 block norms
    (:func:`~dpfit.torch._rounding.float32_sq_norms`: a fifth of the exact cost on wide
    layers); rows whose float32 norm overflowed (or is NaN) are recomputed by :func:`_sq`."""
    sq = float32_sq_norms(a)
    redo = ~torch.isfinite(sq)
    if bool(redo.any()):
        sq[redo] = _sq(a[redo])
    return sq


def _sq(t: torch.Tensor) -> torch.Tensor:
    """float64 squared row norms: the float32 entries cast to float64 before they are
    squared (exact) and summed, then the root squared back (two more float64 roundings)."""
    return torch.linalg.vector_norm(t, dim=1, dtype=torch.float64).square()


def bookkeeping_clipped_sum(
    plan: list[nn.Module],
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    inputs: torch.Tensor,
    targets: torch.Tensor,
    clip: float,
    dim: int,
    *,
    exact: bool,
    zero: np.ndarray | None = None,
) -> tuple[torch.Tensor, int] | None:
    """Flat float64 clipped sum by book-keeping, as :func:`dpfit.torch._clipping.clipped_sum`;
    the examples marked in ``zero`` get the clip factor 0.

    Returns None when a linear layer's input is not 2-D (a shape, hence public): the caller
    then uses the vmap route.
    """
    n = inputs.shape[0]
    captured: list[tuple[_Layer, torch.Tensor, torch.Tensor]] = []
    with torch.enable_grad():
        x = inputs
        for m in plan:
            if isinstance(m, _Layer):
                if x.dim() != 2:
                    return None
                z = m.module(x)
                captured.append((m, x.detach(), z))
                x = z
            else:
                x = m(x)
        batched = getattr(loss_fn, "batched", None)  # a guarded class-index loss
        losses = None if batched is None else batched(x, targets)
        if losses is None:
            losses = vmap(lambda o, t: loss_fn(o.unsqueeze(0), t.unsqueeze(0)))(x, targets)
        if losses.shape != (n,):
            raise ValueError("loss_fn must return one number for a batch of one example")
        zs = [z for _, _, z in captured]
        grads = torch.autograd.grad(losses.sum(), zs, allow_unused=True)
    rows = []  # per layer: (layer, G, a, ||A_b||^2), A = [a, 1] as the parameters need
    sq = torch.zeros(n, dtype=torch.float64, device=inputs.device)
    for (layer, a, z), g in zip(captured, grads, strict=True):
        g = torch.zeros_like(z) if g is None else g.detach()
        sq_a = _input_sq(a) if layer.weight is not None else torch.zeros_like(sq)
        if layer.bias is not None:
            sq_a += 1.0  # the bias's column of ones
        sq += _sq(g) * sq_a
        rows.append((layer, g, a, sq_a))
    norms = torch.sqrt(sq).cpu().numpy()
    factors = clip_factors(norms, clip) * FLOAT32_MARGIN
    if zero is not None:
        factors[zero] = 0.0
    bad = torch.from_numpy(~np.isfinite(norms)).to(inputs.device)
    f = torch.from_numpy(factors).to(inputs.device)
    out = torch.zeros(dim, dtype=torch.float64, device=inputs.device)
    any_bad = bool(bad.any())
    for layer, g, a, sq_a in rows:
        if exact:
            gs = g * f[:, None]  # float64: g is cast exactly
            inputs_w = a.double() if layer.weight is not None else None
            ones = torch.ones(n, dtype=torch.float64, device=a.device)
        else:
            norm_a = torch.sqrt(sq_a)
            unscaled = (norm_a >= _UNSCALED[0]) & (norm_a <= _UNSCALED[1])
            norm_a = torch.where(torch.isfinite(norm_a) & (norm_a > 0), norm_a, 1.0)
            r = torch.where(unscaled, 1.0, 1.0 / norm_a).float()  # > 0: norm_a < 2^144
            gs = (g * (f / r.double())[:, None]).float()  # the product in float64
            inputs_w = None
            if layer.weight is not None:  # a x 1 is a: no pass when no row is scaled
                inputs_w = a if bool(unscaled.all()) else a * r[:, None]
            ones = r  # the bias's column of ones, scaled
        if any_bad:
            gs = gs.masked_fill(bad[:, None], 0.0)
            ones = ones.masked_fill(bad, 0.0)
            if inputs_w is not None:
                inputs_w = inputs_w.masked_fill(bad[:, None], 0.0)
        _add_chunks(out, layer, gs, inputs_w, ones, n if exact else CHUNK)
    return out, int(np.count_nonzero(factors < FLOAT32_MARGIN))


def _add_chunks(
    out: torch.Tensor,
    layer: _Layer,
    gs: torch.Tensor,
    inputs_w: torch.Tensor | None,
    ones: torch.Tensor,
    step: int,
) -> None:
    """Write the layer's clipped sums into ``out``: sum_b G'_b A'_b^T over chunks of ``step``
    rows, each chunk one matrix product in the factors' dtype, the chunks added in float64;
    the weight's columns ``inputs_w`` (a, scaled) and the bias's column ``ones`` (scaled) as
    two products, so no [a, 1] is formed."""
    width = gs.shape[1]
    weight = bias = None
    if inputs_w is not None:
        weight = torch.zeros(width, inputs_w.shape[1], dtype=torch.float64, device=out.device)
    if layer.bias is not None:
        bias = torch.zeros(width, dtype=torch.float64, device=out.device)
    for s in range(0, gs.shape[0], step):
        g = gs[s : s + step].T
        if weight is not None:
            weight += (g @ inputs_w[s : s + step]).double()
        if bias is not None:
            bias += (g @ ones[s : s + step]).double()
    if weight is not None:
        out[layer.weight] = weight.reshape(-1)
    if bias is not None:
        out[layer.bias] = bias
