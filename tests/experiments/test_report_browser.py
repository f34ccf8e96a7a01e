"""The HTML report renders in headless Chromium: figures load and the claim table is there."""

import re
import shutil
import subprocess

import numpy as np
import pytest

from dpfit.experiments import run, write_report

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium(user_dir, *args) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={user_dir}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="BROWSER TEST SKIPPED: chromium is not installed (apt-get install -y chromium); "
    "the HTML report was NOT checked in a browser",
)
def test_report_renders_with_figures_and_claims(tmp_path, harness):
    from matplotlib.image import imread

    result = run(
        ["mechanism-check", harness.FAILING],
        scale="smoke",
        store_path=tmp_path / "s.sqlite",
        jobs=1,
        progress=False,
    )
    report = write_report(result, tmp_path / "report")
    url = report.html.resolve().as_uri()
    dom = _chromium(tmp_path / "profile", "--dump-dom", url).stdout
    # every figure is an <img> that loaded (a failed load adds class "broken")
    imgs = re.findall(r"<img [^>]*>", dom)
    assert len(imgs) == 2
    assert not [img for img in imgs if 'class="broken"' in img]
    rows = re.findall(r'<tr class="claim ([a-z-]+)">', dom)
    assert rows.count("fail") == 2 and rows.count("pass") == 6 and rows.count("deviation") == 2
    assert len(rows) == 14
    assert "2 claim(s) FAILED" in dom

    shot = tmp_path / "report.png"
    _chromium(tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,2000", url)
    pixels = imread(shot)
    assert pixels.shape[:2] == (2000, 1280)
    # not blank: the page has text, tables and figures, so many distinct colours
    colours = np.unique((pixels[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50
    shutil.copy(shot, report.html.parent / "screenshot.png")  # kept for a human look

    # the image check can fail: a missing figure is marked broken in the rendered DOM
    (report.html.parent / "figures" / "harness-failing-1.png").unlink()
    dom = _chromium(tmp_path / "profile", "--dump-dom", url).stdout
    assert len(re.findall(r'<img [^>]*class="broken"', dom)) == 1


#: Appended to a copy of the page: after layout, how far the page is wider than the window.
_MEASURE = (
    "<script>const e = document.documentElement;"
    "document.body.dataset.overflow = e.scrollWidth - e.clientWidth;</script>"
)


def _overflow(user_dir, page, html: str, width: int) -> int:
    """Pixels by which ``html`` scrolls sideways in a ``width``-pixel Chromium window."""
    page.write_text(html.replace("</body>", _MEASURE + "</body>"))
    dom = _chromium(user_dir, f"--window-size={width},900", "--dump-dom", page.as_uri()).stdout
    return int(re.search(r'data-overflow="(-?\d+)"', dom).group(1))


@pytest.mark.skipif(CHROMIUM is None, reason="BROWSER TEST SKIPPED: chromium is not installed")
def test_report_does_not_scroll_sideways_in_a_narrow_window(tmp_path, harness):
    """Wide results tables (many long parameter names) and long claim numbers scroll inside
    their own box; the page itself fits a 800-pixel window. Negative control: without the
    report's ``.scroll`` rule the same page is wider than the window."""
    import dataclasses

    wide = dataclasses.replace(
        harness.COUNTING,
        name="harness-wide",
        grid={
            s: [{"x": 1.0, **{f"a_rather_long_parameter_name_{k}": 1234567.891 for k in range(12)}}]
            for s in ("smoke", "quick", "paper")
        },
    )
    result = run(
        ["mechanism-check", wide, harness.FAILING],
        scale="smoke",
        store_path=tmp_path / "s.sqlite",
        jobs=1,
        progress=False,
    )
    html = write_report(result, tmp_path / "report").html.read_text()
    page = tmp_path / "report" / "measured.html"
    assert _overflow(tmp_path / "profile", page, html, 800) == 0
    unboxed = html.replace(".scroll { overflow-x: auto; max-width: 100%; }", "")
    # side-by-side blocks are a flex box, which shrinks a wide table too: remove it as well
    unboxed = re.sub(r"\.blocks \{[^}]*\}", "", unboxed)
    assert unboxed.count("overflow-x") < html.count("overflow-x") and ".blocks {" not in unboxed
    assert _overflow(tmp_path / "profile", page, unboxed, 800) > 100


#: Appended to a copy of the page: the computed colours and texts a reader sees, into the DOM.
_LOOK = (
    "<script>const q = (s) => document.querySelector(s);"
    "const bg = (s) => q(s) ? getComputedStyle(q(s)).backgroundColor : 'none';"
    "document.body.dataset.deviationRow = bg('tr.claim.deviation');"
    "document.body.dataset.passRow = bg('tr.claim.pass');"
    "document.body.dataset.banner = q('p.banner').className + '|' + bg('p.banner');"
    "const text = (s) => q(s) ? q(s).textContent : 'none';"
    "document.body.dataset.caption = text('figcaption');"
    "document.body.dataset.paperCell = text('tr.claim.deviation td.paper');</script>"
)


def _look(user_dir, page, html: str) -> dict[str, str]:
    page.write_text(html.replace("</body>", _LOOK + "</body>"))
    dom = _chromium(user_dir, "--window-size=1280,900", "--dump-dom", page.as_uri()).stdout
    keys = ("deviation-row", "pass-row", "banner", "caption", "paper-cell")
    return {k: re.search(rf'data-{k}="([^"]*)"', dom).group(1) for k in keys}


@pytest.mark.skipif(CHROMIUM is None, reason="BROWSER TEST SKIPPED: chromium is not installed")
def test_an_asserted_deviation_is_amber_never_a_green_pass(tmp_path, harness):
    """A run whose only non-PASS claim asserts a deviation: the banner is amber and says so
    (not "passed"), the deviation's row is amber and not the pass rows' colour, the paper's
    statement is in its own cell beside ours, and each figure is captioned with the paper's
    figure. Negative control: the same page with every claim plain PASS is green."""
    import dataclasses

    (deviation,) = [c for c in harness.FAILING.claims if c.name == "asserted-deviation"]
    exp = dataclasses.replace(
        harness.FAILING, name="harness-deviation", figure="Figure 7", claims=[deviation]
    )
    result = run(
        ["mechanism-check", exp],
        scale="smoke",
        store_path=tmp_path / "s.sqlite",
        jobs=1,
        progress=False,
    )
    report = write_report(result, tmp_path / "report")
    html = report.html.read_text()
    seen = _look(tmp_path / "profile", tmp_path / "report" / "look.html", html)
    assert seen["banner"] == "banner deviation|rgb(255, 244, 220)"
    assert seen["deviation-row"] == "rgb(255, 244, 220)" != seen["pass-row"]
    assert seen["paper-cell"] == "Fig. 0: the mean is negative (-1)."
    banner = html.split('<p class="banner', 1)[1].split("</p>", 1)[0]
    assert "passed" not in banner and "1 assert a deviation" in banner
    assert re.search(r"<figcaption>[^<]*Figure 7 \(ours\)</figcaption>", html)

    shot = tmp_path / "deviation.png"
    _chromium(
        tmp_path / "profile",
        f"--screenshot={shot}",
        "--window-size=1280,1600",
        report.html.as_uri(),
    )
    shutil.copy(shot, report.html.parent / "screenshot-deviation.png")  # kept for a human look

    plain = dataclasses.replace(exp, claims=[dataclasses.replace(deviation, deviation=False)])
    result = run(
        ["mechanism-check", plain],
        scale="smoke",
        store_path=tmp_path / "s2.sqlite",
        jobs=1,
        progress=False,
    )
    html = write_report(result, tmp_path / "plain").html.read_text()
    seen = _look(tmp_path / "profile", tmp_path / "plain" / "look.html", html)
    assert seen["banner"].startswith("banner ok|") and seen["deviation-row"] == "none"
