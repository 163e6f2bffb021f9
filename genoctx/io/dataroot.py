"""The data root, its manifest, and the role guard that keeps held-out data out of training.

The shared data folder carries ``MANIFEST.tsv`` with one row per file: path, bytes, sha256, role,
licence, source. Roles: ``train``, ``pretrain-only``, ``validation``, ``benchmark``, ``test`` ...
Training code asks :func:`require_role` for every file it opens; evaluation code asks for the
opposite. The check is by sha256, so a renamed or copied file keeps its role.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from genoctx.errors import DataRoleError, InputError

ENV_VAR = "GENOCTX_DATA_ROOT"
TRAINABLE_ROLES = frozenset({"train", "pretrain-only"})
HELD_OUT_ROLES = frozenset({"validation", "benchmark"})


@dataclass(frozen=True)
class ManifestEntry:
    path: str
    bytes: int
    sha256: str
    role: str
    license: str
    source: str


def default_data_root() -> Path | None:
    """``$GENOCTX_DATA_ROOT``, else ``../shared/data`` from the working directory or the repo."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    for base in (Path.cwd(), repo):
        for cand in (base / ".." / "shared" / "data", base / "shared" / "data"):
            if (cand / "MANIFEST.tsv").is_file():
                return cand.resolve()
    return None


def resolve_data_root(data_root: str | Path | None = None) -> Path:
    """The data root given, or the default; raises a clear error when there is none."""
    root = Path(data_root) if data_root else default_data_root()
    if root is None or not root.is_dir():
        raise InputError(
            f"no data root found (looked at {data_root or '$' + ENV_VAR + ', ../shared/data'}); "
            f"pass --data-root DIR or set {ENV_VAR}"
        )
    return root


@functools.lru_cache(maxsize=8)
def _load_manifest(manifest_path: str) -> dict[str, ManifestEntry]:
    entries: dict[str, ManifestEntry] = {}
    with open(manifest_path, newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            e = ManifestEntry(
                path=row["path"], bytes=int(row["bytes"]), sha256=row["sha256"],
                role=row["role"], license=row.get("license", ""), source=row.get("source", ""),
            )
            entries[e.path] = e
    return entries


def load_manifest(data_root: str | Path | None = None) -> dict[str, ManifestEntry]:
    """Manifest rows keyed by path relative to the data root."""
    root = resolve_data_root(data_root)
    path = root / "MANIFEST.tsv"
    if not path.is_file():
        raise InputError(f"{root} has no MANIFEST.tsv; genoctx needs it to know each file's role")
    return _load_manifest(str(path.resolve()))


def sha256_uncached(path: str | Path) -> str:
    """Hex sha256 of a file, always read afresh (checkpoint checks use this: no cache)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@functools.lru_cache(maxsize=256)
def _sha256_cached(path: str, size: int, mtime: float) -> str:
    return sha256_uncached(path)


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file (cached by path, size and mtime)."""
    st = os.stat(path)
    return _sha256_cached(str(Path(path).resolve()), st.st_size, st.st_mtime)


def role_of(path: str | Path, data_root: str | Path | None = None) -> str | None:
    """The manifest role of ``path`` (matched by sha256), or None when it is not listed."""
    digest = sha256_file(path)
    for e in load_manifest(data_root).values():
        if e.sha256 == digest:
            return e.role
    return None


def require_role(path: str | Path, allowed: frozenset[str] | set[str],
                 data_root: str | Path | None = None, purpose: str = "training") -> str:
    """Refuse ``path`` unless its manifest role is in ``allowed``.

    Files not in the manifest are refused for training too (a held-out genome copied
    elsewhere would otherwise slip through); a user's own data is for inference, not for
    training the shipped model.
    """
    role = role_of(path, data_root)
    if role is None:
        raise DataRoleError(f"{path} is not in the data manifest; refusing to use it for {purpose}")
    if role not in allowed:
        raise DataRoleError(
            f"{path} has role '{role}' in the data manifest; {purpose} accepts only "
            f"{', '.join(sorted(allowed))}"
        )
    return role


def require_trainable(path: str | Path, data_root: str | Path | None = None) -> str:
    """The training loader's guard: only ``train`` and ``pretrain-only`` files pass."""
    return require_role(path, TRAINABLE_ROLES, data_root, purpose="training")


def data_file(rel: str, data_root: str | Path | None = None) -> Path:
    """Path of a manifest file under the data root; clear error when it is missing."""
    p = resolve_data_root(data_root) / rel
    if not p.exists():
        raise InputError(f"data file {rel} not found under {p.parent}")
    return p
