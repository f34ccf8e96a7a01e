"""Per-example losses with public Lipschitz / smoothness / weak-convexity constants."""

from .base import FunctionLoss, Loss, check_loss, per_example_gradients, split_data
from .glm import GLMLoss
from .huber import HuberLoss
from .logistic import LogisticLoss
from .lp import LpLoss
from .nonconvex import KarimiPLLoss, SineLinkLoss, WelschLoss
from .squared import SquaredDistanceLoss, SquaredLoss

__all__ = [
    "FunctionLoss",
    "GLMLoss",
    "HuberLoss",
    "KarimiPLLoss",
    "LogisticLoss",
    "Loss",
    "LpLoss",
    "SineLinkLoss",
    "SquaredDistanceLoss",
    "SquaredLoss",
    "WelschLoss",
    "check_loss",
    "per_example_gradients",
    "split_data",
]
