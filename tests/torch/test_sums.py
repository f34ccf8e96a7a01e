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
from dpfit.torch._rounding import chunked_sum_excess  # noqa: E402

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
