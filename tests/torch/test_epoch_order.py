"""The private step refuses a batch whose sampler step is not the next noise step.

The noise is calibrated for the sampler's pattern: under fixed-epoch sampling a record joins
steps i, i + b, ..., i + (k - 1) b; under cyclic Poisson sampling group g joins the steps
= g (mod groups). Leaving an epoch with ``break`` and starting the next one would, without the
check, put the new epoch's records at the stream's next steps (3, 4, ... instead of 10, 11, ...),
closer than b apart: for the multi-epoch mechanism at T = 30, k = 3, b = 10 that pattern has
sens^2 4.35 against the 3 declared.
"""

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="LOUD SKIP: the torch extra is not installed (pip install torch==2.13.0, CPU)"
)

from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from dpfit.noise import multi_epoch, optimal_banded  # noqa: E402
from dpfit.privacy import PLDLedger, PrivacyLedger  # noqa: E402
from dpfit.torch import make_private  # noqa: E402


def _run(n=40, batch=4, epochs=3, target=None, ledger=None, **kw):
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(n, 3), torch.randn(n, 1))
    model = torch.nn.Linear(3, 1)
    ledger = PrivacyLedger() if ledger is None else ledger
    run = make_private(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        DataLoader(data, batch_size=batch),
        loss_fn=torch.nn.functional.mse_loss,
        clip=1.0,
        epochs=epochs,
        ledger=ledger,
        random_state=0,
        **(target or {"rho": 0.5}),
        **kw,
    )
    return run, ledger


def _break_after(run, steps):
    for i, _ in enumerate(run.data_loader):
        run.optimizer.step()
        if i + 1 == steps:
            break


@pytest.mark.parametrize(
    "kw",
    [
        {},  # default noise (nu-DP-FTRL), fixed-epoch
        {"noise": multi_epoch(30, separation=10)},
        {
            "sampling": "poisson",
            "groups": 4,
            "n_public": 400,
            "n": 400,
            "batch": 10,
            "epochs": 2,
            "noise": optimal_banded(16, 4),
            "target": {"epsilon": 2.0, "delta": 1e-5},
            "ledger": PLDLedger(),
        },
    ],
    ids=["default", "multi-epoch", "cyclic-poisson-banded"],
)
def test_a_new_epoch_after_a_break_is_refused_before_any_noise(kw):
    run, ledger = _run(**kw)
    entries = ledger.entries
    _break_after(run, 3)
    stream = run.optimizer.stream
    assert stream.step == 3
    before = [p.detach().clone() for p in run.model.parameters()]
    with pytest.raises(RuntimeError, match="the next noise step is 3"):
        next(iter(run.data_loader))
    assert stream.step == 3  # no noise drawn
    assert ledger.entries == entries  # nothing charged beyond the run's one entry
    for p, q in zip(run.model.parameters(), before, strict=True):
        assert torch.equal(p, q)


def test_one_step_per_epoch_is_refused_at_the_second_epoch():
    run, _ = _run(noise=multi_epoch(30, separation=10))
    _break_after(run, 1)
    with pytest.raises(RuntimeError, match="sampler step 10 but the next noise step is 1"):
        next(iter(run.data_loader))


def test_step_refuses_a_batch_once_the_stream_moved_past_it():
    run, _ = _run()
    batches = iter(run.data_loader)
    next(batches)
    run.optimizer.stream.privatize(np.zeros(run.optimizer.stream.dim))  # step 0 used directly
    with pytest.raises(RuntimeError, match="sampler step 0 but the next noise step is 1"):
        run.optimizer.step()


def test_whole_epochs_and_a_partial_last_epoch_train():
    run, _ = _run()
    for _ in range(2):
        for _ in run.data_loader:
            run.optimizer.step()
    _break_after(run, 4)  # stopping for good inside the last epoch only lowers the sensitivity
    assert run.optimizer.stream.step == 24
