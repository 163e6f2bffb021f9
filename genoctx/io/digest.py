"""sha256 side files (``NAME.sha256``: ``digest  NAME``) for shipped fitted files."""

from __future__ import annotations

import json
from pathlib import Path

from genoctx.errors import InputError
from genoctx.io.dataroot import sha256_uncached


def write_digest(path: Path) -> str:
    """Write ``path``'s sha256 beside it as ``path.sha256``; return the digest."""
    digest = sha256_uncached(path)
    Path(f"{path}.sha256").write_text(f"{digest}  {path.name}\n")
    return digest


def verify_digest_file(path: Path, what: str, remedy: str) -> str:
    """Check ``path`` against ``path.sha256`` before anything reads it; return the digest.

    ``what`` names the file in the error, ``remedy`` says how to make it again.
    """
    want_file = Path(f"{path}.sha256")
    if not path.is_file() or not want_file.is_file():
        raise InputError(f"{path}: {what} (or its .sha256) missing; {remedy}")
    words = want_file.read_text(errors="replace").split()
    if not words:
        raise InputError(f"{want_file} is empty (it should hold {path.name}'s sha256); {remedy}")
    want = words[0]
    got = sha256_uncached(path)  # never a cached digest: the file may have changed in place
    if got != want:
        raise InputError(f"{path}: sha256 {got} does not match {want_file.name} ({want}): "
                         f"it is corrupt or was modified; {remedy}")
    return got


def write_fit_record(path: Path, module: str, data_root, weights: Path, **fields) -> None:
    """Write the JSON record shipped beside a fitted file: the command that refits it
    (``python -m module [--data-root DIR]``), the fitted file's sha256 (from its side file),
    then ``fields`` in the order given."""
    info = {"command": f"python -m {module}" + (f" --data-root {data_root}" if data_root else ""),
            "sha256": Path(f"{weights}.sha256").read_text().split()[0], **fields}
    Path(path).write_text(json.dumps(info, indent=2) + "\n")
