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
