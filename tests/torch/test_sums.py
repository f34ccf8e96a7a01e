"""``make_private(sums=...)``: float32 chunked sums with their allowance named in the ledger's
statement (the default for float32 models under fixed-epoch sampling), or float64 sums with
the float64 allowance only."""

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="LOUD SKIP: the torch extra is not installed (pip install torch==2.13.0, CPU)"
)

from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from dpfit.mechanisms import recording  # noqa: E402
from dpfit.noise import release_sensitivity  # noqa: E402
from dpfit.torch import make_private  # noqa: E402
from dpfit.torch._clipping import clipped_sum  # noqa: E402
from dpfit.torch._rounding import chunked_products, chunked_sum_excess  # noqa: E402

LOSS = torch.nn.functional.cross_entropy
PATTERN = dict(participations=2, separation=3)


def _run(sums, n=300, batch=100):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    gen = torch.Generator().manual_seed(1)
    X, y = torch.randn(n, 6, generator=gen) * 3, torch.randint(0, 3, (n,), generator=gen)
    loader = DataLoader(TensorDataset(X, y), batch_size=batch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    run = make_private(
        model, opt, loader, loss_fn=LOSS, clip=1.0, epochs=2, rho=0.5, random_state=0, sums=sums
    )
    return run, model


def test_float64_sums_declare_the_float64_allowance_only():
    fast, _ = _run("auto")
    exact, _ = _run("float64")
    (fast_entry,), (exact_entry,) = fast.ledger.entries, exact.ledger.entries
    mechanism = exact.stream.mechanism
    assert exact_entry.sensitivity == release_sensitivity(
        mechanism, clip=1.0, batch_size=100, **PATTERN
    )
    assert fast_entry.sensitivity == release_sensitivity(
        mechanism, clip=1.0, batch_size=100, sum_excess=chunked_sum_excess(1.0, 100), **PATTERN
    )
    assert exact_entry.sensitivity < fast_entry.sensitivity < 1.001 * exact_entry.sensitivity
    assert "rounding allowance 1.2e-03 clip a step" in fast.statement()
    assert "rounding allowance" not in exact.statement()


@pytest.mark.parametrize("sums", ["auto", "float64"])
def test_each_step_releases_the_sum_of_its_own_route(sums):
    with recording() as rec:
        run, model = _run(sums)
        inputs, targets = next(iter(run.data_loader))
        expected, _ = clipped_sum(model, LOSS, inputs, targets, 1.0, exact=sums == "float64")
        other, _ = clipped_sum(model, LOSS, inputs, targets, 1.0, exact=sums != "float64")
        run.optimizer.step()
    (release,) = rec.releases  # one release of the whole run, a row per step
    np.testing.assert_array_equal(release.value[0], expected.numpy())
    assert not np.array_equal(release.value[0], other.numpy())  # the routes round differently


def test_a_bad_sums_option_is_refused_before_any_charge():
    with recording() as rec, pytest.raises(ValueError, match="sums"):
        _run("float16")
    assert len(rec) == 0


@pytest.mark.parametrize("rows", [1, 127, 128, 300, 1024])
def test_chunked_products_equal_the_chunks_one_by_one_within_float32_rounding(rows):
    """The batched product computes each chunk as its own float32 product: the result is the
    float64 product to within gamma_c per term, as the declared bound assumes."""
    gen = torch.Generator().manual_seed(rows)
    left, right = torch.randn(rows, 7, generator=gen), torch.randn(rows, 5, generator=gen)
    got = chunked_products(left, right, 128)
    exact = left.double().T @ right.double()
    scale = left.double().abs().T @ right.double().abs()
    c = min(128, rows)
    assert (torch.abs(got - exact) <= (c + 4) * 2.0**-24 * scale + 1e-300).all()
    one_by_one = sum(
        (left[s : s + 128].T @ right[s : s + 128]).double() for s in range(0, rows, 128)
    )
    np.testing.assert_allclose(got.numpy(), one_by_one.numpy(), rtol=1e-6, atol=1e-6)


def test_a_replaced_row_changes_one_chunk_only():
    """Rows of the other chunks give the same float32 chunk products whatever one row holds:
    the sums of two batches that differ in row 5 differ by that chunk's products alone."""
    gen = torch.Generator().manual_seed(3)
    left, right = torch.randn(384, 9, generator=gen), torch.randn(384, 4, generator=gen)
    other = right.clone()
    other[5] = 1e3 * torch.randn(4, generator=gen)
    diff = chunked_products(left, right, 128) - chunked_products(left, other, 128)
    first = (left[:128].T @ right[:128]).double() - (left[:128].T @ other[:128]).double()
    assert torch.allclose(diff, first, rtol=0, atol=1e-9 * float(first.abs().max()))
