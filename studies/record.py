"""A study's record: its figures and what produced them (the sources' git blob hashes, the package versions,
the date), so that a fast test can tell whether the figures still describe the code.

A source that changed without changing what the study measures (a comment, an import moved) can be accepted
without rerunning the study, with the reason kept in the record:

    python studies/record.py review NAME PATH "why the figures still hold"
"""

from __future__ import annotations

import datetime
import hashlib
import json
import platform
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "studies" / "results"
PACKAGES = ("numpy", "scipy", "pandas", "formulae", "pymc", "pytensor", "bambi", "nutpie", "numba", "statsmodels")


def blob_hash(path: Path) -> str:
    """The file's git blob hash (``git hash-object PATH``), computed without git."""
    content = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def source_files(patterns: list[str]) -> list[str]:
    """The files under the repository that ``patterns`` (globs relative to it) match, sorted."""
    return sorted({str(p.relative_to(ROOT)) for pattern in patterns for p in ROOT.glob(pattern) if p.is_file()})


def record_path(name: str) -> Path:
    return RESULTS / f"{name}.json"


def _snapshot() -> dict[str, str]:
    """The hash of every file of the package and the studies as the study starts (this module is imported then):
    a study runs for minutes, and a source changed meanwhile did not produce its figures."""
    return {path: blob_hash(ROOT / path) for path in source_files(["bayesrepro/**/*.py", "studies/*.py"])}


AT_START = _snapshot()


def write_record(name: str, patterns: list[str], figures: dict, command: str | None = None) -> Path:
    """Write ``studies/results/NAME.json``: ``figures`` and the hashes the files ``patterns`` match had when the
    study started (a file added since has none, so the freshness test names it)."""
    record = {
        "study": name,
        "command": command or f"python studies/{name}.py",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "packages": {package: _version(package) for package in PACKAGES},
        "patterns": patterns,
        "sources": {path: AT_START[path] for path in source_files(patterns) if path in AT_START},
        "reviewed": [],
        "figures": figures,
    }
    path = record_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return path


def load_record(name: str) -> dict:
    return json.loads(record_path(name).read_text())


def changed_sources(record: dict) -> list[str]:
    """The sources that differ from those the figures were produced with (changed, added or removed), less
    the changes reviewed as leaving the figures as they are."""
    accepted = {(entry["path"], entry["hash"]) for entry in record["reviewed"]}
    recorded = record["sources"]
    now = {path: blob_hash(ROOT / path) for path in source_files(record["patterns"])}
    return sorted(path for path in recorded.keys() | now.keys()
                  if recorded.get(path) != now.get(path) and (path, now.get(path)) not in accepted)


def review(name: str, path: str, reason: str) -> None:
    """Accept the present state of ``path`` for study ``name`` without a rerun, keeping ``reason``."""
    record = load_record(name)
    if path not in changed_sources(record):
        raise SystemExit(f"{path} is not a changed source of study {name}")
    current = ROOT / path
    record["reviewed"].append({"path": path, "hash": blob_hash(current) if current.exists() else None,
                               "reason": reason,
                               "date": datetime.date.today().isoformat()})
    record_path(name).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "review":
        raise SystemExit(__doc__.split("\n\n", 1)[1].strip())
    review(*sys.argv[2:])
