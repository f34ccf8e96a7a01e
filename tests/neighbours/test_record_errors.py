"""Errors never quote a record: one bad value in D and another in D' end the same way.

Every entry point that reads data goes through one boundary (``dpfit/_records.py``): another
library's exception raised by a record becomes a fixed :class:`dpfit.DataError` before
anything is charged, or the record becomes the zero record. Each test runs an entry point on
two datasets that differ in one record's bad value and asserts that what the caller sees is
identical and names neither value, and that nothing was charged before the error (a spy on
every ledger charge, a recorder of every draw, the budget untouched).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit import algorithms as alg
from dpfit.losses import SquaredLoss
from dpfit.mechanisms import recording
from dpfit.privacy import PrivacyLedger

#: Two bad values of one record: text that no float parser reads.
BAD = ("secret-4.2", "oops")
N = 4000


@pytest.fixture
def charges(monkeypatch):
    """Every entry charged to any ledger while the test runs."""
    seen: list = []
    charge = PrivacyLedger.charge

    def spy(self, entry):
        seen.append(entry)
        return charge(self, entry)

    monkeypatch.setattr(PrivacyLedger, "charge", spy)
    return seen


def _outcome(run, charges) -> tuple[str, str, int, int, float]:
    """(exception type, message, charges, draws, budget spent) of ``run(budget)``."""
    budget = dpfit.Budget(rho=2.0)
    before = len(charges)
    with recording() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfit.PrivacyWarning)
        try:
            run(budget)
        except Exception as exc:
            return type(exc).__name__, str(exc), len(charges) - before, len(rec), budget.spent
    return "no error", "", len(charges) - before, len(rec), budget.spent


def _assert_same_refusal(outcomes) -> None:
    (kind, message, charged, drawn, spent), other = outcomes
    assert outcomes[0] == other, "the two bad values ended differently"
    assert kind == "DataError", (kind, message)
    assert not any(part in message for value in BAD for part in (value, "secret", "4.2"))
    assert "\n" not in message
    assert (charged, drawn, spent) == (0, 0, 0.0), "charged before the error"


# -- Dask: a text cell in a column Dask's CSV reader inferred as float64 ---------------------
def _csv(tmp_path, value: str):
    """A Dask CSV frame whose last block holds ``value`` in x0 (Dask inferred float64 from the
    first block), and its public row lengths per partition."""
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.standard_normal((N, 5)), columns=["x0", "x1", "z0", "z1", "y"])
    frame = frame.astype({"x0": object})
    frame.loc[N - 1, "x0"] = value
    path = tmp_path / f"{BAD.index(value)}.csv"
    frame.to_csv(path, index=False)
    data = dd.read_csv(path, blocksize=40_000)
    as_text = dd.read_csv(path, blocksize=40_000, dtype={"x0": "object"})  # no value parsed
    data.attrs_rows = [int(n) for n in as_text.map_partitions(len).compute()]
    return data


def _arrays(data, *names, ndim=2):
    columns = list(names)
    return data[columns].to_dask_array() if ndim == 2 else data[columns[0]].to_dask_array()


RELATIONS = ["replace-one", "add-remove"]
GD = {"clip": 3.0, "steps": 4}


def _dp_gd(data, budget, relation):
    alg.dp_gd(
        _arrays(data, "x0", "x1"), _arrays(data, "y", ndim=1), rho=0.5, n_public=N,
        relation=relation, ledger=PrivacyLedger(budget=budget, relation=relation), rng=0, **GD,
    )  # fmt: skip


def _noisy_gd(data, budget, relation):
    alg.noisy_gd(
        SquaredLoss(y_bound=1.0, radius=2.0), _arrays(data, "x0", "x1"),
        _arrays(data, "y", ndim=1), rho=0.5, steps=4, n_public=N, relation=relation,
        ledger=PrivacyLedger(budget=budget, relation=relation), rng=0,
    )  # fmt: skip


def _two_stage(data, budget, relation):
    alg.dp_two_stage_gd(
        _arrays(data, "x0", "x1"), _arrays(data, "y", ndim=1), _arrays(data, "z0", "z1"),
        rho_theta=0.25, rho_beta=0.25, steps=4, clip_theta=2.0, clip_beta=2.0, n_public=N,
        step_size_theta=0.5, step_size_beta=0.5,
        ledger=PrivacyLedger(budget=budget), rng=0,
    )  # fmt: skip


def _ambssgd(data, budget, relation):
    lengths = data.attrs_rows  # declared: a one-pass algorithm needs known chunk sizes
    alg.dp_ambssgd(
        data[["x0", "x1"]].to_dask_array(lengths=lengths), data["y"].to_dask_array(lengths=lengths),
        rho=0.5, feature_scale=2.0, residual_bound=10.0, steps=4, n_public=N,
        ledger=PrivacyLedger(budget=budget), rng=0,
    )  # fmt: skip


def _estimator(data, budget, relation, **params):
    model = dpfit.DPLinearRegression(
        rho=0.5, n_public=N, relation=relation, random_state=0, **params
    )
    model.fit(data[["x0", "x1"]], data["y"], budget=budget)


def _plain(data, budget, relation):
    _estimator(data, budget, relation, precondition=False, interval=None, **GD)


def _preconditioned(data, budget, relation):
    bounded = {"bounds": [(-4, 4)] * 2, "y_bounds": (-4, 4)}
    _estimator(data, budget, relation, steps=8, m=2, burn_in=0, **bounded)


def _ols(data, budget, relation):
    dpfit.ols(
        "y ~ x0 + x1", data, rho=0.5, budget=budget, n_public=N, relation=relation,
        random_state=0, m=2, burn_in=0, **GD,
    )  # fmt: skip


DASK_ENTRY_POINTS = {
    "dp_gd": (_dp_gd, RELATIONS),
    "noisy_gd": (_noisy_gd, RELATIONS),
    "dp_two_stage_gd": (_two_stage, ["replace-one"]),
    "dp_ambssgd": (_ambssgd, ["replace-one"]),
    "DPLinearRegression gd": (_plain, RELATIONS),
    "DPLinearRegression preconditioned": (_preconditioned, RELATIONS),
    "ols": (_ols, RELATIONS),
}


@pytest.mark.parametrize(
    "name, relation",
    [(name, rel) for name, (_, rels) in DASK_ENTRY_POINTS.items() for rel in rels],
)
def test_a_value_dask_cannot_read_is_refused_before_any_charge_quoting_nothing(
    tmp_path, charges, name, relation
):
    """Dask's reader raised "could not convert string to float: 'secret-4.2'" from the first
    reduction (under add/remove after the charge); every Dask input is now read once before
    the first charge and the reader's message is withheld."""
    dask = pytest.importorskip("dask")
    run = DASK_ENTRY_POINTS[name][0]
    outcomes = []
    for value in BAD:
        data = _csv(tmp_path, value)
        with dask.config.set(scheduler="synchronous"):
            outcomes.append(_outcome(lambda b, d=data: run(d, b, relation), charges))
    _assert_same_refusal(outcomes)


def _text_block(block: np.ndarray, value: str) -> np.ndarray:
    """A block whose values are text, the last row's first one ``value``: a graph whose blocks
    are not what its metadata (float64) declare."""
    out = block.astype(object)
    if out.shape[0] and block[-1, 0] == LAST:
        out[-1, 0] = value
    return out


LAST = 123.0  # the marked record (the last row of X)


@pytest.mark.parametrize("relation", RELATIONS)
def test_a_dask_value_that_is_not_a_number_is_the_zero_record(relation):
    """A block whose values are text although its metadata say float64 used to raise "could
    not convert string to float: 'secret-4.2'" on the worker, part-way through the fit; such
    a value is now read as NaN, which makes its record the zero record, and the fit releases
    the same as with that record missing its value."""
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(1)
    X = rng.standard_normal((N, 2))
    X[-1, 0] = LAST
    y = rng.standard_normal(N)

    def fit(value):
        if value is None:  # the reference: the record with a NaN, hence the zero record
            Xd = da.from_array(np.where(X == LAST, np.nan, X), chunks=(N // 4, 2))
        else:
            Xd = da.from_array(X, chunks=(N // 4, 2))
            Xd = Xd.map_blocks(_text_block, value=value, dtype=np.float64)
        with dask.config.set(scheduler="synchronous"):
            traj = alg.dp_gd(
                Xd, da.from_array(y, chunks=N // 4), rho=0.5, n_public=N, relation=relation,
                rng=0, **GD,
            )  # fmt: skip
        return traj.iterates

    reference = fit(None)
    for value in BAD:
        np.testing.assert_array_equal(fit(value), reference)


#: Text values of different lengths: NumPy's dtype for them (``<U48``, ``<U67``) says which.
LONG = ("oops" * 12, "secret-" + "4.2" * 20)


def test_an_in_memory_text_value_is_refused_naming_the_kind_only(charges):
    """check_array named NumPy's dtype, ``<U48`` or ``<U67``: the length of the longest text
    value, a record's. It now names the kind, ``str``, before anything is charged."""
    rng = np.random.default_rng(2)
    outcomes = []
    for value in LONG:
        X = rng.standard_normal((40, 2)).tolist()
        X[-1][0] = value
        run = lambda b, X=X: alg.dp_gd(  # noqa: E731
            X, np.zeros(40), rho=0.5, ledger=PrivacyLedger(budget=b), rng=0, **GD
        )
        outcomes.append(_outcome(run, charges))
    assert outcomes[0] == outcomes[1], outcomes
    kind, message, *counts = outcomes[0]
    assert kind == "TypeError" and message.endswith("got str"), message
    assert counts == [0, 0, 0.0]


def test_a_stream_chunk_with_a_text_value_gives_the_zero_record():
    """A later chunk of a one-pass stream was refused part-way through the pass ("X chunk must
    have a numeric dtype, got <U48"), after the charge and naming the value's length; it is now
    read value by value, and the text value makes its record the zero record."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 2))
    y = rng.standard_normal(300)

    def run(value):
        def chunks():
            for start in range(0, 300, 100):
                Xc = X[start : start + 100].tolist()
                if start == 200:  # a later chunk, read after the charge
                    Xc[-1][0] = value
                yield Xc, y[start : start + 100]

        traj = alg.dp_ssgd(chunks(), None, n_public=300, shuffle=False, rho=0.5, clip=1.0,
                           step_size=0.05, rng=0)  # fmt: skip
        return traj.iterates

    reference = run(float("nan"))  # a NaN record is the zero record
    for value in LONG:
        np.testing.assert_array_equal(run(value), reference)


def _strict_grads(theta, X, y):
    """Least-squares gradients that refuse a feature below -100, quoting it (a user's loss)."""
    if (X[:, 0] < -100).any():
        raise ValueError(f"feature out of range: {X[X[:, 0] < -100, 0]}")
    return X * (X @ theta - y)[:, None]


@pytest.mark.parametrize("relation", RELATIONS)
def test_a_user_loss_that_raises_on_a_record_gives_it_zero(relation):
    """A FunctionLoss that raised on one record stopped noisy_gd with its message (quoting the
    value); the record now contributes a zero gradient, exactly as a record whose gradient is
    zero (x = 0, y = 0) does, whatever its value."""
    from dpfit.losses import FunctionLoss

    loss = FunctionLoss(grads=_strict_grads, lipschitz=5.0)
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (200, 2))
    y = rng.uniform(-1, 1, 200)

    def run(first):
        Xr, yr = X.copy(), y.copy()
        Xr[7] = [first, 0.5] if first else [0.0, 0.0]  # x = 0, y = 0: a zero gradient
        yr[7] = 0.0
        traj = alg.noisy_gd(loss, Xr, yr, rho=0.5, steps=5, step_size=0.2, n_public=200,
                            relation=relation, rng=0)  # fmt: skip
        return traj.iterates

    reference = run(0.0)
    for value in (-1e3, -5e4):
        np.testing.assert_array_equal(run(value), reference)
