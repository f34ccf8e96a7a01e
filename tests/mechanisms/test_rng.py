"""Layer G: randomness policy, reproducibility, global state untouched, fork safety."""

import os
import random

import numpy as np
import pytest

from dpfit import InsecureRandomnessWarning
from dpfit.mechanisms import gaussian, make_noise_source
from dpfit.privacy import PrivacyLedger


def _draw(rng, n=8):
    return gaussian(
        np.zeros(n), sensitivity=1.0, noise_std=1.0, ledger=PrivacyLedger(), rng=rng, label="g"
    )


def test_seeded_source_is_reproducible_and_flagged():
    with pytest.warns(InsecureRandomnessWarning, match="seeded"):
        a = make_noise_source(42)
    with pytest.warns(InsecureRandomnessWarning):
        b = make_noise_source(42)
    assert a.seeded and b.seeded and a.backend == "fast"
    assert np.array_equal(_draw(a), _draw(b))
    assert not np.array_equal(_draw(make_noise_source(42)), _draw(make_noise_source(43)))


def test_generator_input_is_reproducible():
    a = make_noise_source(np.random.default_rng(5))
    b = make_noise_source(np.random.default_rng(5))
    assert np.array_equal(_draw(a), _draw(b))


def test_unseeded_sources_differ_and_are_not_flagged():
    a, b = make_noise_source(), make_noise_source()
    assert not a.seeded
    assert not np.array_equal(_draw(a), _draw(b))


def test_global_rng_state_untouched_and_unused():
    np_state = np.random.get_state()
    py_state = random.getstate()
    np.random.seed(0)
    first = _draw(make_noise_source())
    np.random.seed(0)
    second = _draw(make_noise_source())
    assert not np.array_equal(first, second)
    np.random.set_state(np_state)
    _draw(make_noise_source())
    _draw(make_noise_source(3))
    assert random.getstate() == py_state
    assert all(
        np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
        for x, y in zip(np.random.get_state(), np_state, strict=True)
    )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_gives_parent_and_child_different_noise():
    source = make_noise_source()
    _draw(source)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        os.write(w, _draw(source).tobytes())
        os._exit(0)
    os.close(w)
    child = np.frombuffer(os.read(r, 8 * 8), dtype=np.float64)
    os.waitpid(pid, 0)
    assert child.shape == (8,)
    assert not np.array_equal(child, _draw(source))


def test_spawned_children_are_independent_and_reproducible():
    a = make_noise_source(9).spawn(3)
    b = make_noise_source(9).spawn(3)
    assert np.array_equal(_draw(a[1]), _draw(b[1]))
    assert not np.array_equal(_draw(a[0]), _draw(a[2]))


def test_keyed_generator_regenerates_the_same_stream():
    s = make_noise_source(11)
    x = s.keyed_generator(17).standard_normal(5)  # not privacy noise: checks regeneration
    y = s.keyed_generator(17).standard_normal(5)
    z = s.keyed_generator(18).standard_normal(5)
    assert np.array_equal(x, y) and not np.array_equal(x, z)


@pytest.mark.parametrize("bad", [random.Random(0), np.random.RandomState(0), 1.5, "seed", True])
def test_unsupported_rng_types_raise(bad):
    with pytest.raises(TypeError, match="rng"):
        make_noise_source(bad)


@pytest.mark.parametrize("seed", [0, np.random.default_rng(0)])
def test_secure_with_a_seed_raises(seed):
    with pytest.raises(ValueError, match="secure"):
        make_noise_source(seed, secure=True)


def test_negative_seed_rejected():
    with pytest.raises(ValueError, match="seed"):
        make_noise_source(-1)
