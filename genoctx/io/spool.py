"""Inputs that can be read more than once: standard input and pipes copied to a temporary file.

Every reader here looks at a file twice or more (the format is sniffed from its first bytes,
then the file is opened again, indexed or seeked), which a pipe cannot do: ``/dev/stdin``,
``<(zcat genome.fa.gz)`` or a named FIFO would read as empty the second time. :func:`rereadable`
copies such an input once into a temporary file, which is removed afterwards, and leaves a
regular file as it is.

Errors raised inside the block that name the temporary copy are rewritten to name the input as
the user gave it (``standard input`` for ``-``).
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from genoctx.errors import GenoctxError, InputError


def is_stream(path: str | Path) -> bool:
    """Whether ``path`` is ``-`` (standard input) or names a pipe, socket or device: something
    that can be read once only."""
    if str(path) == "-":
        return True
    p = Path(path)
    return p.exists() and not p.is_file() and not p.is_dir()


def shown_name(path: str | Path) -> str:
    """How an input is named in messages: ``standard input`` for ``-``."""
    return "standard input" if str(path) == "-" else str(path)


@contextlib.contextmanager
def rereadable(path: str | Path, *, name: str = "input") -> Iterator[Path]:
    """``path`` as a file that can be opened and read again.

    ``-`` is standard input; a pipe or device (``/dev/stdin``, process substitution) is copied
    to a temporary file named ``name`` (the name matters only for messages that show it), which
    is removed when the block ends. A regular file, or a path that does not exist (the reader's
    own "does not exist" error then names it), is yielded unchanged.
    """
    if not is_stream(path):
        yield Path(path)
        return
    shown = shown_name(path)
    with tempfile.TemporaryDirectory(prefix="genoctx-input-") as tmp:
        copy = Path(tmp) / name
        with open(copy, "wb") as dst:
            if str(path) == "-":
                shutil.copyfileobj(sys.stdin.buffer, dst, 1 << 20)
            else:
                with open(path, "rb") as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
        try:
            yield copy
        except GenoctxError as exc:  # name the input as the user gave it
            raise type(exc)(str(exc).replace(str(copy), shown)) from None


def gunzip_copy(path: str | Path, dest: str | Path) -> Path:
    """Decompress a plain-gzip file into ``dest`` (htslib reads plain gzip but cannot rewind
    it, unlike bgzip); returns ``dest``.

    Raises:
        InputError: the data is truncated or corrupt.
    """
    import gzip

    try:
        with gzip.open(path, "rb") as src, open(dest, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except (OSError, EOFError) as exc:
        raise InputError(f"{path}: cannot decompress ({exc})") from None
    return Path(dest)
