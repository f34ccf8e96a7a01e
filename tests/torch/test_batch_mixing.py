"""make_private refuses BatchNorm in training mode before any charge (it mixes the batch).

Per-example clipping bounds one record's effect only when each example's output depends on
that example alone; BatchNorm in training mode normalises by the batch's statistics.
"""

import pytest

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from dpfit.privacy import PrivacyLedger  # noqa: E402
from dpfit.torch import make_private  # noqa: E402


def _make(model, ledger):
    data = TensorDataset(torch.randn(40, 3), torch.randn(40, 1))
    return make_private(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        DataLoader(data, batch_size=10),
        loss_fn=torch.nn.functional.mse_loss,
        clip=1.0,
        epochs=1,
        rho=0.5,
        ledger=ledger,
    )


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 1)
    )


def test_batchnorm_in_training_mode_is_refused_before_any_charge():
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="BatchNorm mixes examples in a batch"):
        _make(_model(), ledger)
    assert ledger.entries == ()


def test_batchnorm_in_eval_mode_trains_and_train_mode_later_is_refused():
    model = _model().eval()  # fixed running statistics: each output depends on its own row
    run = _make(model, PrivacyLedger())
    batches = iter(run.data_loader)
    next(batches)
    run.optimizer.step()
    model.train()
    next(batches)
    with pytest.raises(ValueError, match="BatchNorm mixes examples in a batch"):
        run.optimizer.step()
