"""Imports every experiment module so that it registers itself (one line per module)."""

from . import (  # noqa: F401
    brown2024,
    choquettechoo2024,
    choquettechoo2024_tables,
    inference_coverage,
    inference_coverage_diagnostics,
    inference_coverage_extremes,
    inference_coverage_iv,
    liang2025,
    liang2025_coverage,
    liang2025_fig3,
    liang2025_friendlycore,
    liang2025_real,
    liang2025_tuning,
    mechanism_check,
    menart2024,
    menart2024_beyond_pl,
    menart2024_grid_search,
    realdata_coverage,
    varshney2022,
    weak_iv_coverage,
)
