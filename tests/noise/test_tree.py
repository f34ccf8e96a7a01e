"""Tree aggregation and restarts (reliability §4.6; spec §2.3 Table 3 and A11)."""

import numpy as np
import pytest

from dpfit.noise import fichtenberger, nu_dpftrl, restarted, tree_aggregation


@pytest.mark.parametrize("T", [1, 2, 3, 7, 8, 13, 16, 33])
def test_tree_factorisation_and_node_count(T):
    tree = tree_aggregation(T)
    B, C = tree.decoder_matrix(), tree.encoder_matrix()
    np.testing.assert_array_equal(B @ C, np.eye(T))
    assert (C != 0).sum(axis=0).max() == T.bit_length()  # nodes per record = bitlen(T)
    np.testing.assert_array_equal(tree.gram(np.arange(T)[None])[0], C.T @ C)
    # prefix sums of the noise are the dyadic decompositions: popcount(t + 1) nodes each
    AB = np.cumsum(B, axis=0)
    assert tree.prefix_error() == sum(bin(t + 1).count("1") for t in range(T)) == AB.sum()


@pytest.mark.parametrize(("T", "levels"), [(1000, 10), (1023, 10), (1024, 11), (1025, 11)])
def test_tree_single_participation_sensitivity_is_bitlen(T, levels):
    # ceil(log2 T) + 1 would be 11 for T = 1000 and 1023 (reliability §4.6)
    assert tree_aggregation(T).sensitivity_squared() == levels


def test_restart_at_epoch_boundaries_multiplies_by_k():
    block = nu_dpftrl(0.01, steps=30)
    mech = restarted(block, 20)
    assert mech.steps == 600 and mech.name.endswith("x20")
    got = mech.sensitivity_squared(participations=20, separation=30)
    assert got == pytest.approx(20 * block.sensitivity_squared(), rel=1e-12)
    np.testing.assert_allclose(
        mech.decoder_matrix() @ mech.encoder_matrix(), np.eye(600), atol=1e-12
    )


def test_restart_reduces_the_multi_epoch_sensitivity_of_nu_zero():
    full = fichtenberger(600).sensitivity_squared(20, 30)
    xs = restarted(fichtenberger(30), 20).sensitivity_squared(20, 30)
    assert xs < full / 5


@pytest.mark.parametrize(("z", "T", "rho"), [(5, 1024, 0.22), (10, 1023, 0.05), (1, 1000, 5.0)])
def test_tree_release_charges_bitlen_over_two_z_squared(z, T, rho):
    """Reliability §4.6 table: rho = bitlen(T) / (2 z^2) per record (zero-out = add/remove)."""
    from dpfit.mechanisms import make_noise_source
    from dpfit.noise import correlated_noise
    from dpfit.privacy import PrivacyLedger

    ledger = PrivacyLedger(relation="add-remove")
    correlated_noise(
        tree_aggregation(T),
        dim=1,
        clip=1.0,
        batch_size=1,
        noise_std=float(z),
        ledger=ledger,
        rng=make_noise_source(0),
    )
    assert ledger.rho == pytest.approx(rho, rel=1e-12)
