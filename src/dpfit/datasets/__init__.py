"""Datasets: synthetic generators of the papers' designs and real (offline) datasets."""

from .iv_simulation import IVDesign, draw_iv_design
from .linear_gaussian import DESIGNS, LinearDesign, draw_linear_design
from .real import load_card, load_dataset, load_diabetes, load_labsup, load_mroz

__all__ = [
    "DESIGNS",
    "IVDesign",
    "LinearDesign",
    "draw_iv_design",
    "draw_linear_design",
    "load_card",
    "load_dataset",
    "load_diabetes",
    "load_labsup",
    "load_mroz",
]
