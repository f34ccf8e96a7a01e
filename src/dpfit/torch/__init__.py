"""Correlated-noise private training for PyTorch (optional extra: ``pip install 'dpfit[torch]'``).

Per-sample clipping with ``torch.func`` and an optimizer wrapper adding the noise of a
:class:`dpfit.noise.NoiseStream`; all privacy noise comes from :mod:`dpfit.mechanisms`.
"""

from .clipping import ClippedSum, clipped_grad_sum, flat_dim
from .optimizer import CorrelatedNoiseOptimizer

__all__ = ["ClippedSum", "CorrelatedNoiseOptimizer", "clipped_grad_sum", "flat_dim"]
