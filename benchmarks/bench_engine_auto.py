"""``--engine auto`` on a Parquet file small on disk and large in memory, against DuckDB's own GROUP BY.

    python benchmarks/bench_engine_auto.py                 # 30 M rows, about 220 MB of Parquet
    python benchmarks/bench_engine_auto.py --million-rows 1   # a check in seconds

The file (item: 100,000 identifiers, system: 3, seed: 10, score rounded to
0.01, as evaluation scores are: dictionary-encoded, about 7.5 bytes a row)
is written to a temporary folder and deleted at the end. In one run:

- which engine ``auto`` picks, and the memory it expects the rows to take in pandas;
- DuckDB's own ``SELECT item, seed, count(*), sum(score) ... GROUP BY item, seed``;
- the whole command ``bayesrepro vca FILE --engine auto --formula F --json``
  under /usr/bin/time -v: wall seconds and peak resident memory.

Target: ``auto`` within 15x DuckDB's GROUP BY and under 4 GB peak memory
(the memory reader took 87 s and 8.5 GB on such a file, which is under the
256 MB on disk that once sent a file to DuckDB).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import CACHE, duckdb_group_by, whole_command  # noqa: E402

FORMULA = "score ~ system + (1|item) + (1|seed)"


def write_file(path: Path, million_rows: float) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    items = np.array([f"item{i:06d}" for i in range(100_000)])
    systems = np.array(["base", "sota", "ablation"])
    schema = pa.schema([("item", pa.string()), ("system", pa.string()), ("seed", pa.int64()), ("score", pa.float64())])
    rows = int(million_rows * 1_000_000)
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, 1_000_000):
            n = min(1_000_000, rows - start)
            item, system, seed = rng.integers(0, 100_000, n), rng.integers(0, 3, n), rng.integers(0, 10, n)
            score = np.round(rng.normal(0, 1, n) + item % 7 * 0.1 + system * 0.2 + seed * 0.01, 2)
            writer.write_table(pa.table({"item": items[item], "system": systems[system], "seed": seed, "score": score},
                                        schema=schema))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--million-rows", type=float, default=30)
    args = parser.parse_args()
    from bayesrepro.design.producers import LARGE_FRAME_BYTES, choose_engine
    from bayesrepro.design.producers.memory_estimate import expected_memory

    CACHE.mkdir(exist_ok=True)   # where whole_command keeps the timing of the command
    folder = Path(tempfile.mkdtemp(prefix="bench_engine_auto_"))
    try:
        path = folder / "scores.parquet"
        write_file(path, args.million_rows)
        print(f"machine: {os.cpu_count()} cores, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
        print(f"{args.million_rows:g} M rows, {path.stat().st_size / 2**20:.0f} MB of Parquet; expected in pandas "
              f"{expected_memory(path) / 2**20:,.0f} MB (DuckDB above {LARGE_FRAME_BYTES / 2**20:.0f} MB): "
              f"auto picks {choose_engine(str(path), 'auto')}")
        reference = duckdb_group_by(path)
        ours = whole_command(["vca", str(path), "--engine", "auto", "--formula", FORMULA, "--json"])
        print(f"DuckDB GROUP BY item, seed: {reference:.2f} s")
        if ours["status"] != "ok":
            print(f"bayesrepro vca --engine auto FAILED after {ours['seconds']:.1f} s: {ours['error']}")
            return 1
        ratio = ours["seconds"] / reference
        print(f"bayesrepro vca --engine auto: {ours['seconds']:.2f} s wall, {ours['cpu_seconds']:.1f} s CPU, peak "
              f"{ours['peak_mb']:.0f} MB; {ours['result']['n_obs']:,} rows")
        print(f"ratio {ratio:.1f}x (target <= 15x: {'met' if ratio <= 15 else 'MISSED'}); peak "
              f"(target < 4096 MB: {'met' if ours['peak_mb'] < 4096 else 'MISSED'})")
    finally:
        shutil.rmtree(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
