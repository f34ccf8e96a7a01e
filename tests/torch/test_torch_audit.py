"""A white-box canary audit of the PyTorch path (make_private), and a mutation it catches.

Design (as the dp_ftrl audit target, ``dpfit.audit._ftrl``, with b = 1): a float64 linear
model, loss -y (w . x), so a record's gradient is -y x. The canary x = e_0 (coordinate 0, which
no other record touches) has y = +clip on D and -clip on D', so its clipped contribution to
coordinate 0 of every step's sum is -clip or +clip. The noise is the optimal BLT for the
pattern, passed explicitly (the mechanism "auto" streams). All records form one batch per epoch, so
the canary joins every one of the T = epochs steps. The recorded noisy sums o of coordinate 0,
whitened with the streamed mechanism's encoder C (u = C o / sigma), give the exact linear
Neyman-Pearson score: N(0, 1) on D and N(2 clip |C 1| / sigma, 1) on D', a shift of at most
sqrt(2 rho) when the declared sensitivity is right.
"""

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="LOUD SKIP: the torch extra is not installed (pip install torch==2.13.0, CPU)"
)

from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from dpfit.audit import assess  # noqa: E402
from dpfit.mechanisms import make_noise_source, recording  # noqa: E402
from dpfit.mechanisms import stream as stream_module  # noqa: E402
from dpfit.noise import optimal_blt  # noqa: E402
from dpfit.torch import make_private  # noqa: E402

N, D, EPOCHS, CLIP, RHO = 8, 3, 4, 0.5, 0.5
NOISE = optimal_blt(EPOCHS, participations=EPOCHS, separation=1)


def _loss(out, y):
    return -(out * y).sum()


def _data(alt: bool):
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(N, D, generator=gen, dtype=torch.float64)
    X[:, 0] = 0.0  # only the canary touches coordinate 0
    y = torch.randn(N, 1, generator=gen, dtype=torch.float64)
    X[0] = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    y[0] = -CLIP if alt else CLIP
    return TensorDataset(X, y)


def _scores(runs: int, alt: bool, source):
    out = np.empty((runs, EPOCHS))
    run = None
    for i in range(runs):
        model = torch.nn.Linear(D, 1, bias=False, dtype=torch.float64)
        with recording() as rec:
            run = make_private(
                model,
                torch.optim.SGD(model.parameters(), lr=0.1),
                DataLoader(_data(alt), batch_size=N),
                loss_fn=_loss,
                clip=CLIP,
                epochs=EPOCHS,
                rho=RHO,
                noise=NOISE,
                random_state=source,
            )
            for _ in range(EPOCHS):
                for _ in run.data_loader:
                    run.optimizer.step()
        (release,) = rec.releases
        out[i] = release.output[:, 0]  # noisy sums of the canary coordinate
    C = run.stream.mechanism.encoder_matrix()
    sigma = run.stream.noise_std
    a0 = C @ np.full(EPOCHS, -CLIP) / sigma  # whitened mean on D; -a0 on D'
    u = out @ C.T / sigma
    return (u - a0) @ (-2 * a0) / np.linalg.norm(2 * a0)


def _audit(runs: int, seed: int):
    source = make_noise_source(seed)
    null, alt = _scores(runs, False, source), _scores(runs, True, source)
    return assess(null, alt, rho=RHO, target="dpfit.torch.make_private")


def test_canary_audit_of_make_private_passes():
    result = _audit(120, seed=11)
    assert result.passed, result.table()


def test_canary_audit_catches_halved_noise(monkeypatch):
    real = stream_module.GaussianRows.release
    monkeypatch.setattr(
        stream_module.GaussianRows,
        "release",
        lambda self, value, noise, **kw: real(self, value, 0.5 * np.asarray(noise), **kw),
    )
    result = _audit(120, seed=12)
    assert not result.passed
