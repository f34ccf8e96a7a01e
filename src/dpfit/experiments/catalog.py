"""Imports every experiment module so that it registers itself (one line per module)."""

from . import mechanism_check  # noqa: F401
