"""Private training of PyTorch models (optional extra: ``pip install 'dpfit[torch]'``).

:func:`make_private` returns a model, a :class:`DPOptimizer` and a private data loader in
which dpfit owns the batch sampler, the per-example clipping, the noise stream and the
accounting; no step accepts a gradient it did not clip itself. See ``docs/tutorial-torch.md``.
"""

from .engine import PrivateDataLoader, PrivateTraining, make_private
from .optimizer import DPOptimizer
from .samplers import FixedEpochSampler, PoissonSampler

__all__ = [
    "DPOptimizer",
    "FixedEpochSampler",
    "PoissonSampler",
    "PrivateDataLoader",
    "PrivateTraining",
    "make_private",
]
