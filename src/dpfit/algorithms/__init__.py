"""Private algorithms: pure functions from arrays and public config to a Trajectory."""

from .dp_gd import dp_gd, dp_gd_given_noise, dp_gd_noise_std
from .trajectory import Trajectory

__all__ = ["Trajectory", "dp_gd", "dp_gd_given_noise", "dp_gd_noise_std"]
