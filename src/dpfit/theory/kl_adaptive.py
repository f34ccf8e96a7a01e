"""Public constants of filtered adaptive noisy GD (Menart et al. 2024, Alg. 3; docs/menart2024.md).

Like the other KL schedules (:mod:`dpfit.theory.kl`), a function of public inputs only, with
noise from the budget and the sensitivity (:func:`dpfit.mechanisms.noise_std_for_rho`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._validation import check_int, check_positive, check_real
from ..mechanisms import noise_std_for_rho
from ..privacy import Relation, mean_sensitivity, parse_relation

__all__ = ["AdaptiveGDParams", "adaptive_gd_params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AdaptiveGDParams:
    """Constants of filtered adaptive noisy GD (Alg. 3 as a privacy filter; docs/menart2024.md).

    Each regular step releases the gradient norm with noise ``norm_noise`` (cost
    ``norm_cost``) and the gradient with noise max(N_t / sqrt(d ell), ``floor_noise``); the
    floor step costs ``reserve``. The filter keeps the total <= rho on every path.
    """

    rho: float
    sensitivity: float
    step_size: float
    ell: float
    norm_noise: float
    norm_cost: float
    floor_noise: float
    reserve: float

    @property
    def max_regular_steps(self) -> int:
        """Most regular steps the filter allows: floor((rho - reserve) / norm_cost)."""
        return int((self.rho - self.reserve) // self.norm_cost)


def adaptive_gd_params(
    *,
    n: int,
    dim: int,
    rho: float,
    lipschitz: float,
    smoothness: float,
    fail_prob: float = 0.05,
    relation: Relation | str = Relation.REPLACE_ONE,
    reserve_share: float = 0.5,
    norm_cost: float | None = None,
    step_size: float | None = None,
    rows_per_unit: int = 1,
) -> AdaptiveGDParams:
    """Alg. 3's public constants: eta = 1/(2 L1), ell = max(ln(n sqrt(rho)/beta), 1).

    Defaults reproduce the paper's noise under replace-one: the floor step's reserve is rho/2
    (sigma_floor = 2 L0/(n sqrt rho)) and each norm release costs 2 sqrt(rho)/n
    (sigma_N = L0/(sqrt(n) rho^(1/4))); the costs, not the sigmas, are what stays fixed under
    add/remove.

    With a privacy unit (``rows_per_unit`` = K > 1, n counting units) the objective is the
    mean over units of each unit's summed loss: its gradient sums up to K clipped rows per
    unit, so the sensitivity is K times the row one and the smoothness at most K L1
    (eta = 1/(2 K L1)).
    """
    n = check_int(n, "n", low=1)
    rows = check_int(rows_per_unit, "rows_per_unit", low=1)
    dim = check_int(dim, "dim", low=1)
    rho = check_positive(rho, "rho")
    relation = parse_relation(relation)
    L0 = check_positive(lipschitz, "lipschitz")
    L1 = check_positive(smoothness, "smoothness")
    beta = check_real(fail_prob, "fail_prob", low=0.0, high=1.0)
    reserve = check_real(reserve_share, "reserve_share", low=0.0, high=1.0) * rho
    cost = 2.0 * math.sqrt(rho) / n if norm_cost is None else check_positive(norm_cost, "norm_cost")
    eta = 1.0 / (2.0 * rows * L1) if step_size is None else check_positive(step_size, "step_size")
    sensitivity = mean_sensitivity(L0, n, relation, rows_per_unit=rows)
    return AdaptiveGDParams(
        rho=rho,
        sensitivity=sensitivity,
        step_size=eta,
        ell=max(math.log(n * math.sqrt(rho) / beta), 1.0),
        norm_noise=noise_std_for_rho(sensitivity, cost),
        norm_cost=cost,
        floor_noise=noise_std_for_rho(sensitivity, reserve),
        reserve=reserve,
    )
