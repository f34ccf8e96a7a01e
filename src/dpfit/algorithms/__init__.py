"""Private algorithms: pure functions from arrays and public config to a Trajectory."""

from .adaptive_gd import adaptive_gd
from .dp_gd import dp_gd, dp_gd_given_noise, dp_gd_noise_std
from .ftrl import dp_ftrl, linear_cooldown
from .kl_spider import kl_spider
from .noisy_gd import noisy_gd
from .proximal import proximal_point
from .trajectory import Trajectory

__all__ = [
    "Trajectory",
    "adaptive_gd",
    "dp_ftrl",
    "dp_gd",
    "dp_gd_given_noise",
    "dp_gd_noise_std",
    "kl_spider",
    "linear_cooldown",
    "noisy_gd",
    "proximal_point",
]
