"""Writing and checking a data root's ``MANIFEST.tsv``: how a user's own genomes become data
that ``genoctx train`` reads, with each file's role decided once, by sha256.

:func:`write_manifest` lists every data file under a folder (path, bytes, sha256, role,
license, source); roles come from globs (``--held-out``, ``--benchmark``, ``--pretrain-only``)
over a default. :func:`check_manifest` reads each listed file again against its row and names
what differs, what is missing and what is not listed (training refuses unlisted files).
"""

from __future__ import annotations

import csv
import dataclasses
import fnmatch
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from genoctx.errors import InputError
from genoctx.io.dataroot import (
    MANIFEST_COLUMNS,
    TRAINABLE_ROLES,
    ManifestEntry,
    frozen_held_out,
    load_manifest,
    sha256_uncached,
)

MANIFEST = "MANIFEST.tsv"
COLUMNS = (*MANIFEST_COLUMNS, "license", "source")
ROLES = ("train", "pretrain-only", "validation", "benchmark", "test")
# index files are rebuilt from their data file (samtools faidx, tabix): not data of their own
INDEX_SUFFIXES = (".fai", ".gzi", ".bai", ".crai", ".csi", ".tbi")


def data_files(root: Path) -> list[str]:
    """Paths (relative, ``/``-separated, sorted) of the files under ``root`` a manifest lists:
    every regular file except the manifest itself, hidden files and folders, and indexes."""
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if rel.as_posix() == MANIFEST or path.name.endswith(INDEX_SUFFIXES):
            continue
        out.append(rel.as_posix())
    return sorted(out)


def _role(rel: str, default: str, globs: dict[str, list[str]]) -> str:
    """The role of ``rel``: the first of ``globs`` (role -> patterns) that matches, held-out
    roles first; else ``default``."""
    for role in ("benchmark", "validation", "test", "pretrain-only", "train"):
        if any(fnmatch.fnmatch(rel, pat) for pat in globs.get(role, ())):
            return role
    return default


@dataclass
class ManifestChanges:
    """What :func:`write_manifest` did."""

    added: list[ManifestEntry] = field(default_factory=list)
    kept: int = 0  # rows of an earlier manifest kept as they were (--update)
    missing: list[str] = field(default_factory=list)  # kept rows whose file is gone
    changed: list[str] = field(default_factory=list)  # kept rows whose file's size differs
    frozen: list[ManifestEntry] = field(default_factory=list)  # added with genoctx's own role


def write_manifest(root: str | Path, *, role: str = "train",
                   globs: dict[str, list[str]] | None = None, license: str = "",
                   source: str = "", update: bool = False,
                   progress: Callable[[int], None] | None = None) -> ManifestChanges:
    """Write ``root/MANIFEST.tsv`` listing :func:`data_files` with their sha256 and roles.

    An existing manifest is replaced only with ``update``, which keeps its rows as they are
    (a file's role never changes by a rerun; a row whose file is gone or changed size is kept
    and reported, since dropping a held-out row would let its bytes into training) and adds
    the files it does not list. A file whose bytes genoctx's frozen list holds out (the shared
    data's validation and benchmark genomes) is listed with that role, whatever the globs
    say. ``progress`` is told the bytes hashed."""
    from genoctx.io.atomic import atomic_path

    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root} is not a folder")
    globs = globs or {}
    for r in (role, *globs):
        if r not in ROLES:
            raise InputError(f"unknown role {r!r}; roles are {', '.join(ROLES)}")
    target = root / MANIFEST
    old: list[dict] = []
    if target.exists():
        if not update:
            raise InputError(f"{target} exists; --update adds the files it does not list "
                             "(its rows are kept as they are)")
        old = list(load_manifest(root).values())  # read (and checked) as training reads it
    changes = ManifestChanges(kept=len(old))
    frozen = frozen_held_out()
    listed = {e.path for e in old}
    for e in old:
        path = root / e.path
        if not path.is_file():
            changes.missing.append(e.path)
        elif path.stat().st_size != e.bytes:
            changes.changed.append(e.path)
    rows = [_row(e) for e in old]
    for rel in data_files(root):
        if rel in listed:
            continue
        path = root / rel
        sha = sha256_uncached(path)
        entry = ManifestEntry(rel, path.stat().st_size, sha, _role(rel, role, globs), license,
                              source)
        held = frozen.get(sha)  # genoctx's own held-out files keep their role anywhere
        if held is not None and held[1] != entry.role:
            entry = dataclasses.replace(entry, role=held[1])
            changes.frozen.append(entry)
        changes.added.append(entry)
        rows.append(_row(entry))
        if progress:
            progress(entry.bytes)
    if not rows:
        raise InputError(f"{root} holds no data files to list")
    text = io.StringIO()
    writer = csv.DictWriter(text, COLUMNS, delimiter="\t", lineterminator="\n")
    writer.writeheader()
    writer.writerows(sorted(rows, key=lambda r: r["path"]))
    with atomic_path(target) as tmp:
        Path(tmp).write_text(text.getvalue(), encoding="utf-8")
    return changes


def _row(e: ManifestEntry) -> dict[str, str]:
    return {"path": e.path, "bytes": str(e.bytes), "sha256": e.sha256, "role": e.role,
            "license": e.license, "source": e.source}


@dataclass
class ManifestCheck:
    """What :func:`check_manifest` found."""

    rows: int = 0
    roles: dict[str, int] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)   # sha256 or size differs from its row
    missing: list[str] = field(default_factory=list)   # listed, not there
    unlisted: list[str] = field(default_factory=list)  # there, not listed (training refuses)
    frozen: list[str] = field(default_factory=list)  # listed trainable, held out by genoctx

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or self.frozen)


def check_manifest(root: str | Path, *,
                   progress: Callable[[int], None] | None = None) -> ManifestCheck:
    """Hash every file ``root/MANIFEST.tsv`` lists against its row; name the files that
    differ, are missing or are not listed, and those listed for training whose bytes are
    held out in genoctx's own frozen list (:func:`genoctx.io.dataroot.frozen_held_out`:
    training refuses them whatever the manifest says)."""
    root = Path(root)
    if not (root / MANIFEST).is_file():
        raise InputError(f"{root} has no {MANIFEST}; write one with `genoctx data manifest "
                         f"{root}`")
    entries = load_manifest(root)
    found = ManifestCheck(rows=len(entries))
    frozen = frozen_held_out()
    for e in entries.values():
        found.roles[e.role] = found.roles.get(e.role, 0) + 1
        path = root / e.path
        if not path.is_file():
            found.missing.append(e.path)
            continue
        sha = sha256_uncached(path) if path.stat().st_size == e.bytes else None
        if sha != e.sha256:
            found.changed.append(e.path)
        elif e.role in TRAINABLE_ROLES and sha in frozen:
            found.frozen.append(e.path)
        if progress:
            progress(e.bytes)
    found.unlisted = [rel for rel in data_files(root) if rel not in entries]
    return found
