"""Per-trial seeds: deterministic in (experiment, params, replicate), independent across them.

Derivation (documented because results depend on it):

1. ``key = sha256(name + "\\0" + canonical_params(params))``, read as a 256-bit integer;
2. ``SeedSequence(entropy=key, spawn_key=(replicate,))``, i.e. the ``replicate``-th child that
   ``SeedSequence(key).spawn`` would give;
3. the trial's seed is its first 64-bit state word shifted right by one (63 bits, so it fits a
   signed SQLite integer and is a valid ``rng`` for :func:`dpfit.mechanisms.make_noise_source`).

Replicates are sibling spawn children, which numpy's SeedSequence design makes statistically
independent; different grid points or experiments hash to unrelated entropy. Neither Python's
randomised ``hash`` nor any global state is involved, so seeds are identical across processes,
machines and runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from .store import canonical_params

__all__ = ["trial_seed"]


def trial_seed(experiment: str, params: Mapping[str, Any], replicate: int) -> int:
    """The seed (0 <= seed < 2**63) of one trial; see the module docstring for the derivation."""
    if not isinstance(experiment, str) or not experiment:
        raise TypeError("experiment must be a non-empty string")
    if isinstance(replicate, bool) or not isinstance(replicate, int | np.integer) or replicate < 0:
        raise ValueError(f"replicate must be an int >= 0, got {replicate!r}")
    text = experiment + "\0" + canonical_params(params)
    key = int.from_bytes(hashlib.sha256(text.encode()).digest(), "big")
    seq = np.random.SeedSequence(entropy=key, spawn_key=(int(replicate),))
    return int(seq.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
