"""Codebooks: the public bounds and levels of a dataset's columns, written down once.

``dpfit codebook init DATA`` writes a template from the data's schema only (column names and
types, placeholders to fill in: never a value, a minimum or a maximum of the data);
``dpfit check DATA --codebook FILE`` says what is still missing before anything is charged;
``dpfit fit``/``dpfit iv`` ``--codebook FILE`` and ``dpfit.ols``/``dpfit.iv`` ``codebook=``
use it (``docs/user-guide.md``, "Codebooks").
"""

from ._apply import apply_levels, fill_bounds
from ._codebook import TYPES, Codebook, Column, load_codebook
from ._preflight import Preflight, preflight
from ._template import template

__all__ = [
    "TYPES",
    "Codebook",
    "Column",
    "Preflight",
    "apply_levels",
    "fill_bounds",
    "load_codebook",
    "preflight",
    "template",
]
