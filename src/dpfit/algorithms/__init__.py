"""Private algorithms: pure functions from arrays and public config to a Trajectory."""

from .trajectory import Trajectory

__all__ = ["Trajectory"]
