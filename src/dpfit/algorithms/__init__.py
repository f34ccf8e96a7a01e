"""Private algorithms: pure functions from arrays and public config to a Trajectory."""

from .adaptive_gd import adaptive_gd
from .ambssgd import dp_ambssgd, plan_ambssgd
from .dp_gd import dp_gd, dp_gd_given_noise, dp_gd_noise_std
from .ftrl import dp_ftrl, linear_cooldown, plan_ftrl
from .glm import dp_glm, plan_glm
from .kl_spider import kl_spider
from .noisy_gd import noisy_gd
from .proximal import proximal_point
from .ssgd import dp_ssgd
from .trajectory import Trajectory
from .two_stage import dp_second_stage_gd, dp_two_stage_gd, two_stage_gd

__all__ = [
    "Trajectory",
    "adaptive_gd",
    "dp_ambssgd",
    "dp_ftrl",
    "dp_gd",
    "dp_gd_given_noise",
    "dp_gd_noise_std",
    "dp_glm",
    "dp_second_stage_gd",
    "dp_ssgd",
    "dp_two_stage_gd",
    "kl_spider",
    "linear_cooldown",
    "noisy_gd",
    "plan_ambssgd",
    "plan_ftrl",
    "plan_glm",
    "proximal_point",
    "two_stage_gd",
]
