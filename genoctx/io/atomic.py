"""Write-then-rename, so that a failed command never leaves a partial output file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from genoctx.errors import InputError
from genoctx.io.spool import is_stream


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | Path, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success.

    The temporary file keeps the target's suffix (``suffix`` overrides it) so that libraries
    which pick a format from the file name (numpy's ``.npz``, pysam's ``.vcf.gz``) still work.
    A symbolic link is followed (its target is replaced, the link kept); a path that exists and
    is not a regular file (``/dev/stdout``, a named pipe) is written to directly, never
    replaced.
    """
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    if str(path) != "-" and is_stream(path):
        yield path  # a device or a FIFO: nothing to rename, and it must not be replaced
        return
    here = path.parent
    while not here.exists() and here != here.parent:  # the nearest folder that exists
        here = here.parent
    if not here.is_dir():
        raise InputError(f"cannot write {path}: {here} is a file, not a folder")
    sfx = suffix if suffix is not None else "".join(path.suffixes)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{sfx}", dir=path.parent)
    except PermissionError:
        raise InputError(f"cannot write {path}: the folder {here} is not writable") from None
    except OSError as exc:  # a read-only file system, no space left, ...
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual mode
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs) -> Iterator:
    """Open a temporary file beside ``path`` for writing; rename it onto ``path`` on success."""
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh
