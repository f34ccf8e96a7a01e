"""Privacy accounting: zCDP ledger and budget, conversions, neighbouring relations."""

from ..exceptions import BudgetExceededError
from .budget import Budget
from .conversions import (
    approx_dp_to_zcdp,
    bun_steinke_epsilon,
    bun_steinke_rho,
    cks_delta,
    cks_epsilon,
    cks_rho,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu,
    zcdp_to_approx_dp,
)
from .filter import FilterEntry, privacy_filter
from .ledger import GaussianEntry, PrivacyLedger
from .parallel import ParallelEntry
from .pld import (
    PLDLedger,
    SubsampledGaussianEntry,
    joint_epsilon,
    subsampled_gaussian_epsilon,
    subsampled_gaussian_noise_multiplier,
)
from .queries import (
    Query,
    float_sum_excess,
    joint_sensitivity,
    mean_sensitivity,
    query_sensitivity,
    sum_sensitivity,
)
from .relations import Relation, parse_relation, public_n
from .shares import portions, split, split_rest
from .statement import format_rho
from .store import StoredBudget, open_budget

__all__ = [
    "Budget",
    "BudgetExceededError",
    "FilterEntry",
    "GaussianEntry",
    "PLDLedger",
    "ParallelEntry",
    "PrivacyLedger",
    "Query",
    "Relation",
    "StoredBudget",
    "SubsampledGaussianEntry",
    "approx_dp_to_zcdp",
    "bun_steinke_epsilon",
    "bun_steinke_rho",
    "cks_delta",
    "cks_epsilon",
    "cks_rho",
    "float_sum_excess",
    "format_rho",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mu",
    "joint_epsilon",
    "joint_sensitivity",
    "mean_sensitivity",
    "open_budget",
    "parse_relation",
    "portions",
    "privacy_filter",
    "public_n",
    "query_sensitivity",
    "split",
    "split_rest",
    "subsampled_gaussian_epsilon",
    "subsampled_gaussian_noise_multiplier",
    "sum_sensitivity",
    "zcdp_to_approx_dp",
]
