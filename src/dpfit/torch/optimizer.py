"""An optimizer wrapper that privatises clipped gradient sums with a correlated-noise stream.

Phases of one :meth:`CorrelatedNoiseOptimizer.step` (after Opacus' ``DPOptimizer``):

1. *privatise*: ``stream.privatize(clipped_sum)`` adds the step's correlated noise; the noise is
   drawn only inside :mod:`dpfit.mechanisms` and the whole run was charged once when the stream
   was built (:func:`dpfit.noise.correlated_noise`);
2. *average*: divide by the public ``batch_size`` (never the actual batch length);
3. *write*: copy the result into each parameter's ``.grad`` in the model's dtype;
4. *update*: the wrapped optimizer steps (momentum, schedules: post-processing).

The stream's participation pattern must match how batches are formed (e.g. a fixed order of
fixed-size batches: ``participations=epochs``, ``separation=steps per epoch``).
"""

from __future__ import annotations

import numpy as np
import torch

from .._validation import check_int
from ..noise import NoiseStream

__all__ = ["CorrelatedNoiseOptimizer"]


class CorrelatedNoiseOptimizer:
    """Wrap ``optimizer`` so each step uses a privatised mean gradient.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        Any first-order optimizer over the model's trainable parameters.
    stream : dpfit.noise.NoiseStream
        Charged correlated-noise stream with ``dim`` = number of trainable parameters.
    batch_size : int
        Public batch size B dividing the privatised sum.

    Examples
    --------
    See ``docs/choquettechoo2024.md`` for a complete training loop.
    """

    def __init__(
        self, optimizer: torch.optim.Optimizer, stream: NoiseStream, *, batch_size: int
    ) -> None:
        if not isinstance(stream, NoiseStream):
            raise TypeError(
                f"stream must be a dpfit.noise.NoiseStream, got {type(stream).__name__}"
            )
        self.optimizer = optimizer
        self.stream = stream
        self.batch_size = check_int(batch_size, "batch_size", low=1)
        self._params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
        dim = sum(p.numel() for p in self._params)
        if dim != stream.dim:
            raise ValueError(f"the optimizer has {dim} parameters, the stream dim={stream.dim}")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the wrapped optimizer's gradients."""
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, clipped_sum: np.ndarray) -> np.ndarray:
        """Privatise ``clipped_sum`` (see :func:`dpfit.torch.clipped_grad_sum`), then step.

        Returns the released mean gradient (float64), a privatised value safe to log.
        """
        mean = self.stream.privatize(np.asarray(clipped_sum, dtype=np.float64)) / self.batch_size
        offset = 0
        for p in self._params:
            chunk = mean[offset : offset + p.numel()].reshape(p.shape)
            p.grad = torch.from_numpy(chunk).to(dtype=p.dtype, device=p.device)
            offset += p.numel()
        self.optimizer.step()
        return mean
