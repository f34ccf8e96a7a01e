"""A warning when a scikit-learn ``Pipeline`` step before a dpfit estimator learned from the data.

``Pipeline([("scale", StandardScaler()), ("fit", DPLinearRegression(...))])`` fits the
scaler on the private data first: its mean and standard deviation are released without
noise (they are stored on the fitted pipeline and shape every scaled record), so the
estimator's guarantee no longer covers what the pipeline reveals.

**How it is detected.** When a pipeline fits its last step it is on the call stack, in
``Pipeline.fit``, with that step as its final estimator. :func:`warn_fitted_upstream`, called
at the start of every dpfit estimator's ``fit``, looks up the stack for a
``sklearn.pipeline.Pipeline`` whose final estimator *is* the estimator being fitted and
inspects its earlier steps, which are fitted by then: a step learned from the data when it
has fitted attributes (scikit-learn's convention: a name ending in ``_``) beyond its input's
shape and names. ``FunctionTransformer``, ``Normalizer``, ``Binarizer``, ``PolynomialFeatures``
and :class:`dpfit.preprocessing.PublicScaler` learn nothing and pass; ``ColumnTransformer``,
``FeatureUnion`` and nested pipelines are inspected step by step.

**What it cannot see.** X scaled by hand before ``fit`` (``StandardScaler().fit_transform(X)``)
arrives as a plain array, indistinguishable from raw data; a pipeline-like wrapper other than
scikit-learn's ``Pipeline`` is not recognised; nor is a preprocessing step whose fitted state
does not follow the trailing-underscore convention. The user guide says so ("Pipelines").
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from .._validation import user_stacklevel
from ..exceptions import PrivatePreprocessingWarning

__all__ = ["learned_attributes", "warn_fitted_upstream"]

#: Fitted attributes that describe the input's shape or names only, not its values.
_SHAPE_ONLY = frozenset({"n_features_in_", "feature_names_in_", "n_output_features_"})
#: How far up the stack the pipeline is looked for (Pipeline.fit calls the step directly;
#: cross-validation and search add a few frames).
_MAX_FRAMES = 60


def learned_attributes(step: Any) -> list[str]:
    """Names of what ``step`` learned from the data it was fitted on (empty when nothing)."""
    if step is None or isinstance(step, str) or getattr(step, "_dpfit_public", False):
        return []  # "passthrough", "drop", or a dpfit step built from public inputs
    inner = getattr(step, "transformers_", None) or getattr(step, "transformer_list", None)
    if inner is None and hasattr(step, "steps"):
        inner = step.steps
    if inner is not None:  # ColumnTransformer, FeatureUnion, Pipeline: look inside
        found = []
        for item in inner:
            found += learned_attributes(item[1])
        return found
    return sorted(
        name
        for name in vars(step)
        if name.endswith("_") and not name.startswith("_") and name not in _SHAPE_ONLY
    )


def _calling_pipeline(estimator: Any) -> Any:
    """The scikit-learn Pipeline on the call stack whose final step is ``estimator``."""
    try:
        from sklearn.pipeline import Pipeline
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return None
    frame = sys._getframe(2)
    for _ in range(_MAX_FRAMES):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if isinstance(owner, Pipeline) and owner.steps and owner.steps[-1][1] is estimator:
            return owner
        frame = frame.f_back
    return None


def warn_fitted_upstream(estimator: Any) -> None:
    """Warn (:class:`~dpfit.exceptions.PrivatePreprocessingWarning`) when ``estimator`` is
    being fitted as the last step of a Pipeline whose earlier steps learned from the data."""
    pipeline = _calling_pipeline(estimator)
    if pipeline is None:
        return
    culprits = [
        f"{name!r} ({type(step).__name__}: learned {', '.join(learned)})"
        for name, step in pipeline.steps[:-1]
        if (learned := learned_attributes(step))
    ]
    if culprits:
        warnings.warn(
            f"Pipeline step {'; '.join(culprits)} was fitted on the private data before "
            f"{type(estimator).__name__}: what it learned is released without noise and "
            "shapes every record the estimator sees, so the privacy guarantee does not cover "
            "this pipeline. Scale with public constants instead: "
            "dpfit.preprocessing.PublicScaler(bounds=[...]) (docs/user-guide.md, Pipelines)",
            PrivatePreprocessingWarning,
            stacklevel=user_stacklevel(),
        )
