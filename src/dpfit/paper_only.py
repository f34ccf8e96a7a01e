"""Helpers that reproduce a paper's literal choice: for experiments, never for real releases.

Each exists so that an experiment in :mod:`dpfit.experiments` can run exactly what a paper
ran; the library's defaults never use them, and none is exported from a core namespace:

* :func:`adassp_paper`: AdaSSP as Brown et al. (2024)'s figures ran it, with its bounds read
  off the data, so **not private**; it refuses to run without ``allow_nonprivate=True``
  (docs/brown2024.md).
* :func:`literal_threshold`: the DP-STAT count threshold ``theta = s`` as Varshney et al.
  (2022) print it in Alg. 3; it overshoots, and dpfit's default is
  :func:`dpfit.mechanisms.margin_threshold` (docs/varshney2022.md).
* :func:`lemma_2_6_c0`: the constant c0 of Brown et al.'s Lemma 2.6, with which Gaussian data
  satisfy their no-clipping condition; the certified clip it gives is far too conservative to
  use (docs/brown2024.md).
"""

from .baselines.adassp import adassp_paper
from .mechanisms.counts import literal_threshold
from .theory.dp_gd_clipping import lemma_2_6_c0

__all__ = ["adassp_paper", "lemma_2_6_c0", "literal_threshold"]
