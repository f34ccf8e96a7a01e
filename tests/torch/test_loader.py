"""The private loader reads each batch in one go where the dataset allows, with the same batches."""

import pytest

torch = pytest.importorskip(
    "torch", reason="LOUD SKIP: the torch extra is not installed (pip install torch==2.13.0, CPU)"
)

from torch.utils.data import DataLoader, Dataset, TensorDataset, default_collate  # noqa: E402

from dpfit.torch import make_private  # noqa: E402
from dpfit.torch._loader import batch_reader  # noqa: E402

N, B = 96, 16


def _tensors(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(N, 5, generator=gen), torch.randint(0, 3, (N,), generator=gen)


class _Counting(Dataset):
    """A map-style dataset that counts how it is read (and optionally reads in batches)."""

    def __init__(self, X, y, batched):
        self.X, self.y, self.items, self.batches = X, y, 0, 0
        if batched:
            self.__getitems__ = self._getitems

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        self.items += 1
        return self.X[i], self.y[i]

    def _getitems(self, indices):
        self.batches += 1
        return [(self.X[i], self.y[i]) for i in indices]


def test_a_tensor_dataset_batch_is_one_index_with_the_collated_values():
    X, y = _tensors()
    indices = [5, 0, 77, 5, 31]
    got = batch_reader(TensorDataset(X, y), default_collate)(indices)
    want = default_collate([(X[i], y[i]) for i in indices])
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape and g.is_contiguous()
        assert torch.equal(g, w)
    empty = batch_reader(TensorDataset(X, y), default_collate)([])
    assert [t.shape for t in empty] == [(0, 5), (0,)]


@pytest.mark.parametrize("batched", [False, True])
def test_other_datasets_are_read_per_batch_or_per_item_then_collated(batched):
    X, y = _tensors(1)
    data = _Counting(X, y, batched)
    calls = []

    def collate(items):
        calls.append(len(items))
        return default_collate(items)

    got = batch_reader(data, collate)([3, 1, 4])
    assert torch.equal(got[0], X[[3, 1, 4]]) and calls == [3]
    assert (data.batches, data.items) == ((1, 0) if batched else (0, 3))


def _batches(data):
    """Every batch of a 2-epoch fixed-epoch run on ``data`` (same seed), and the steps taken."""
    model = torch.nn.Linear(5, 3)
    run = make_private(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        DataLoader(data, batch_size=B),
        loss_fn=torch.nn.functional.cross_entropy,
        clip=1.0,
        epochs=2,
        rho=1.0,
        random_state=0,
    )
    seen = []
    for _epoch in range(2):
        for inputs, targets in run.data_loader:
            seen.append((inputs, targets))
            run.optimizer.step()
    return seen, run.optimizer.stream.step


@pytest.mark.parametrize("kind", ["tensors", "getitems"])
def test_training_sees_the_same_batches_whatever_the_reading(kind):
    X, y = _tensors(2)
    data = TensorDataset(X, y) if kind == "tensors" else _Counting(X, y, True)
    want, steps = _batches(_Counting(X, y, False))  # item by item: PyTorch's own reading
    got, got_steps = _batches(data)
    assert got_steps == steps == 2 * (N // B) == len(got) == len(want)
    for (gi, gt), (wi, wt) in zip(got, want, strict=True):
        assert torch.equal(gi, wi) and torch.equal(gt, wt)
