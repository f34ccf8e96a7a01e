"""Render docs/figures/architecture.png: dpfit's layers and the path of one private release.

Run from the repository root: ``.venv/bin/python docs/_figures/architecture.py``. The layers
are read from the layer table of docs/architecture.md (the one tests/test_architecture.py
checks), so the picture is redrawn, not edited, when the table changes.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

OUT = Path(__file__).resolve().parents[1] / "figures" / "architecture.png"

PAGE = Path(__file__).resolve().parents[1] / "architecture.md"

#: What each layer of the page's table holds, top to bottom.
ROLES = [
    "the package",
    "entry points",
    "estimators, integrations",
    "algorithms → Trajectory",
    "intervals, closed forms",
    "correlated noise, losses",
    "the one noise path, data",
    "accounting",
    "shared checks",
]


def _layers() -> list[tuple[str, str]]:
    """(role, packages) per layer of the page's layer table; the top layer (the package
    itself) and the private modules other than _validation are left out of the picture."""
    text = PAGE.read_text(encoding="utf-8")
    lines = text[text.index("layer table:") :].splitlines()[1:]
    rows = [line for line in lines[: lines.index("")] if line.startswith("|")][2:]
    layers: dict[int, list[str]] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        layers.setdefault(int(cells[0]), []).append(re.findall(r"`([^`]+)`", cells[1])[0])
    return [
        (ROLES[k], "  ·  ".join(n for n in names if not n.startswith("_") or n == "_validation"))
        for k, names in sorted(layers.items())
        if k > 0
    ]


#: Layers, top to bottom: (role, packages). Imports only go down.
LAYERS = _layers()
COLOURS = ["#dbe9f6", "#dbe9f6", "#e3f1dc", "#e3f1dc", "#fdf0d5", "#fbe0d0", "#f6d5d5", "#eeeeee"]

#: One release, top to bottom: (what, where).
FLOW = [
    ("DPLinearRegression.fit", "models/linear.py: public config, budget check"),
    ("method table → dp_gd", "models/_linear_methods.py, algorithms/dp_gd.py"),
    ("declared sensitivity, noise std", "privacy.mean_sensitivity, mechanisms.noise_std_for_rho"),
    ("gaussian_releases(count=T)", "mechanisms/gaussian.py: GaussianEntry"),
    ("release(clipped mean)", "value + N(0, std^2 I) from the NoiseSource"),
    ("Trajectory → Result", "algorithms/trajectory.py, models/results.py"),
]
SIDE = [  # (flow row it hangs off, text, where)
    (3, "1. ledger.charge(entry)", "privacy/ledger.py → Budget.spend\n(raises before any draw)"),
    (4, "2. recorder.notify", "mechanisms/recorder.py\n(record / replay tests)"),
]


def _box(ax, x, y, w, h, colour, title, subtitle, *, size=10.5):
    ax.add_patch(
        FancyBboxPatch(
            (x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08", fc=colour, ec="#555555"
        )
    )
    ax.text(x + w / 2, y + h * 0.64, title, ha="center", va="center", fontsize=size, weight="bold")
    ax.text(x + w / 2, y + h * 0.28, subtitle, ha="center", va="center", fontsize=8.5)


def _arrow(ax, start, end, text=None):
    ax.add_patch(
        FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, lw=1.3, color="#333333")
    )
    if text:
        ax.text(
            (start[0] + end[0]) / 2 + 0.08,
            (start[1] + end[1]) / 2,
            text,
            fontsize=8.5,
            va="center",
            style="italic",
        )


def main() -> None:
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(15, 8.2), gridspec_kw={"width_ratios": [1, 1.35]}
    )
    for ax in (left, right):
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 10)
        ax.axis("off")

    # (a) layers
    left.set_title("(a) Layers: imports only go down", fontsize=13, loc="left")
    h, gap, top = 0.95, 0.2, 9.6
    for k, ((role, packages), colour) in enumerate(zip(LAYERS, COLOURS, strict=True)):
        y = top - (k + 1) * h - k * gap
        size = min(10.5, 10.5 * 64 / len(packages))  # long rows in a smaller font
        _box(left, 0.2, y, 9.4, h, colour, packages, role, size=size)
    _arrow(left, (0.05, top - 0.3), (0.05, 0.5))
    left.text(-0.05, 5.0, "imports", rotation=90, ha="right", va="center", fontsize=9)

    # (b) one release
    right.set_title("(b) One release: estimator → mechanism → ledger", fontsize=13, loc="left")
    h, gap, top = 1.0, 0.48, 9.6
    x, w = 0.1, 5.4
    ys = []
    for k, (what, where) in enumerate(FLOW):
        y = top - (k + 1) * h - k * gap
        ys.append(y)
        colour = "#fbe0d0" if k in (3, 4) else ("#dbe9f6" if k in (0, 5) else "#e3f1dc")
        _box(right, x, y, w, h, colour, what, where, size=10)
        if k:
            _arrow(right, (x + w / 2, ys[k - 1]), (x + w / 2, y + h))
    for row, what, where in SIDE:
        y = ys[row]
        _box(right, 6.3, y - 0.15, 3.6, h + 0.3, "#f6d5d5", what, where, size=10)
        _arrow(right, (x + w, y + h / 2), (6.3, y + h / 2))
    right.text(
        6.3,
        ys[4] - 0.75,
        "charge (1) happens before draw (2);\nnothing is drawn if it fails",
        fontsize=9,
        va="top",
    )

    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=110)
    print(OUT)


if __name__ == "__main__":
    main()
