"""An Inspect ``.eval`` of about 2 MB whose sample summaries inflate to 1.9 GiB: refused, in seconds and little memory.

    python benchmarks/bench_archive_bomb.py

The archive (a valid header, and summaries.json streamed through Zstandard:
the same summary repeated) is written to a temporary folder and deleted at
the end; ``bayesrepro import inspect ARCHIVE --out t.parquet`` runs under
/usr/bin/time -v. Target: refused with exit status 2 and one line, within
10 s and far below the 6 GB that inflating and parsing it took.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import pyarrow as pa

from bayesrepro.harness.eval_zip import ZSTANDARD
from bayesrepro.harness.log_writers import InspectSample, write_inspect_log
from bayesrepro.harness.zip_writer import write_zip

INFLATED = int(1.9 * 2**30)
_LOCAL = "<4sHHHHHIIIHH"
_CENTRAL = "<4sHHHHHHIIIHHHHHII"
_END = "<4sHHHHIIH"


def write_bomb(path: Path) -> int:
    """The archive at ``path``: header.json of a finished run, then summaries.json inflating to INFLATED bytes."""
    import struct

    log_path = path.with_suffix(".json")
    write_inspect_log(log_path, task="qa", model="m/x", samples=[InspectSample("s0", 1, "q", "a", {"match": "C"})],
                      seed=1)
    header = json.loads(log_path.read_text())
    header.pop("samples")
    write_zip(path, [("header.json", json.dumps(header).encode())])
    summary = json.dumps({"id": "s0", "epoch": 1, "input": "q" * 4000, "target": "a",
                          "scores": {"match": {"value": "C"}}}).encode() + b","
    sink = pa.BufferOutputStream()
    crc, written = 0, 0
    with pa.CompressedOutputStream(sink, "zstd") as packer:
        for part in [b"["] + [summary * 1000] * ((INFLATED - 2) // (len(summary) * 1000)):
            packer.write(part)
            crc, written = zlib.crc32(part, crc), written + len(part)
        packer.write(b"0]")
        crc, written = zlib.crc32(b"0]", crc), written + 2
    packed = sink.getvalue().to_pybytes()
    # append the member: its local header and data where the central directory began, then a new directory
    data = path.read_bytes()
    end = data.rfind(b"PK\x05\x06")
    directory_start = struct.unpack_from(_END, data, end)[6]
    directory = data[directory_start:end]
    name = b"summaries.json"
    local = struct.pack(_LOCAL, b"PK\x03\x04", 63, 0, ZSTANDARD, 0, 0x21, crc, len(packed), written, len(name), 0)
    central = struct.pack(_CENTRAL, b"PK\x01\x02", 63, 63, 0, ZSTANDARD, 0, 0x21, crc, len(packed), written,
                          len(name), 0, 0, 0, 0, 0, directory_start)
    new_directory = directory + central + name
    body = data[:directory_start] + local + name + packed
    path.write_bytes(body + new_directory + struct.pack(_END, b"PK\x05\x06", 0, 0, 2, 2, len(new_directory),
                                                        len(body), 0))
    log_path.unlink()
    return written


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="bench_archive_bomb_"))
    try:
        archive = folder / "bomb.eval"
        inflated = write_bomb(archive)
        print(f"{archive.stat().st_size / 2**20:.1f} MB archive, summaries.json inflating to {inflated / 2**30:.2f} GiB")
        timing = folder / "time.txt"
        start = time.perf_counter()
        run = subprocess.run(["/usr/bin/time", "-v", "-o", str(timing), sys.executable, "-m", "bayesrepro", "import",
                              "inspect", str(archive), "--out", str(folder / "t.parquet")],
                             capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
        seconds = time.perf_counter() - start
        peak = float(re.search(r"Maximum resident set size \(kbytes\):\s*(\d+)", timing.read_text()).group(1)) / 1024
        print(f"exit status {run.returncode}, {seconds:.1f} s, peak {peak:.0f} MB; stderr: {run.stderr.strip()}")
        met = run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1 and seconds < 10 and peak < 1024
        print(f"target (exit 2, one line, < 10 s, < 1 GB): {'met' if met else 'MISSED'}")
    finally:
        shutil.rmtree(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
