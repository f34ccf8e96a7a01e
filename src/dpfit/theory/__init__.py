"""Closed-form predictions, schedules and recommendations next to every algorithm."""

from .dp_gd import (
    block_mean_covariance,
    c4,
    expected_interval_length,
    final_iterate_error,
    iterate_cross_covariance,
    iterate_law,
    stationary_covariance,
)
from .dp_gd_clipping import (
    DPGDRecommendation,
    NoClippingCondition,
    certified_clip,
    huber_target,
    no_clipping_condition,
    recommend_dp_gd,
)
from .kl import (
    PRESETS,
    AdaptiveGDParams,
    KLPreset,
    ProximalSchedule,
    SpiderSchedule,
    adaptive_gd_params,
    proximal_schedule,
    spider_schedule,
)
from .kl_rates import (
    adaptive_gd_bound,
    gamma_from_pl,
    kl_rate,
    noisy_gd_steps,
    proximal_bound,
    spider_bound,
    stationarity_bound,
)

__all__ = [
    "PRESETS",
    "AdaptiveGDParams",
    "DPGDRecommendation",
    "KLPreset",
    "NoClippingCondition",
    "ProximalSchedule",
    "SpiderSchedule",
    "adaptive_gd_bound",
    "adaptive_gd_params",
    "block_mean_covariance",
    "c4",
    "certified_clip",
    "expected_interval_length",
    "final_iterate_error",
    "gamma_from_pl",
    "huber_target",
    "iterate_cross_covariance",
    "iterate_law",
    "kl_rate",
    "no_clipping_condition",
    "noisy_gd_steps",
    "proximal_bound",
    "proximal_schedule",
    "recommend_dp_gd",
    "spider_bound",
    "spider_schedule",
    "stationarity_bound",
    "stationary_covariance",
]
