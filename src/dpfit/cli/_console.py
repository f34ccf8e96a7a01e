"""What the command line shows besides results: tidy warnings and progress bars.

Warnings are one line each, shown once (the same category and message never twice), and a
warning raised by another library is named but its text withheld, since third-party messages
may quote data values (formulaic lists unseen category levels). Progress bars (tqdm) count
the releases made through :mod:`dpfit.mechanisms`, so they show only public quantities.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..exceptions import PrivacyWarning

__all__ = ["progress_wanted", "release_progress", "tidy_warnings"]

_PACKAGE = Path(__file__).resolve().parents[1]


def _from_dpfit(category: type[Warning], filename: str) -> bool:
    if issubclass(category, PrivacyWarning):
        return True
    try:
        return Path(filename).resolve().is_relative_to(_PACKAGE)
    except (OSError, ValueError):  # pragma: no cover - unusual file names
        return False


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


@contextlib.contextmanager
def tidy_warnings(command: str) -> Iterator[None]:
    """Within the block, print each distinct warning once as ``dpfit CMD: warning: ...``."""
    seen: set[tuple[type[Warning], str]] = set()

    def formatwarning(message, category, filename, lineno, line=None) -> str:
        if _from_dpfit(category, filename):
            text = _one_line(message)
        else:
            module = Path(filename).parent.name or "a library"
            text = f"from {module} (text withheld: it may quote data values)"
        return f"dpfit {command}: warning: {category.__name__}: {text}\n"

    def showwarning(message, category, filename, lineno, file=None, line=None) -> None:
        key = (category, str(message))
        if key in seen:
            return
        seen.add(key)
        (file or sys.stderr).write(formatwarning(message, category, filename, lineno))

    saved = warnings.formatwarning  # catch_warnings restores showwarning, not this
    with warnings.catch_warnings():
        if not sys.warnoptions:
            warnings.simplefilter("always", PrivacyWarning)  # deduplicated above instead
        warnings.formatwarning = formatwarning
        warnings.showwarning = showwarning
        try:
            yield
        finally:
            warnings.formatwarning = saved


def progress_wanted(flag: bool) -> bool:
    """Progress bars appear with ``--progress`` or when standard error is a terminal."""
    return bool(flag) or sys.stderr.isatty()


@contextlib.contextmanager
def release_progress(
    enabled: bool, *, total: int | None, desc: str, unit: str = "step"
) -> Iterator[Any]:
    """A tqdm bar advanced by the ``count`` of every release made inside the block.

    The bar appears only after a second (``delay``), so short fits stay quiet.
    """
    if not enabled:
        yield None
        return
    from tqdm.auto import tqdm

    from ..mechanisms.recorder import observing

    with tqdm(
        total=total, desc=desc, unit=unit, file=sys.stderr, delay=1.0, dynamic_ncols=True
    ) as bar:
        with observing(lambda entry: bar.update(entry.count)):
            yield bar
