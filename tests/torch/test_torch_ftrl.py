"""PyTorch integration: make_private owns batches, clipping, noise and accounting."""

import math

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="LOUD SKIP: the torch extra is not installed (pip install torch==2.13.0, CPU)"
)

from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import dpfit.torch  # noqa: E402
from dpfit import BudgetExceededError  # noqa: E402
from dpfit.mechanisms import clip_rows, recording, replaying  # noqa: E402
from dpfit.noise import release_sensitivity  # noqa: E402
from dpfit.privacy import Budget, PLDLedger, PrivacyLedger  # noqa: E402
from dpfit.torch import make_private  # noqa: E402
from dpfit.torch._clipping import clipped_sum  # noqa: E402
from dpfit.torch._rounding import chunked_sum_excess  # noqa: E402

LOSS = torch.nn.functional.cross_entropy


def _model(seed=0, dtype=torch.float32):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).to(
        dtype
    )


def _data(n=40, seed=1, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, 4, generator=gen, dtype=dtype) * 3, torch.randint(
        0, 3, (n,), generator=gen
    )


def _private(X, y, *, batch=10, epochs=2, model=None, lr=0.1, **kw):
    model = _model() if model is None else model
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loader = DataLoader(TensorDataset(X, y), batch_size=batch)
    kw = {"rho": 0.5, "random_state": 0, **kw}
    return make_private(model, opt, loader, loss_fn=LOSS, clip=1.0, epochs=epochs, **kw)


def _flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double().numpy()


@pytest.mark.parametrize("exact", [True, False])
def test_clipped_sum_matches_a_per_example_autograd_loop(exact):
    model = _model()
    x, y = _data(300)  # three float32 chunks of CHUNK = 128 rows, the last one short
    rows = []
    for i in range(300):
        model.zero_grad()
        LOSS(model(x[i : i + 1]), y[i : i + 1]).backward()
        rows.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]).double().numpy())
    expected = clip_rows(np.array(rows), 0.3).sum(axis=0)
    got, clipped = clipped_sum(model, LOSS, x, y, 0.3, exact=exact)
    assert got.dtype == torch.float64
    # float32 gradients, float32 margin 3e-5 on the clip factor
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4, atol=1e-5)
    assert 0 <= clipped <= 300


def test_fast_sum_moves_by_at_most_its_declared_rounding_excess():
    """Replace one record (same batch position): |computed diff| <= 2 clip + excess."""
    model = _model()
    x, y = _data(256, seed=5)
    x2 = x.clone()
    x2[100] = -x[100] * 1e3  # a far-away replacement, clipped
    a, _ = clipped_sum(model, LOSS, x, y, 0.5, exact=False)
    b, _ = clipped_sum(model, LOSS, x2, y, 0.5, exact=False)
    assert float(torch.linalg.vector_norm(a - b)) <= 2 * 0.5 + chunked_sum_excess(0.5, 256)
    assert chunked_sum_excess(0.5, 256) < 2.1e-3 * 0.5  # about 0.1% of the exact 2 clip


def test_clipped_vectors_never_exceed_the_bound_in_float32():
    model = _model()
    x, y = _data(64, seed=3)
    x = x * 1e3  # every gradient is clipped
    for i in range(64):
        for exact in (True, False):
            flat, _ = clipped_sum(model, LOSS, x[i : i + 1], y[i : i + 1], 0.7, exact=exact)
            assert math.sqrt(float((flat * flat).sum())) <= 0.7


def test_non_finite_example_is_zeroed():
    model = _model()
    x, y = _data(3)
    x[1] = float("nan")
    got, _ = clipped_sum(model, LOSS, x, y, 1.0, exact=True)
    keep, _ = clipped_sum(model, LOSS, x[[0, 2]], y[[0, 2]], 1.0, exact=True)
    torch.testing.assert_close(got, keep, rtol=1e-12, atol=1e-12)


def test_the_trusting_path_is_gone():
    """Issue 13 finding 7: no step accepts a sum it did not clip."""
    for name in ("CorrelatedNoiseOptimizer", "clipped_grad_sum", "ClippedSum"):
        assert not hasattr(dpfit.torch, name)
    X, y = _data()
    model, opt, loader = _private(X, y)
    dim = sum(p.numel() for p in model.parameters())
    with pytest.raises(RuntimeError, match="fresh batch"):
        opt.step()  # no batch yet
    batches = iter(loader)
    next(batches)
    for bad in (torch.zeros(dim), np.zeros(dim), [0.0] * dim):
        with pytest.raises(TypeError, match="takes no gradient"):
            opt.step(bad)
    opt.step()
    with pytest.raises(RuntimeError, match="fresh batch"):
        opt.step()  # the same batch twice
    next(batches)
    with pytest.raises(RuntimeError, match="not used"):
        next(batches)  # a batch skipped


def test_fixed_epoch_run_charges_once_for_its_own_batches():
    X, y = _data(40)
    run = _private(X, y, batch=10, epochs=3, epsilon=4.0, delta=1e-5, rho=None)
    _, opt, loader = run
    assert run.steps == 12 and isinstance(run.ledger, PrivacyLedger)
    (entry,) = run.ledger.entries
    pattern = dict(participations=3, separation=4)
    used = run.stream.mechanism
    assert run.stream.choice.error_ratio <= 1.02  # "auto": the optimal BLT, same rho
    excess = chunked_sum_excess(1.0, 10)  # the float32 chunked sums' own rounding bound
    declared = release_sensitivity(used, clip=1.0, batch_size=10, sum_excess=excess, **pattern)
    assert entry.sensitivity == declared
    assert run.epsilon(1e-5) == pytest.approx(4.0, rel=1e-9)
    seen = {}
    for epoch in range(3):
        for t, (xb, _) in enumerate(loader):
            for row in xb:
                seen.setdefault(tuple(row.tolist()), []).append(4 * epoch + t)
            opt.step()
    # every used record joins steps i, i + b, i + 2b (the declared fixed-epoch pattern)
    assert all(s == [s[0], s[0] + 4, s[0] + 8] for s in seen.values()) and len(seen) == 40
    with pytest.raises(RuntimeError, match="epochs"):
        next(iter(loader))


def test_update_is_the_released_noisy_mean():
    X, y = _data(40)
    model = _model(dtype=torch.float64)
    p0 = _flat(model)
    with recording() as rec:
        _, opt, loader = _private(X.double(), y, model=model, lr=0.1, noise="nu-dpftrl")
        for _ in range(2):
            for _ in loader:
                opt.step()
    (release,) = rec.releases
    assert np.isfinite(release.output).all()
    np.testing.assert_allclose(_flat(model), p0 - 0.1 * release.output.sum(axis=0) / 10, atol=1e-12)


def test_replay_on_a_worst_case_neighbour_respects_the_declared_sensitivity():
    X, y = _data(40)

    def train(X):
        model = _model(dtype=torch.float64)
        run = _private(X, y, model=model, noise_mode="regenerate", noise="nu-dpftrl")
        for _ in range(2):
            for _ in run.data_loader:
                run.optimizer.step()
        return _flat(model), run

    X2 = X.double().clone()
    X2[7] = 1e4  # a record whose gradient saturates the clip
    with recording() as rec:
        w1, run = train(X.double())
    with replaying(rec) as rep:
        w2, _ = train(X2)
    (a,), (b,) = rec.releases, rep.releases
    C = run.stream.mechanism.encoder_matrix()
    moved = np.linalg.norm(C @ (a.value - b.value))
    assert 0.25 * a.entry.sensitivity < moved <= a.entry.sensitivity
    np.testing.assert_array_equal(w1, w2)  # post-processing of the same release


def test_budget_too_small_fails_before_anything_is_drawn():
    X, y = _data()
    ledger = PrivacyLedger(budget=Budget(rho=0.1))
    with recording() as rec, pytest.raises(BudgetExceededError):
        _private(X, y, ledger=ledger)
    assert len(ledger) == 0 and len(rec) == 0


def test_poisson_dpsgd_is_amplified_and_accounted_by_pld():
    X, y = _data(200)
    run = _private(
        X,
        y,
        batch=20,
        epochs=2,
        sampling="poisson",
        n_public=200,
        rho=None,
        epsilon=3.0,
        delta=1e-5,
    )
    assert isinstance(run.ledger, PLDLedger) and run.steps == 20
    (entry,) = run.ledger.entries
    assert entry.sampling_probability == pytest.approx(0.1) and entry.count == 20
    assert run.epsilon(1e-5) <= 3.0
    sizes = []
    for _ in range(2):
        for xb, _ in run.data_loader:
            sizes.append(len(xb))
            run.optimizer.step()
    assert 0 < np.mean(sizes) < 40  # Poisson batches around the expected 20
    with pytest.raises(ValueError, match="n_public"):
        _private(X, y, sampling="poisson", rho=None, epsilon=1.0, delta=1e-5)
    with pytest.raises(TypeError, match="epsilon"):
        _private(X, y, sampling="poisson", n_public=200)


def test_cyclic_poisson_banded_encoder_is_amplified_per_epoch():
    X, y = _data(200)
    run = _private(
        X,
        y,
        batch=20,
        epochs=2,
        sampling="poisson",
        n_public=200,
        rho=None,
        epsilon=3.0,
        delta=1e-5,
        groups=5,
        noise="amplified-banded",
    )
    (entry,) = run.ledger.entries
    assert run.stream.mechanism.encoder_bands <= 5 and run.stream.choice.per_step == "constant"
    # the optimised encoder, not nu-DP-FTRL's truncated to 5 bands: less prefix error per
    # unit of amplified sensitivity ||c|| (the objective both are compared by)
    from dpfit.noise import banded_encoder, nu_dpftrl, optimal_banded

    def cost(m):
        return float(np.sum(np.asarray(m.inverse) ** 2)) * m.prefix_error()

    assert run.stream.mechanism.inverse.tolist() == optimal_banded(run.steps, 5).inverse.tolist()
    truncated = banded_encoder(nu_dpftrl(0.2, steps=run.steps), 5)
    assert cost(run.stream.mechanism) < cost(truncated)
    assert entry.count == math.ceil(run.steps / 5) and entry.sampling_probability == 0.5
    steps_of = {}
    t = 0
    for _ in range(2):
        for xb, _ in run.data_loader:
            for row in xb:
                steps_of.setdefault(tuple(row.tolist()), set()).add(t % 5)
            run.optimizer.step()
            t += 1
    assert all(len(s) == 1 for s in steps_of.values())  # one group per record


def test_scheduler_and_adam_work_through_the_wrapper():
    X, y = _data()
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    run = make_private(
        model,
        opt,
        DataLoader(TensorDataset(X, y), batch_size=10),
        loss_fn=LOSS,
        clip=1.0,
        epochs=1,
        rho=0.5,
        random_state=0,
    )
    sched = torch.optim.lr_scheduler.StepLR(run.optimizer, step_size=1, gamma=0.5)
    for _ in run.data_loader:
        run.optimizer.step()
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01 * 0.5**4)


@pytest.mark.parametrize(
    ("kwargs", "exc"),
    [
        (dict(clip=0.0), ValueError),
        (dict(epochs=0), ValueError),
        (dict(sampling="shuffle"), ValueError),
        (dict(noise="adam"), ValueError),
        (dict(noise="amplified-banded"), ValueError),
        (dict(groups=2), ValueError),
        (dict(rho=None), TypeError),
    ],
)
def test_bad_inputs_release_nothing(kwargs, exc):
    X, y = _data()
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    call = {"loss_fn": LOSS, "clip": 1.0, "epochs": 1, "rho": 0.5, "random_state": 0, **kwargs}
    with recording() as rec, pytest.raises(exc):
        make_private(model, opt, DataLoader(TensorDataset(X, y), batch_size=10), **call)
    assert len(rec) == 0
