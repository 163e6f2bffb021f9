"""Write-then-rename, so that a failed command never leaves a partial output file."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from genoctx.errors import InputError
from genoctx.io.spool import is_stream


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _missing_folders(path: Path) -> list[Path]:
    """The folders above ``path`` that do not exist yet, deepest first."""
    out, here = [], path.parent
    while not here.exists() and here != here.parent:
        out.append(here)
        here = here.parent
    return out


def _remove_made(folders: list[Path]) -> None:
    """Remove the folders a failed write made (deepest first), those left empty only."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (another writer), gone, not ours to remove
            return


def _in_folder_of(path: Path, make):
    """``make(folder)`` for ``path``'s folder, made first when missing; a clear
    :class:`InputError` where that cannot be (a file in the way, no permission, no space)."""
    here = path.parent
    while not here.exists() and here != here.parent:  # the nearest folder that exists
        here = here.parent
    if not here.is_dir():
        raise InputError(f"cannot write {path}: {here} is a file, not a folder")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return make(path.parent)
    except PermissionError:
        raise InputError(f"cannot write {path}: the folder {here} is not writable") from None
    except OSError as exc:  # a read-only file system, no space left, ...
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


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
    # a stream is recognised through its links, before they are followed: /dev/stdout into a
    # pipe (or bash's >(...)) is a link to /proc/self/fd/N, whose own target, pipe:[id],
    # names no file
    if str(path) != "-" and is_stream(path):
        yield path  # a device or a FIFO: nothing to rename, and it must not be replaced
        return
    if path.is_symlink():
        path = path.resolve()
    sfx = suffix if suffix is not None else "".join(path.suffixes)
    folders = _missing_folders(path)  # removed again if the write fails
    fd, tmp = _in_folder_of(path, lambda folder: tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=f".tmp{sfx}", dir=folder))
    os.close(fd)
    tmp_path = Path(tmp)
    mode = 0o666 & ~_umask()  # mkstemp makes 0600; outputs get the usual mode
    os.chmod(tmp_path, mode)
    try:
        yield tmp_path
        os.chmod(tmp_path, mode)  # again: a writer may have made the file anew (safetensors)
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        _remove_made(folders)
        raise


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs) -> Iterator:
    """Open a temporary file beside ``path`` for writing; rename it onto ``path`` on success."""
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh


_HOST = socket.gethostname().replace(".", "_") or "host"


def _remove_stale_stages(folder: Path, name: str, keep: Path) -> None:
    """Remove the staging folders of ``name`` that a killed run left (SIGKILL, the OOM killer,
    a scheduler's hard limit): those made on this host by a process that is gone. A folder of
    another host (a shared file system) or of a live process is left alone."""
    start = f".{name}.{_HOST}."
    for stale in folder.glob(f".{glob.escape(name)}.*.tmp"):
        rest = stale.name[len(start):] if stale.name.startswith(start) else ""
        pid = rest.split(".", 1)[0]
        if stale == keep or not pid.isdigit() or _alive(int(pid)) or not stale.is_dir():
            continue
        shutil.rmtree(stale, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@contextlib.contextmanager
def staged_prefix(prefix: str | Path) -> Iterator[Path]:
    """Yield a prefix in a temporary folder beside ``prefix``, for a command that writes a set
    of files ``PREFIX.*``: when the block succeeds every file written under the yielded prefix
    is moved onto its name beside ``prefix``; when it fails (an error, Ctrl-C) none is, and the
    files already there are left as they were. Names are checked before any file is moved (a
    folder in the way fails without moving one); a symbolic link or a device is treated as by
    :func:`atomic_path`. Separate processes may write into the folder (it is a plain path)."""
    prefix = Path(prefix)
    owner = f".{prefix.name}.{_HOST}.{os.getpid()}."
    folders = _missing_folders(prefix)  # removed again if the command fails
    stage = Path(_in_folder_of(prefix, lambda folder: tempfile.mkdtemp(
        prefix=owner, suffix=".tmp", dir=folder)))
    _remove_stale_stages(stage.parent, prefix.name, keep=stage)
    ok = False
    try:
        yield stage / prefix.name
        moves = []
        for made in sorted(stage.iterdir()):
            dest = prefix.with_name(made.name)
            if dest.is_symlink():
                dest = dest.resolve()
            if dest.is_dir():
                raise InputError(f"cannot write {dest}: it is a folder")
            moves.append((made, dest))
        for made, dest in moves:
            if dest.parent == stage.parent and not is_stream(dest):
                os.replace(made, dest)
            else:  # a link to another folder (maybe another file system), a device, a pipe
                with atomic_path(dest) as tmp, open(made, "rb") as src, open(tmp, "wb") as out:
                    shutil.copyfileobj(src, out)
        ok = True
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if not ok:
            _remove_made(folders)
