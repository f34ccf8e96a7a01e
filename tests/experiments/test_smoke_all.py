"""CI runs ``dpfit reproduce --scale smoke`` of every registered experiment (one test)."""

import subprocess
import sys


def test_reproduce_smoke_of_all_registered_experiments(tmp_path, catalog_names):
    out = tmp_path / "report"
    cmd = [
        sys.executable,
        "-m",
        "dpfit",
        "reproduce",
        "--scale",
        "smoke",
        "--jobs",
        "2",
        "--out",
        str(out),
        "--no-progress",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    html = (out / "index.html").read_text()
    for name in catalog_names:  # what the subprocess registered, not this worker
        assert f'id="{name}"' in html, name
    assert "FAILED" not in html


def test_every_smoke_figure_panel_has_data(tmp_path, catalog_names):
    """Every panel of every experiment's figure draws something at smoke scale, or says in
    the panel why it cannot (an empty axes box in the report reads as a missing result).
    Runs the smoke trials in this process."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpfit.experiments import catalog, get, run  # noqa: F401 (catalog registers all)

    result = run(
        catalog_names, scale="smoke", store_path=tmp_path / "s.sqlite", jobs=2, progress=False
    )
    empty = []
    for name in catalog_names:
        exp = get(name)
        if exp.plot is None:
            continue
        for k, fig in enumerate(exp.plot(result.results[name])):
            empty += [
                f"{name} figure {k} panel {j} ({ax.get_title()!r})"
                for j, ax in enumerate(fig.axes)
                if ax.get_visible() and ax.axison and not ax.has_data() and not ax.texts
            ]
            plt.close(fig)
    assert not empty, empty
