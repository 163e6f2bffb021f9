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
    if root is None:
        raise InputError(f"no data root found (no ${ENV_VAR}, and no ../shared/data with a "
                         f"MANIFEST.tsv); pass --data-root DIR or set {ENV_VAR}")
    if not root.is_dir():
        given = f"--data-root {data_root}" if data_root else f"${ENV_VAR}={root}"
        what = "is a file, not a folder" if root.exists() else "does not exist"
        raise InputError(f"data root {root} ({given}) {what}; give the folder that holds "
                         "MANIFEST.tsv")
    return root


MANIFEST_COLUMNS = ("path", "bytes", "sha256", "role")


@functools.lru_cache(maxsize=8)
def _load_manifest(manifest_path: str) -> dict[str, ManifestEntry]:
    entries: dict[str, ManifestEntry] = {}
    with open(manifest_path, newline="", encoding="utf-8-sig") as fh:  # a BOM is dropped
        reader = csv.DictReader(fh, delimiter="\t")
        missing = [c for c in MANIFEST_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise InputError(f"{manifest_path}: no column(s) {', '.join(missing)} in its header "
                             "line; a manifest is tab-separated, its first line naming the "
                             f"columns {', '.join(MANIFEST_COLUMNS)} (then license, source)")
        for line, row in enumerate(reader, start=2):
            try:
                size = int(row["bytes"])
            except (TypeError, ValueError):
                raise InputError(f"{manifest_path}, line {line}: bytes {row['bytes']!r} is not "
                                 "a whole number") from None
            e = ManifestEntry(
                path=row["path"], bytes=size, sha256=(row["sha256"] or "").lower(),
                role=row["role"] or "", license=row.get("license") or "",
                source=row.get("source") or "",
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
    """The manifest role of ``path`` (matched by sha256), or None when it is not listed. Bytes
    listed under several roles (a held-out file copied in as ``train``) take the held-out one:
    whichever row comes first, a held-out file never passes for a trainable one."""
    digest = sha256_file(path)
    roles = {e.role for e in load_manifest(data_root).values() if e.sha256 == digest}
    held_out = sorted(roles & HELD_OUT_ROLES)
    if held_out:
        return held_out[0]
    return min(roles) if roles else None


def require_role(path: str | Path, allowed: frozenset[str] | set[str],
                 data_root: str | Path | None = None, purpose: str = "training") -> str:
    """Refuse ``path`` unless its manifest role is in ``allowed``.

    Files not in the manifest are refused for training too (a held-out genome copied
    elsewhere would otherwise slip through); a user's own data is for inference, not for
    training the shipped model.
    """
    role = role_of(path, data_root)
    if role is None:
        listed = _listed_as(path, data_root)
        if listed is not None:  # the manifest names this file, with other bytes
            raise DataRoleError(
                f"{path}: its sha256 is not the one the data manifest lists for {listed.path} "
                f"({listed.sha256[:12]}..., {listed.bytes:,} bytes; this file has "
                f"{sha256_file(path)[:12]}..., {Path(path).stat().st_size:,} bytes): it was "
                f"changed or replaced; refusing to use it for {purpose}")
        raise DataRoleError(f"{path} is not in the data manifest; refusing to use it for {purpose}")
    if role not in allowed:
        raise DataRoleError(
            f"{path} has role '{role}' in the data manifest; {purpose} accepts only "
            f"{', '.join(sorted(allowed))}"
        )
    return role


def _listed_as(path: str | Path, data_root: str | Path | None) -> ManifestEntry | None:
    """The manifest row for ``path``'s place under the data root, if it has one."""
    root = resolve_data_root(data_root).resolve()
    try:
        rel = Path(path).absolute().relative_to(root)
    except ValueError:
        try:
            rel = Path(path).resolve().relative_to(root)
        except ValueError:
            return None
    return load_manifest(root).get(rel.as_posix())


def require_trainable(path: str | Path, data_root: str | Path | None = None) -> str:
    """The training loader's guard: only ``train`` and ``pretrain-only`` files pass. Loaders
    also pass the sequences they read to :func:`require_unseen` (the same genome in other
    bytes: decompressed, recompressed, converted to FASTA)."""
    return require_role(path, TRAINABLE_ROLES, data_root, purpose="training")


# ------------------------------------------------------------------- held-out sequences

# held-out files whose sequences are compared with the training records (compression aside)
_SEQUENCE_FILE = (".gbff", ".gbk", ".gb", ".fa", ".fna", ".fasta", ".fas")
_COMPRESSION = (".gz", ".bgz", ".xz", ".bz2")
# records shorter than this are not compared (a short motif may well recur by chance)
UNSEEN_MIN_BASES = 1_000
_COMPLEMENT = bytes.maketrans(b"ACGTRYKMSWBDHVN", b"TGCAYRMKSWVHDBN")  # IUPAC codes too


def sequence_digest(seq: bytes) -> str:
    """A digest of a sequence that ignores case and strand (the smaller of the two strands'
    upper-case bytes)."""
    up = bytes(seq).upper()
    rc = up.translate(_COMPLEMENT)[::-1]
    return hashlib.blake2b(min(up, rc), digest_size=16).hexdigest()


def _is_sequence_file(rel: str) -> bool:
    name = rel.lower()
    for z in _COMPRESSION:
        name = name.removesuffix(z)
    return name.endswith(_SEQUENCE_FILE)


@functools.lru_cache(maxsize=4)
def _held_out_digests(root: str) -> dict[str, tuple[str, str]]:
    """``{sequence digest: (path, role)}`` of every record of the manifest's held-out sequence
    files present under ``root`` (read once per process)."""
    out: dict[str, tuple[str, str]] = {}
    for e in sorted(load_manifest(root).values(), key=lambda e: e.path):
        path = Path(root) / e.path
        if e.role not in HELD_OUT_ROLES or not _is_sequence_file(e.path) or not path.is_file():
            continue
        from genoctx.io.annotation import read_sequences

        for _, seq in read_sequences(path, unique=False):
            if len(seq) >= UNSEEN_MIN_BASES:
                out.setdefault(sequence_digest(seq), (e.path, e.role))
    return out


def trainable_sequences(path: str | Path, data_root: str | Path | None = None,
                        source: str | None = None) -> tuple[str, list[tuple[str, bytes]]]:
    """``(role, records)`` of a training file, through both guards: its bytes' role
    (:func:`require_trainable`) and its records' sequences (:func:`require_unseen`). Training
    loaders read sequences only through this."""
    from genoctx.io.annotation import read_sequences

    role = require_trainable(path, data_root)
    records = read_sequences(path)
    require_unseen(records, source or str(path), data_root)
    return role, records


def require_unseen(records, source: str | Path, data_root: str | Path | None = None) -> None:
    """Refuse training records whose sequence (either strand, any case) is that of a record of
    a held-out file: the same genome under other bytes passes the sha256 check of
    :func:`require_trainable` (a decompressed or recompressed copy, a FASTA made from the
    GenBank file) but not this one. ``records`` are ``(name, sequence)``; records shorter than
    :data:`UNSEEN_MIN_BASES` are not compared."""
    held = _held_out_digests(str(resolve_data_root(data_root).resolve()))
    for name, seq in records:
        if len(seq) < UNSEEN_MIN_BASES:
            continue
        hit = held.get(sequence_digest(seq))
        if hit is not None:
            raise DataRoleError(f"{source}: record {name} has the sequence of a record of "
                                f"{hit[0]}, which has role '{hit[1]}' in the data manifest; "
                                "refusing to use it for training")


def data_file(rel: str, data_root: str | Path | None = None) -> Path:
    """Path of a manifest file under the data root; clear error when it is missing."""
    p = resolve_data_root(data_root) / rel
    if not p.exists():
        raise InputError(f"data file {rel} not found under {p.parent}")
    return p
