"""``dpfit demo`` runs the README's main job end to end, in well under a minute."""

import time

import pytest

from dpfit.cli import main


def test_demo_end_to_end(tmp_path, capsys):
    start = time.perf_counter()
    assert main(["demo", "--seed", "0", "--out", str(tmp_path)]) == 0
    elapsed = time.perf_counter() - start
    assert elapsed < 60, elapsed  # brief: the demo finishes in under 60 s
    out = capsys.readouterr().out
    for piece in [
        "DP linear regression results",
        "Dep. variable:         lwage",
        "3010 (public)",
        "rho = 0.25",
        "NON-PRIVATE OLS",
        "Privacy: 0.25-zCDP",
    ]:
        assert piece in out, piece
    png = tmp_path / "card_wage_equation.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_rejects_bad_rho(tmp_path, capsys):
    assert main(["demo", "--rho", "0", "--out", str(tmp_path)]) == 2
    assert "rho" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["demo", "--rho", "abc"])
