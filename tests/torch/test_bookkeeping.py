"""Book-keeping clipping of nn.Linear models against the vmap route and exact gradients."""

import copy
import math

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="LOUD SKIP: the torch extra is not installed (pip install torch==2.13.0, CPU)"
)

from torch import nn  # noqa: E402

from dpfit.privacy import float_sum_excess  # noqa: E402
from dpfit.torch._bookkeeping import linear_plan  # noqa: E402
from dpfit.torch._clipping import _vmap_clipped_sum, clipped_sum, trainable  # noqa: E402
from dpfit.torch._failures import guard_loss  # noqa: E402
from dpfit.torch._rounding import chunked_sum_excess  # noqa: E402

LOSS = nn.functional.cross_entropy


def _mlp(seed, kind):
    torch.manual_seed(seed)
    if kind == "tanh-bias":
        return nn.Sequential(nn.Linear(6, 9), nn.Tanh(), nn.Linear(9, 3))
    if kind == "no-bias-nested":
        inner = nn.Sequential(nn.Linear(9, 7, bias=False), nn.GELU())
        return nn.Sequential(nn.Flatten(), nn.Linear(6, 9), nn.ReLU(), inner, nn.Linear(7, 3))
    if kind == "frozen":  # a frozen first layer, a bias-only trainable last layer
        model = nn.Sequential(
            nn.Linear(6, 8), nn.SiLU(), nn.Linear(8, 8), nn.ELU(), nn.Linear(8, 3)
        )
        for p in (model[0].weight, model[0].bias, model[4].weight):
            p.requires_grad_(False)
        return model
    return nn.Linear(6, 3)  # a bare linear model (multinomial logistic regression)


def _batch(n, seed, scale=3.0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, 6, generator=gen) * scale, torch.randint(0, 3, (n,), generator=gen)


def _exact_clipped(model, x, y, clip):
    """float64 per-example gradients (a float64 copy of the model), clipped in float64."""
    model64 = _copy64(model)
    rows = []
    for i in range(x.shape[0]):
        model64.zero_grad()
        LOSS(model64(x[i : i + 1].double()), y[i : i + 1]).backward()
        g = torch.cat([p.grad.reshape(-1) for _, p in trainable(model64)]).numpy()
        rows.append(g * min(1.0, clip / math.sqrt(math.fsum(g * g))))
    return np.array(rows)


def _copy64(model):
    return copy.deepcopy(model).double()


KINDS = ["tanh-bias", "no-bias-nested", "frozen", "linear"]


@pytest.mark.parametrize("kind", KINDS)
def test_plan_applies_to_linear_models(kind):
    assert linear_plan(_mlp(0, kind), 1.0) is not None


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("exact", [False, True])
def test_bookkeeping_matches_the_vmap_route_to_float32_rounding(kind, exact):
    """Both routes clip the same float32 gradients: each record's vector agrees to a few
    float32 roundings (u = 6e-8) times the depth-3 network's condition, well below 1e-5 clip,
    so the sums of 300 records agree within 300 x 1e-5 clip; a wrong norm (say one that
    forgets the bias) moves the sum by O(clip)."""
    for seed in range(3):
        model = _mlp(seed, kind)
        x, y = _batch(300, seed)  # three float32 chunks of CHUNK = 128, the last one short
        named = trainable(model)
        norms = np.linalg.norm(_exact_clipped(model, x, y, 1e30), axis=1)
        clip = float(np.median(norms))  # clips about half of the records
        want, _ = _vmap_clipped_sum(model, named, LOSS, x, y, clip, exact=exact)
        got, clipped = clipped_sum(model, LOSS, x, y, clip, exact=exact)
        assert got.dtype == torch.float64 and got.shape == want.shape
        assert 0 < clipped < 300
        assert float(torch.linalg.vector_norm(got - want)) <= 300 * 1e-5 * clip


@pytest.mark.parametrize("kind", KINDS)
def test_each_record_contributes_at_most_clip_and_matches_exact_gradients(kind):
    """One record per call: the computed contribution's float64 norm (math.fsum) never
    exceeds clip, even with clip set to the record's own exact gradient norm (the margin's
    case); and it is the float64 clipped gradient up to float32 rounding: the float32
    softmax errs by about u = 6e-8 absolute, times ||x|| in a gradient entry (several u for
    the deeper models), hence atol 1e-6 (1 + ||x||) times the clip factor."""
    model = _mlp(1, kind)
    x, y = _batch(40, 4)
    exact_rows = _exact_clipped(model, x, y, 1e30)  # unclipped float64 gradients
    for i in range(40):
        norm = math.sqrt(math.fsum(exact_rows[i] ** 2))
        for clip in (0.05, norm, 2 * norm):
            for exact in (False, True):
                got, _ = clipped_sum(model, LOSS, x[i : i + 1], y[i : i + 1], clip, exact=exact)
                got = got.numpy()
                assert math.sqrt(math.fsum(got * got)) <= clip
                factor = min(1.0, clip / norm)
                atol = 1e-6 * (1.0 + float(x[i].norm())) * factor
                np.testing.assert_allclose(got, exact_rows[i] * factor, rtol=1e-4, atol=atol)


def test_non_finite_records_are_zeroed_and_do_not_touch_the_others():
    model = _mlp(0, "tanh-bias")
    x, y = _batch(50, 2)
    bad = x.clone()
    bad[3] = float("nan")
    bad[40, 0] = float("inf")
    bad[41] = 3e38  # overflows to inf before tanh, then finite: a finite gradient, kept
    keep = [i for i in range(50) if i not in (3, 40)]
    for exact in (True, False):
        got, _ = clipped_sum(model, LOSS, bad, y, 0.5, exact=exact)
        assert torch.isfinite(got).all()
        # the vmap route zeroes the same rows; rows computed at another batch shape (the
        # dropped-rows batch) may differ by float32 rounding: 50 x 1e-5 clip as above
        want, _ = _vmap_clipped_sum(model, trainable(model), LOSS, bad, y, 0.5, exact=exact)
        assert float(torch.linalg.vector_norm(got - want)) <= 50 * 1e-5 * 0.5
        want, _ = clipped_sum(model, LOSS, bad[keep], y[keep], 0.5, exact=exact)
        assert float(torch.linalg.vector_norm(got - want)) <= 50 * 1e-5 * 0.5


def test_replacing_one_record_moves_the_fast_sum_by_at_most_the_declared_bound():
    """Replace-one at fixed positions, including a far-away and a non-finite replacement."""
    model = _mlp(3, "no-bias-nested")
    x, y = _batch(256, 5)
    a, _ = clipped_sum(model, LOSS, x, y, 0.5, exact=False)
    for i, row in ((100, -x[100] * 1e3), (0, torch.full((6,), float("nan"))), (255, x[0])):
        x2 = x.clone()
        x2[i] = row
        b, _ = clipped_sum(model, LOSS, x2, y, 0.5, exact=False)
        assert float(torch.linalg.vector_norm(a - b)) <= 2 * 0.5 + chunked_sum_excess(0.5, 256)


class _Centre(nn.Module):
    """Batch coupling a per-example route must not see as per-example."""

    def forward(self, x):
        return x - x.mean(dim=0)


@pytest.mark.parametrize(
    "model",
    [
        nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4), nn.Linear(4, 3)),
        nn.Sequential(nn.Linear(6, 4), _Centre(), nn.Linear(4, 3)),
        nn.Sequential(nn.Linear(6, 4), nn.PReLU(), nn.Linear(4, 3)),
        nn.Sequential(nn.Linear(6, 3)).double(),
        nn.Sequential(nn.Linear(6, 4), nn.Dropout(), nn.Linear(4, 3)),
    ],
    ids=["batchnorm", "coupling", "prelu", "float64", "dropout"],
)
def test_other_models_take_the_vmap_route(model):
    assert linear_plan(model, 1.0) is None


def test_sequence_inputs_take_the_vmap_route():
    """(batch, time, features) inputs: the gradient is a sum over time, not one outer
    product; the shape check on the forward pass hands the batch to vmap."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    x = torch.randn(8, 5, 3)
    t = torch.randn(8, 5, 1)

    def loss(out, target):
        return ((out - target) ** 2).sum()

    assert linear_plan(model, 1.0) is not None
    got, _ = clipped_sum(model, loss, x, t, 0.5, exact=False)
    want, _ = _vmap_clipped_sum(model, trainable(model), loss, x, t, 0.5, exact=False)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_shared_layers_hooks_and_tiny_clips_take_the_vmap_route():
    layer = nn.Linear(4, 4)
    assert linear_plan(nn.Sequential(layer, nn.ReLU(), layer), 1.0) is None
    hooked = nn.Sequential(nn.Linear(6, 3))
    hooked[0].register_forward_hook(lambda m, i, o: o - o.mean(dim=0))
    assert linear_plan(hooked, 1.0) is None
    handle = nn.modules.module.register_module_forward_hook(lambda m, i, o: o)
    try:
        assert linear_plan(nn.Sequential(nn.Linear(6, 3)), 1.0) is None  # a global hook
    finally:
        handle.remove()
    assert linear_plan(nn.Sequential(nn.Linear(6, 3)), 1.0) is not None
    assert linear_plan(nn.Sequential(nn.Linear(6, 3)), 1e-13) is None


class _Sub(nn.Sequential):
    def forward(self, x):
        return super().forward(x - x.mean(dim=0))


def test_a_sequential_subclass_takes_the_vmap_route():
    assert linear_plan(_Sub(nn.Linear(6, 3)), 1.0) is None


@pytest.mark.parametrize("kind", KINDS)
def test_removing_one_record_moves_the_float64_sum_by_at_most_the_declared_bound(kind):
    """Add/remove (Poisson sampling, float64 sums): the other rows are computed in a batch of
    another shape, and on these narrow models that moves their float32 gradients by rounding
    (|S(D) - S(D')| exceeded 0.5 + float_sum_excess by up to 2e-7 with the clip factor's
    margin set to 1); the margin (3e-5 clip of slack per record) must absorb it."""
    model = _mlp(0, kind)
    x, y = _batch(200, 9)
    for n, i in ((200, 0), (200, 150), (129, 100), (50, 3), (48, 40)):
        x = x.clone()
        x[i] *= 100  # the removed record is clipped
        full, _ = clipped_sum(model, LOSS, x[:n], y[:n], 0.5, exact=True)
        keep = [j for j in range(n) if j != i]
        part, _ = clipped_sum(model, LOSS, x[keep], y[keep], 0.5, exact=True)
        assert float(torch.linalg.vector_norm(full - part)) <= 0.5 + float_sum_excess(0.5, n)


@pytest.mark.parametrize("scale", [1e-4, 3.0, 1e4])
@pytest.mark.parametrize("exact", [False, True])
def test_rescaled_and_unscaled_rows_match_the_vmap_route(scale, exact):
    """Input norms below, inside and above [2^-8, 2^8] (rows rescaled or not before the float32
    product), mixed in one batch: the sum agrees with the vmap route as in the test above."""
    model = _mlp(2, "tanh-bias")
    x, y = _batch(300, 6, scale=1.0)
    x[::3] *= scale  # a third of the rows at the other scale
    named = trainable(model)
    norms = np.linalg.norm(_exact_clipped(model, x, y, 1e30), axis=1)
    clip = float(np.median(norms))
    want, _ = _vmap_clipped_sum(model, named, LOSS, x, y, clip, exact=exact)
    got, _ = clipped_sum(model, LOSS, x, y, clip, exact=exact)
    assert float(torch.linalg.vector_norm(got - want)) <= 300 * 1e-5 * clip


@pytest.mark.parametrize(
    "loss",
    [nn.functional.cross_entropy, nn.functional.nll_loss, nn.CrossEntropyLoss()],
    ids=["cross_entropy", "nll_loss", "module"],
)
def test_batched_per_example_losses_equal_one_example_batches(loss):
    """The whole-batch per-example losses (reduction="none") of the plain functions give the
    gradients of one-example batches; a label outside the classes counts zero either way."""
    model = _mlp(0, "tanh-bias")  # nll_loss on raw outputs: -output[target], as good
    x, y = _batch(50, 7)
    y[4], y[20] = 3, -1  # outside the 3 classes
    got, _ = clipped_sum(model, loss, x, y, 0.5, exact=True)
    want, _ = _vmap_clipped_sum(model, trainable(model), guard_loss(loss), x, y, 0.5, exact=True)
    assert float(torch.linalg.vector_norm(got - want)) <= 50 * 1e-5 * 0.5
    alone, _ = clipped_sum(model, loss, x[4:5], y[4:5], 0.5, exact=True)
    assert float(torch.linalg.vector_norm(alone)) == 0.0
