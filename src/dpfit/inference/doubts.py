"""One CoverageWarning per fit: every reason its interval may not cover, and one line of help.

The default fits (preconditioned DP-GD, AdaSSP's population interval, noisy-moment 2SLS)
check their releases for reasons why the population interval may not cover its target (the
iterates still drift, the bread or the meat is noise-dominated, clipping moves the estimate,
the first stage is weak, ...). Each check is a :class:`Doubt`: one sentence saying what the
releases show, and the remedies that address it. :func:`warn_doubts` turns a fit's doubts
into a single ``CoverageWarning`` whose last sentence names every remedy once, so that a
fit that trips three checks says what would help in one line, not three times. The text
depends on released quantities only (post-processing).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from .._validation import user_stacklevel
from ..exceptions import CoverageWarning

__all__ = ["HELPS", "Doubt", "warn_doubts"]

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
    """A reason the interval may not cover: what the releases show, and what would help."""

    reason: str
    helps: tuple[str, ...]

    def __post_init__(self) -> None:
        unknown = set(self.helps) - set(HELPS)
        if unknown:
            raise ValueError(f"unknown remedies {sorted(unknown)}; add them to HELPS")


def warn_doubts(doubts: Sequence[Doubt]) -> list[str]:
    """Warn once for all ``doubts`` (none: no warning); returns the message (for the notes)."""
    if not doubts:
        return []
    helps = {h for d in doubts for h in d.helps}
    message = (
        "The population interval may not cover: "
        + " ".join(d.reason for d in doubts)
        + " What would help: "
        + ", ".join(h for h in HELPS if h in helps)
        + "."
    )
    warnings.warn(message, CoverageWarning, stacklevel=user_stacklevel())
    return [message]
