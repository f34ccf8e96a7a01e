"""Shared test configuration: a derandomised, deadline-free Hypothesis profile (STYLE 2.12)."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "dpfit",
    derandomize=True,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("dpfit")
