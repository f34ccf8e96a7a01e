"""CI runs ``dpfit reproduce --scale smoke`` of every registered experiment (one test)."""

import subprocess
import sys

from dpfit.experiments import names


def test_reproduce_smoke_of_all_registered_experiments(tmp_path):
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
    for name in names():
        assert f'id="{name}"' in html, name
    assert "FAILED" not in html
