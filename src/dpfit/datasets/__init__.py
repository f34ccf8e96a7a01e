"""Datasets: synthetic generators of the papers' designs and real (offline) datasets."""

from .iv_simulation import IVDesign, draw_iv_design

__all__ = ["IVDesign", "draw_iv_design"]
