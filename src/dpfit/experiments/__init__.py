"""Reproduction harness: experiment registry, resumable SQLite store, runner and report."""

from .registry import SCALES, Claim, ClaimResult, Experiment, get, names, register
from .report import Report, write_report
from .runner import RunResult, TrialError, run
from .seeds import trial_seed
from .store import ResultStore
from .verdicts import Verdict

__all__ = [
    "SCALES",
    "Claim",
    "ClaimResult",
    "Experiment",
    "Report",
    "ResultStore",
    "RunResult",
    "TrialError",
    "Verdict",
    "get",
    "names",
    "register",
    "run",
    "trial_seed",
    "write_report",
]
