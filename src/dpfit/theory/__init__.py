"""Closed-form predictions, schedules and recommendations next to every algorithm."""

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
    "KLPreset",
    "ProximalSchedule",
    "SpiderSchedule",
    "adaptive_gd_bound",
    "adaptive_gd_params",
    "gamma_from_pl",
    "kl_rate",
    "noisy_gd_steps",
    "proximal_bound",
    "proximal_schedule",
    "spider_bound",
    "spider_schedule",
    "stationarity_bound",
]
