"""Rounding bounds shared by the two per-example clipping routes (library-internal).

Both routes (:mod:`dpfit.torch._clipping`: ``vmap(grad)``; :mod:`dpfit.torch._bookkeeping`:
book-keeping for ``nn.Linear`` models) add their clipped per-example gradients in the same
way when the sum may be float32: the batch is cut into chunks of :data:`CHUNK` consecutive
rows, each chunk's sum is one float32 matrix product, and the chunk sums are added in float64.

Write u = 2^-24 and gamma_k = k u / (1 - k u) (Higham 2002, Lemma 3.1). Each route computes
every coordinate of a chunk's sum as sum_b v_bj (1 + theta_bj) with |theta_bj| <=
gamma_{c + EXTRA_ROUNDINGS}, where v_b is that record's clipped vector in exact arithmetic
(with ||v_b|| <= clip) and c the chunk length: the c-term float32 inner product gives
gamma_c (Higham 2002, eq. 3.5), and at most :data:`EXTRA_ROUNDINGS` roundings of the factors
come on top (float32 conversions; float64 steps count u / 2^29 each). So a chunk's computed
sum is within gamma_{c+4} c clip of its exact sum. Under replace-one with the library's fixed
batch positions a record changes ONE chunk (the others are computed from the same rows by
the same operations), and the float64 additions of the m = n / c chunk sums add gamma^64_m
(1 + gamma_{c+4}) n clip per sum. Hence :func:`chunked_sum_excess` = 2 gamma_{c+4} c clip +
2 gamma^64_m (1 + gamma_{c+4}) n clip (2.0e-3 clip for c = 128, whatever n from 128 to
4096: 0.1% of the exact replace-one sensitivity 2 clip), declared through ``sum_excess``.
Chunks of 128 rows: at 32 (1.4e-4 clip) the float64 conversion and addition of every chunk's
product, which touch the whole (outputs x inputs) result, made the clipped sum of a 784-128
layer at B = 1000 cost twice one matrix product; at 128 it costs about one
(``benchmarks/README.md``, "PyTorch").

Underflow: for ``clip`` in [:data:`MIN_FAST_CLIP`, :data:`MAX_FAST_CLIP`] and fewer than 2^60
coordinates, the absolute errors of float32 results in the subnormal range (at most 2^-150
each, times factors of size at most 1.05 max(1, clip)) sum to far less than u c clip, one of the
EXTRA_ROUNDINGS; outside that clip range the routes sum in float64.

Norms are computed with the relative error below 2^-22 (float32 block norms of
:data:`NORM_BLOCK` entries squared and added in float64, or float64 sums of exact squares),
and the clip factor of float32 gradients gets the extra margin :data:`FLOAT32_MARGIN` =
sqrt(1 - gamma_1024) (1 - u)^2, which covers that error and keeps f_b ||g_b|| <= clip in
exact arithmetic; it leaves about 3e-5 clip of slack per record.
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "CHUNK",
    "EXTRA_ROUNDINGS",
    "FLOAT32_MARGIN",
    "MAX_FAST_CLIP",
    "MIN_FAST_CLIP",
    "NORM_BLOCK",
    "chunked_sum_excess",
    "float32_sq_norms",
]

U32, U64 = 2.0**-24, 2.0**-53
#: Rows per float32 chunk of the fast sum (module docstring).
CHUNK = 128
#: Entries per float32 block of the vmap route's norms.
NORM_BLOCK = 1024
#: Roundings of a product's factors beyond the chunk's inner product (module docstring).
EXTRA_ROUNDINGS = 4
#: Outside [MIN_FAST_CLIP, MAX_FAST_CLIP] float32 under- or overflow could matter: float64 sums.
MIN_FAST_CLIP, MAX_FAST_CLIP = 1e-12, 1e30


def gamma(k: int, u: float) -> float:
    """gamma_k = k u / (1 - k u) (Higham 2002, Lemma 3.1)."""
    return k * u / (1.0 - k * u)


#: Extra factor on float32 clip factors (module docstring).
FLOAT32_MARGIN = math.sqrt(1.0 - gamma(NORM_BLOCK, U32)) * (1.0 - U32) ** 2


def chunked_sum_excess(clip: float, n: int) -> float:
    """How much further than exactly one record moves the fast sum of ``n`` (module docstring)."""
    c = min(CHUNK, n)
    m = math.ceil(n / c)
    g32 = gamma(c + EXTRA_ROUNDINGS, U32)
    return 2.0 * g32 * c * clip + 2.0 * gamma(m, U64) * (1.0 + g32) * n * clip


def float32_sq_norms(t: torch.Tensor) -> torch.Tensor:
    """float64 squared row norms of a float32 (B, p) tensor, from float32 norms of blocks of
    :data:`NORM_BLOCK` entries squared and added in float64 (the relative error the margin
    :data:`FLOAT32_MARGIN` covers; module docstring). A block norm that overflows gives inf:
    the caller recomputes such rows."""
    B, p = t.shape
    t = t.contiguous()
    nb = p // NORM_BLOCK
    sq = torch.zeros(B, dtype=torch.float64, device=t.device)
    if nb:
        blocks = t.as_strided((B, nb, NORM_BLOCK), (p, NORM_BLOCK, 1))
        sq += (torch.linalg.vector_norm(blocks, dim=2).double() ** 2).sum(dim=1)
    if p > nb * NORM_BLOCK:
        sq += torch.linalg.vector_norm(t[:, nb * NORM_BLOCK :], dim=1).double() ** 2
    return sq
