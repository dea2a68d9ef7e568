"""Files the package writes: checked before the work, written whole or not at all.

An analysis can take minutes; an unwritable ``--out`` must fail before it
starts, not after. A file is written to a temporary sibling and renamed over
the target only once complete, so a failed or interrupted write leaves the
previous file as it was and no partial file behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .errors import BayesreproError


def check_writable(path: str | Path, suffixes: tuple[str, ...] = (), option: str = "--out") -> Path:
    """The target as a Path, after checking that a file can be created or replaced there."""
    path = Path(path)
    if suffixes and not path.name.lower().endswith(suffixes):
        raise BayesreproError(f"{option} '{path}' should end in {' or '.join(suffixes)}")
    try:
        return _checked(path, option)
    except OSError as exc:  # a name too long for the file system, say
        raise BayesreproError(f"{option} '{path}' cannot be written: {exc.strerror or exc}") from None


def _checked(path: Path, option: str) -> Path:
    if path.is_dir():
        raise BayesreproError(f"{option} '{path}' is a directory; name a file inside it")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise BayesreproError(f"directory '{parent}' of {option} does not exist; create it first")
    if not parent.is_dir():
        raise BayesreproError(f"'{parent}' in {option} is a file, not a directory")
    if path.exists() and not path.is_file():   # a device or a FIFO: replacing it would remove it
        raise BayesreproError(f"{option} '{path}' exists and is not a regular file; name a file")
    if path.exists() and not os.access(path, os.W_OK):
        raise BayesreproError(f"{option} '{path}' exists and is not writable")
    # permission bits say too little (root, read-only mounts, ACLs): create and remove the temporary sibling
    try:
        handle, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=parent)
    except OSError as exc:
        raise BayesreproError(f"directory '{parent}' of {option} is not writable ({exc.strerror or exc})") from None
    os.close(handle)
    os.unlink(probe)
    return path


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on failure it is removed."""
    path = Path(path)
    # the name is shortened so that the temporary name stays within the file system's limit
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".partial", dir=path.parent or ".")
    os.close(handle)
    try:
        yield Path(temporary)
        os.chmod(temporary, _file_mode(path))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def write_atomic(path: str | Path, content: str | bytes) -> None:
    """Write ``content`` to ``path`` whole, or leave ``path`` as it was."""
    with atomic_path(path) as temporary:
        if isinstance(content, str):
            temporary.write_text(content, encoding="utf-8")
        else:
            temporary.write_bytes(content)


def _file_mode(path: Path) -> int:
    """The mode the file keeps (if it exists) or a new file gets; temporary files are created private (0600)."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
