"""Reproduction harness: experiment registry, resumable SQLite store, runner and report."""

from .registry import SCALES, Claim, ClaimResult, Experiment, get, names, register

__all__ = ["SCALES", "Claim", "ClaimResult", "Experiment", "get", "names", "register"]
