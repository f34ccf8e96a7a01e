"""An example on which the model or the loss fails contributes zero (library-internal).

The whole run is charged before the first step, so an exception raised at a step by one
example (a label outside the classes: ``index 3 is out of bounds``) would come after the
charge, and both its message (the value) and its step (when the record was sampled) point
at the record. Two layers make such an example contribute exactly zero to its step's sum,
the other examples unchanged:

* **class-index losses** (``torch.nn.functional.cross_entropy``, ``nll_loss`` and their
  ``nn.CrossEntropyLoss``/``nn.NLLLoss`` modules, the tutorial's loss): :func:`guard_loss`
  checks each example's integer target against the number of classes C of the model's output
  (its dimension 1, a public shape) and evaluates the loss on class 0 for a target outside
  [0, C), keeping only the valid examples' losses: ``torch.where`` gives the invalid ones a
  loss, hence a gradient, of exactly zero. No exception is raised at all, so this also holds
  on an accelerator, where an out-of-range index is a device-side assertion that no
  ``except`` can recover from. (``ignore_index``, -100 by default, is outside [0, C) too: the
  loss of one ignored example is 0 / 0 in PyTorch, a non-finite gradient that clipping zeroes
  anyway.)
* **any other failure**: :func:`dpfit.torch._clipping.clipped_sum` evaluates the batch through
  :func:`dpfit._records.evaluate_records`: when the batch raises, the examples that raise
  alone are found (by bisection), replaced by another example of the batch (or an all-zero
  one) and get the clip factor 0, and the batch is computed again at the same shape, so the
  other examples' gradients, and the rounding bound of their sum, are those of a batch
  without the failure. A batch that raises although no example does alone stops the run with
  a fixed :class:`~dpfit.exceptions.DataError` that names no value and no step.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.nn import functional as F  # noqa: N812 - PyTorch's own spelling

__all__ = ["guard_loss"]

#: Losses whose target is a class index along the output's dimension 1.
_CLASS_INDEX_FUNCTIONS = (F.cross_entropy, F.nll_loss)
_CLASS_INDEX_MODULES = (torch.nn.CrossEntropyLoss, torch.nn.NLLLoss)

Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _class_index_loss(loss_fn: Loss) -> bool:
    return loss_fn in _CLASS_INDEX_FUNCTIONS or isinstance(loss_fn, _CLASS_INDEX_MODULES)


def guard_loss(loss_fn: Loss) -> Loss:
    """``loss_fn`` with a target outside the classes giving a loss of exactly zero, for the
    class-index losses (module docstring); any other ``loss_fn`` as it is.

    The guarded loss is called as the per-example loss is (a batch of ONE example, under
    ``torch.func.vmap``); targets that are not integer class indices (class probabilities of
    the output's shape) are passed through unchanged.
    """
    if not _class_index_loss(loss_fn):
        return loss_fn
    return _GuardedLoss(loss_fn)


class _GuardedLoss:
    """:func:`guard_loss`'s loss: callable on a batch of one example, and, for the plain
    functions ``cross_entropy`` and ``nll_loss``, on a whole batch at once (:meth:`batched`)."""

    def __init__(self, loss_fn: Loss) -> None:
        self._loss_fn = loss_fn

    def __call__(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss_fn = self._loss_fn
        if target.is_floating_point() or target.dim() != output.dim() - 1:
            return loss_fn(output, target)
        valid = ((target >= 0) & (target < output.shape[1])).all()
        loss = loss_fn(output, torch.where(valid, target, torch.zeros_like(target)))
        return torch.where(valid, loss, torch.zeros_like(loss))

    def batched(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor | None:
        """Every example's loss at once, ``(B,)``: what this loss gives on each example as a
        batch of one (the function's ``reduction="none"`` on (B, C) outputs: a batch of one's
        mean is its one loss), for the plain functions only (a module may weight or smooth);
        None otherwise (the caller evaluates the examples one by one under ``vmap``)."""
        if self._loss_fn not in _CLASS_INDEX_FUNCTIONS or output.dim() != 2:
            return None
        if target.is_floating_point():
            return self._loss_fn(output, target, reduction="none") if target.dim() == 2 else None
        if target.dim() != 1:
            return None
        valid = (target >= 0) & (target < output.shape[1])
        loss = self._loss_fn(output, torch.where(valid, target, 0), reduction="none")
        return torch.where(valid, loss, torch.zeros_like(loss))
