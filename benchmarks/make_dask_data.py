"""Write a large linear-regression data set to disk chunk by chunk (never in memory at once).

X has i.i.d. N(0, 1) entries and y = X theta* + N(0, 1) with theta*_j = linspace(-1, 1, p);
chunk i is drawn from ``numpy.random.default_rng([seed, i])``, so the data set is the same
whatever the chunk order and any prefix can be regenerated. Formats:

* ``zarr`` (default): a group with arrays ``X`` (n, p) and ``y`` (n,), uncompressed float64,
  row chunks of ``--chunk-rows`` (read with ``dask.array.from_zarr(path, component="X")``);
* ``parquet``: one file per chunk with columns ``x0..x{p-1}, y`` (read with
  ``dask.dataframe.read_parquet``).

Usage (the benchmark's data set, n = 2e7, p = 50: 8 GB of float64)::

    python benchmarks/make_dask_data.py --n 20000000 --p 50 --out benchmarks/data/dpgd.zarr

The script refuses to start when the disk has less than 1.5x the data size free.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np


def theta_star(p: int) -> np.ndarray:
    """The true coefficients: evenly spaced in [-1, 1]."""
    return np.linspace(-1.0, 1.0, p)


def chunk(seed: int, index: int, rows: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Chunk ``index`` of the data set (rows x p features and the response)."""
    rng = np.random.default_rng([seed, index])
    X = rng.standard_normal((rows, p))
    y = X @ theta_star(p) + rng.standard_normal(rows)
    return X, y


def write_zarr(out: Path, n: int, p: int, rows: int, seed: int) -> None:
    import zarr

    group = zarr.open_group(str(out), mode="w")
    X = group.create_array("X", shape=(n, p), chunks=(rows, p), dtype="f8", compressors=None)
    y = group.create_array("y", shape=(n,), chunks=(rows,), dtype="f8", compressors=None)
    group.attrs.update({"n": n, "p": p, "seed": seed, "theta_star": theta_star(p).tolist()})
    for i, start in enumerate(range(0, n, rows)):
        stop = min(start + rows, n)
        X[start:stop], y[start:stop] = chunk(seed, i, stop - start, p)


def write_parquet(out: Path, n: int, p: int, rows: int, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    names = [f"x{j}" for j in range(p)] + ["y"]
    for i, start in enumerate(range(0, n, rows)):
        X, y = chunk(seed, i, min(rows, n - start), p)
        table = pa.Table.from_arrays([*X.T, y], names=names)
        pq.write_table(table, out / f"part-{i:05d}.parquet", compression="none")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-rows", type=int, default=250_000)
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--format", choices=("zarr", "parquet"), default="zarr")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/data/dpgd.zarr"))
    args = parser.parse_args()
    size = args.n * (args.p + 1) * 8
    free = shutil.disk_usage(args.out.parent if args.out.parent.exists() else Path(".")).free
    if free < 1.5 * size:
        raise SystemExit(f"need {1.5 * size / 1e9:.1f} GB free, have {free / 1e9:.1f} GB")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    writer = write_zarr if args.format == "zarr" else write_parquet
    writer(args.out, args.n, args.p, args.chunk_rows, args.seed)
    info = {**vars(args), "out": str(args.out), "bytes": size}
    info["seconds"] = round(time.perf_counter() - start, 1)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
