"""A ``torch.optim.Optimizer`` that owns the whole private step: batch, clip, noise, update.

Phases of one :meth:`DPOptimizer.step` (after Opacus' ``DPOptimizer``):

1. *take the batch*: the one the private data loader (:class:`PrivateDataLoader`) yielded
   last, each batch exactly once, and only if its sampler step is the stream's next noise
   step (a record must join exactly the steps the noise was calibrated for); there is no way
   to hand the step a gradient;
2. *clip*: per-example gradients (book-keeping or ``torch.func``), clipped to the charged
   ``clip`` and summed with a proven rounding bound that the charge includes
   (:mod:`dpfit.torch._clipping`);
3. *privatise*: the stream adds the step's noise; the noise is drawn only inside
   :mod:`dpfit.mechanisms`, and the whole run was charged once when the stream was built;
4. *average*: divide by the public batch size (never the actual batch length);
5. *update*: write ``.grad`` in each parameter's dtype and step the wrapped optimizer
   (momentum, schedules: post-processing). Any other ``.grad`` the optimizer could apply
   (a raw ``backward()`` gradient) is never used: a tensor the optimizer holds that is not a
   model parameter is refused, and the gradient of a frozen model parameter is cleared.

The noise is the library's float64 NumPy stream; on CPU the tensors share memory with it
(``torch.from_numpy``), on an accelerator the noisy mean is copied to the device once.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._validation import check_positive
from ..noise import NoiseStream
from ._clipping import clipped_sum, trainable
from ._failures import guard_loss

__all__ = ["DPOptimizer", "check_optimizer_params"]


def check_optimizer_params(optimizer: torch.optim.Optimizer, model: torch.nn.Module) -> None:
    """Refuse a parameter the optimizer holds but the model does not: its ``.grad`` (e.g. a
    raw ``backward()`` gradient of the batch) would be applied unclipped and un-noised."""
    in_model = {id(p) for p in model.parameters()}
    if any(id(p) not in in_model for group in optimizer.param_groups for p in group["params"]):
        raise ValueError(
            "the optimizer holds a parameter that is not a parameter of the model: only the "
            "model's parameters get clipped, noised gradients; give that tensor its own "
            "(non-private) optimizer, or make it part of the model"
        )


class DPOptimizer(torch.optim.Optimizer):
    """Wrap ``optimizer`` so that every step is the private step of the module docstring.

    Build it with :func:`dpfit.torch.make_private`; it shares ``param_groups`` and ``state``
    with the wrapped optimizer, so learning-rate schedulers work unchanged.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        model: torch.nn.Module,
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        stream: NoiseStream,
        clip: float,
        batch_size: float,
        max_summands: int,
        exact_sum: bool,
    ) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer)}")
        if not isinstance(stream, NoiseStream):
            raise TypeError(f"stream must be a dpfit.noise.NoiseStream, got {type(stream)}")
        self.original_optimizer = optimizer
        self._model, self._loss_fn, self._stream = model, guard_loss(loss_fn), stream
        self._clip = check_positive(clip, "clip")
        self._batch_size = check_positive(batch_size, "batch_size")
        self._max_summands = max_summands
        self._exact_sum = exact_sum
        self._params = [p for _, p in trainable(model)]
        in_optimizer = {id(p) for g in optimizer.param_groups for p in g["params"]}
        if any(id(p) not in in_optimizer for p in self._params):
            raise ValueError("the optimizer must hold every trainable parameter of the model")
        check_optimizer_params(optimizer, model)
        dim = sum(p.numel() for p in self._params)
        if dim != stream.dim:
            raise ValueError(
                f"the model has {dim} trainable parameters, the stream dim={stream.dim}"
            )
        self._pending: tuple[torch.Tensor, torch.Tensor, int] | None = None

    # torch.optim.Optimizer interface, delegated to the wrapped optimizer -------------------
    @property
    def param_groups(self):  # type: ignore[override]
        return self.original_optimizer.param_groups

    @param_groups.setter
    def param_groups(self, value):
        self.original_optimizer.param_groups = value

    @property
    def state(self):  # type: ignore[override]
        return self.original_optimizer.state

    @state.setter
    def state(self, value):
        self.original_optimizer.state = value

    @property
    def defaults(self):  # type: ignore[override]
        return self.original_optimizer.defaults

    @defaults.setter
    def defaults(self, value):
        self.original_optimizer.defaults = value

    def state_dict(self):
        return self.original_optimizer.state_dict()

    def load_state_dict(self, state_dict) -> None:
        self.original_optimizer.load_state_dict(state_dict)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients (the private step overwrites them anyway)."""
        self.original_optimizer.zero_grad(set_to_none=set_to_none)

    def __repr__(self) -> str:
        return f"DPOptimizer({self.original_optimizer!r}, clip={self._clip:g})"

    def __reduce_ex__(self, protocol):
        # The stream's state mixes secret noise rows; a copy could replay or leak them (and
        # torch's Optimizer.__setstate__ would patch this class's step on unpickling).
        raise TypeError(
            "a DPOptimizer holds a charged noise stream and cannot be pickled; save "
            "model.state_dict() and optimizer.original_optimizer.state_dict() instead"
        )

    # privacy --------------------------------------------------------------------------------
    @property
    def stream(self) -> NoiseStream:
        """The charged noise stream."""
        return self._stream

    def _check_position(self, step: int) -> None:
        """Refuse a batch of sampler step ``step`` unless it is the next noise step.

        The sensitivity is that of the sampler's pattern (a record at steps i, i + b, ...;
        or group g at steps = g mod groups): a batch of another step, e.g. a new epoch begun
        after a ``break``, would put its records at steps the noise was not calibrated for.
        """
        if step != self._stream.step:
            raise RuntimeError(
                f"this batch belongs to sampler step {step} but the next noise step is "
                f"{self._stream.step}: an epoch was left early and a new one started (or "
                "steps were skipped); the noise is calibrated for the sampler's order of steps "
                "only. Finish each epoch, or stop training for good"
            )

    def _offer(self, inputs: torch.Tensor, targets: torch.Tensor, step: int) -> None:
        """Called by the private data loader with the batch of sampler ``step`` it is about to
        yield."""
        if self._pending is not None:
            raise RuntimeError(
                "the previous batch was not used: call optimizer.step() once per batch "
                "(the noise is calibrated for every scheduled step)"
            )
        if inputs.shape[0] > self._max_summands:
            raise RuntimeError("a batch exceeds the number of summands the noise assumes")
        self._check_position(step)
        self._pending = (inputs, targets, step)

    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """Take the loader's batch, clip, privatise, average and update.

        Parameters
        ----------
        closure : callable, optional
            As in :class:`torch.optim.Optimizer`: re-evaluates and returns a loss, for
            reporting only (a non-private value). Nothing it computes enters the update.

        Returns
        -------
        The closure's loss, or None.
        """
        if closure is not None and not callable(closure):
            raise TypeError(
                "step() takes no gradient: the private step computes and clips the batch's "
                "per-example gradients itself (pass nothing, or a loss closure)"
            )
        if self._pending is None:
            raise RuntimeError(
                "step() needs a fresh batch from the private data loader (each batch is "
                "used exactly once)"
            )
        self._check_position(self._pending[2])  # the stream may have moved since the offer
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        check_optimizer_params(self.original_optimizer, self._model)  # add_param_group
        inputs, targets, _ = self._pending
        self._pending = None
        flat, _ = clipped_sum(  # the clipped count is non-private: not kept
            self._model, self._loss_fn, inputs, targets, self._clip, exact=self._exact_sum
        )
        noisy = self._stream.privatize(flat.cpu().numpy())
        noisy /= self._batch_size
        mean = torch.from_numpy(noisy)
        offset = 0
        for p in self._params:
            chunk = mean[offset : offset + p.numel()].view(p.shape)
            p.grad = chunk.to(dtype=p.dtype, device=p.device)
            offset += p.numel()
        private = {id(p) for p in self._params}
        for group in self.original_optimizer.param_groups:
            for p in group["params"]:
                if id(p) not in private:  # a frozen model parameter: never a raw gradient
                    p.grad = None
        self.original_optimizer.step()
        return loss
