"""Every code block of docs/dask.md runs as written, in order, in one namespace."""

import re
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="dask[distributed] is not installed")
pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (optional extra dpfit[dask])")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "dask.md"


def test_every_code_block_of_the_dask_page_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)  # the page writes census.parquet in the working directory
    namespace: dict = {"__name__": "docs_dask"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{PAGE.name} block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "DP linear regression" in out and "C(region, levels=['N', 'S', 'E', 'W'])[T.S]" in out
    assert namespace["budget"].remaining == pytest.approx(0.5)
    assert namespace["client"].status == "closed"
