"""One warning per kind of forecast and fit: every reason it found, and one line of help.

The default fits (preconditioned DP-GD, AdaSSP's population interval, noisy-moment 2SLS)
check their releases for reasons why the population interval may not cover its target (the
iterates still drift, clipping moves the estimate, the first stage is weak, the noise swamps
the data, ...). Each check is a :class:`Doubt`: one sentence saying what the releases show,
the remedies that address it, and what it forecasts (:attr:`Doubt.shown`):

* ``"coverage"``: the interval may miss. Such reasons are measured to fire on few fits whose
  intervals cover (docs/inference.md, "Warning triage"); a fit's coverage reasons make one
  ``CoverageWarning``.
* ``"identification"``: some direction of the coefficients is mostly noise (collinear terms,
  named), which the interval's width already reflects; one ``IdentificationWarning``, since a
  user must act on it (drop or combine the terms), but not a forecast of under-coverage.
* ``"note"``: a fact about the interval that needs no action (it is conservative, or its width
  is itself uncertain): a line of the summary's notes, no warning.

:func:`warn_doubts` turns a fit's doubts into at most one warning of each class, whose last
sentence names every remedy once, so that a fit that trips three checks says what would help
in one line, not three times. The text depends on released quantities only (post-processing).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from .._validation import user_stacklevel
from ..exceptions import CoverageWarning, IdentificationWarning

__all__ = ["COVERAGE", "HELPS", "IDENTIFICATION", "NOTE", "Doubt", "warn_doubts"]

#: What a doubt forecasts (:attr:`Doubt.shown`; module docstring).
COVERAGE, IDENTIFICATION, NOTE = "coverage", "identification", "note"
#: Each forecast's warning and the words that open its message (notes have no warning; the
#: identification reasons and the notes say what they are in their first words).
_OPENINGS = {
    COVERAGE: (CoverageWarning, "The population interval may not cover: "),
    IDENTIFICATION: (IdentificationWarning, ""),
    NOTE: (None, ""),
}

#: Every remedy a doubt can name, in the order the help line lists them.
HELPS = (
    "a 0/1 response (recode it if it is not)",
    "more records",
    "more units",
    "a larger rho",
    "fewer or less collinear terms",
    "tighter bounds",
    "tighter y bounds",
    "wider y bounds",
    "stronger instruments",
    "more steps or a larger step size",
    "target='huber' (which covers the clipped, Huber-type fit instead)",
)


@dataclass(frozen=True)
class Doubt:
    """What the releases show against the interval, what would help, and what it forecasts
    (``shown``: :data:`COVERAGE`, :data:`IDENTIFICATION` or :data:`NOTE`)."""

    reason: str
    helps: tuple[str, ...]
    shown: str = COVERAGE

    def __post_init__(self) -> None:
        unknown = set(self.helps) - set(HELPS)
        if unknown:
            raise ValueError(f"unknown remedies {sorted(unknown)}; add them to HELPS")
        if self.shown not in _OPENINGS:
            raise ValueError(f"shown must be one of {sorted(_OPENINGS)}, got {self.shown!r}")


def warn_doubts(doubts: Sequence[Doubt]) -> list[str]:
    """Warn once per class for ``doubts`` (a ``CoverageWarning`` for the coverage reasons, an
    ``IdentificationWarning`` for the identification ones, none for notes); returns every
    message, warned or not, for the summary's notes."""
    messages = []
    for shown, (category, opening) in _OPENINGS.items():
        part = [d for d in doubts if d.shown == shown]
        if not part:
            continue
        helps = {h for d in part for h in d.helps}
        message = (
            opening
            + " ".join(d.reason for d in part)
            + " What would help: "
            + ", ".join(h for h in HELPS if h in helps)
            + "."
        )
        if category is not None:
            warnings.warn(message, category, stacklevel=user_stacklevel())
        messages.append(message)
    return messages
