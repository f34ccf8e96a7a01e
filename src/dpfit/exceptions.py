"""Errors and warnings raised by dpfit.

Custom errors exist only where no builtin is accurate, and each also subclasses the builtin
it refines, so ``except ValueError`` still catches it (diffprivlib ``BudgetError`` precedent).
Every warning subclasses :class:`PrivacyWarning`, so users can filter all of them at once.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "BudgetProcessError",
    "BudgetStoreError",
    "BudgetStoreWarning",
    "CoverageWarning",
    "DPFitError",
    "DaskOverheadWarning",
    "DataError",
    "IdentificationWarning",
    "InsecureRandomnessWarning",
    "LargeBudgetWarning",
    "NonPrivateWarning",
    "PrivacyWarning",
    "PrivatePreprocessingWarning",
    "RepeatedFitWarning",
    "SideConditionWarning",
    "UndeclaredLevelsWarning",
]


class DPFitError(Exception):
    """Base class of dpfit's own errors."""


class BudgetExceededError(DPFitError, ValueError):
    """A charge would exceed the privacy budget; nothing was charged and nothing drawn."""


class BudgetProcessError(DPFitError, RuntimeError):
    """An in-memory budget was used by a process that does not own it (a forked child).

    Its spends would be invisible to the parent, so each child could spend the whole budget
    again; a budget shared across processes must be a stored one (``dpfit.Budget.open``).
    """


class BudgetStoreError(DPFitError, OSError):
    """A budget store could not be written; the message says what was and was not charged."""


class DataError(DPFitError, ValueError):
    """The data could not be read, or code outside dpfit (a reader, a Dask task, a loss or a
    model) raised on them; the other library's message is withheld because it may quote a
    record, and nothing was charged unless the message says otherwise."""


class PrivacyWarning(RuntimeWarning):
    """Base of every dpfit warning; filter on this class to silence or escalate them all."""


class BudgetStoreWarning(PrivacyWarning):
    """A budget store could not record a refund or a fit's end: more stays charged than
    was drawn (never less), and the caller still gets what was released."""


class DaskOverheadWarning(PrivacyWarning):
    """Data on Dask so small (by their public size) that the same fit in memory is likely
    faster: each step's round trip to the workers costs more than its arithmetic
    (``docs/dask.md``, "Small data: in memory is faster")."""


class InsecureRandomnessWarning(PrivacyWarning):
    """Noise comes from a seeded, reproducible generator: fine for research, not for release."""


class LargeBudgetWarning(PrivacyWarning):
    """A privacy parameter is large enough that the guarantee is weak (rho, epsilon or delta)."""


class NonPrivateWarning(PrivacyWarning):
    """A computation runs without privacy: requested explicitly (``allow_nonprivate=True``),
    or a scikit-learn method that computes on the data it is given (an estimator's
    ``score``, R^2 on ``X`` and ``y``), whose output is safe to publish only when those data
    are public."""


class CoverageWarning(PrivacyWarning):
    """An interval may not cover: it is built outside the regime where its coverage is
    supported (e.g. m < 10), or the releases show a reason it can miss (the iterates still
    drift, clipping moves the estimate, weak instruments, noise that swamps the data)."""


class IdentificationWarning(PrivacyWarning):
    """The released moments cannot identify some direction of the coefficients at this n and
    rho: the terms named in the message are (nearly) collinear, so the estimate along that
    direction is mostly noise and the intervals of those terms are wide. Unlike a
    :class:`CoverageWarning` it does not forecast that the intervals miss (docs/inference.md,
    "Warning triage"); it says which terms to drop, combine or collect more records for."""


class SideConditionWarning(PrivacyWarning):
    """A theorem's condition on the public inputs fails: still private, but its utility
    guarantee (error bound, reliable private statistic) does not apply to this setting."""


class RepeatedFitWarning(PrivacyWarning):
    """The same data were fitted many times without a shared budget: tuning spends privacy."""


class UndeclaredLevelsWarning(PrivacyWarning):
    """A categorical column's levels come from its dtype, which ``astype("category")`` reads
    off the private data; declare them (``C(column, levels=[...])`` or a codebook)."""


class PrivatePreprocessingWarning(PrivacyWarning):
    """A step before a dpfit estimator (a scikit-learn ``Pipeline`` step such as
    ``StandardScaler``) learned from the private data, outside the privacy guarantee."""
