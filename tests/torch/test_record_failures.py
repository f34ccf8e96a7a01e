"""One example on which the model or the loss fails contributes zero; nothing points at it.

``make_private`` charges the whole run before the first step. A label outside the classes used
to raise "index 3 is out of bounds for dimension 2 with size 3" at the step that sampled its
record: the value in the message and the step in the traceback both pointed at the record.
Now (``dpfit/torch/_failures.py``) such an example contributes exactly zero and the run
completes; a failure no single example explains stops it with a fixed ``DataError``.
"""

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="LOUD SKIP: the torch extra is not installed (pip install torch==2.13.0, CPU)"
)

from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset, TensorDataset  # noqa: E402

import dpfit  # noqa: E402
from dpfit.torch import make_private  # noqa: E402

N, CLASSES = 60, 3
BAD_ROW = 37


def _data(label: int):
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(N, 4, generator=gen)
    y = torch.randint(0, CLASSES, (N,), generator=gen)
    y[BAD_ROW] = label
    return X, y


def _train(label: int, *, float64: bool = False, loss=nn.functional.cross_entropy, dataset=None):
    """Two epochs of the tutorial's set-up (cross-entropy, fixed-epoch sampling, seeded);
    the final weights. ``float64`` takes the vmap route, float32 the book-keeping one."""
    X, y = _data(label)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, CLASSES))
    if float64:
        model, X = model.double(), X.double()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = DataLoader(dataset or TensorDataset(X, y), batch_size=6)
    with pytest.warns(dpfit.PrivacyWarning, match="seed"):
        run = make_private(model, optimizer, loader, loss_fn=loss, clip=1.0, epochs=2, rho=0.5,
                           random_state=0)  # fmt: skip
    for _ in range(2):
        for _batch in run.data_loader:
            run.optimizer.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()


@pytest.mark.parametrize("float64", [False, True], ids=["book-keeping", "vmap"])
def test_a_label_outside_the_classes_contributes_zero(float64):
    """Labels 3, 7 and -5 (none a class) train to the same weights bit for bit: the record
    adds exactly zero wherever it is sampled, whatever its label."""
    weights = [_train(label, float64=float64) for label in (3, 7, -5)]
    for other in weights[1:]:
        np.testing.assert_array_equal(other, weights[0])
    assert not np.array_equal(weights[0], _train(1, float64=float64))  # a valid label counts


@pytest.mark.parametrize("float64", [False, True], ids=["book-keeping", "vmap"])
def test_any_loss_that_raises_on_one_example_gives_it_zero(float64):
    """A loss dpfit does not know (a wrapper of cross-entropy) raises on the example: it is
    found by evaluating the batch's examples alone, replaced and given the clip factor 0,
    which trains exactly as the known loss's guard does."""

    def wrapped(output, target):
        return nn.functional.cross_entropy(output, target)

    known = _train(3, float64=float64)
    for label in (3, 7):
        np.testing.assert_array_equal(_train(label, float64=float64, loss=wrapped), known)


def test_a_loss_that_fails_on_every_batch_stops_with_a_fixed_error():
    """A loss that cannot run under vmap fails for every example: a fixed DataError, with no
    value and no step in it, whatever the data."""

    def broken(output, target):
        return output.sum() * float(target.sum().item())  # .item() is refused under vmap

    messages = set()
    for label in (0, 3):
        with pytest.raises(dpfit.DataError, match="withheld") as err:
            _train(label, loss=broken)
        messages.add(str(err.value))
    assert len(messages) == 1
    assert not any(ch.isdigit() for ch in messages.pop())


class _Unreadable(Dataset):
    """A dataset whose item ``BAD_ROW`` raises with its value in the message."""

    def __init__(self, secret: str):
        self.X, self.y = _data(0)
        self.secret = secret

    def __len__(self):
        return N

    def __getitem__(self, i):
        if i == BAD_ROW:
            raise ValueError(f"could not parse {self.secret!r}")
        return self.X[i], self.y[i]


def test_a_dataset_that_raises_on_a_record_names_no_value_and_no_step():
    """Reading happens after the charge: the dataset's error is replaced by a fixed one that
    names neither the value nor the step (two datasets, two values, one message)."""
    messages = set()
    for secret in ("secret-4.2", "oops"):
        with pytest.raises(dpfit.DataError, match="withheld") as err:
            _train(0, dataset=_Unreadable(secret))
        assert err.value.__context__ is None and err.value.__cause__ is None
        messages.add(str(err.value))
    assert len(messages) == 1
    message = messages.pop()
    assert "secret" not in message and "oops" not in message
    assert not any(ch.isdigit() for ch in message)
