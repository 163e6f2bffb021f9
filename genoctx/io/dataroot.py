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

import numpy as np

from genoctx.errors import DataRoleError, InputError
from genoctx.io.kmers import canonical_kmers

ENV_VAR = "GENOCTX_DATA_ROOT"
TRAINABLE_ROLES = frozenset({"train", "pretrain-only"})
HELD_OUT_ROLES = frozenset({"validation", "benchmark"})
# roles whose sequence files training records are compared with (require_unseen): the held-out
# ones, and test data kept for benchmarks (the C. elegans reads' reference holds the validation
# chunk's chromosome I)
COMPARED_ROLES = HELD_OUT_ROLES | {"test/bench"}


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
def _load_manifest(manifest_path: str, size: int = -1,
                   mtime_ns: int = -1) -> dict[str, ManifestEntry]:
    # size and mtime_ns key the cache: a manifest rewritten in this process is read again
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
                role=(row["role"] or "").strip().lower(), license=row.get("license") or "",
                source=row.get("source") or "",
            )
            if e.path in entries:  # a second row would decide the file's role by its order
                raise InputError(f"{manifest_path}, line {line}: {e.path} is listed a second "
                                 "time; a file has one row (one role)")
            entries[e.path] = e
    return entries


def load_manifest(data_root: str | Path | None = None) -> dict[str, ManifestEntry]:
    """Manifest rows keyed by path relative to the data root."""
    root = resolve_data_root(data_root)
    path = root / "MANIFEST.tsv"
    if not path.is_file():
        raise InputError(f"{root} has no MANIFEST.tsv; genoctx needs it to know each file's role")
    st = path.stat()
    return _load_manifest(str(path.resolve()), st.st_size, st.st_mtime_ns)


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


# The held-out files of the shared data as the project froze them (sha256, role, path): a
# second line of defence, shipped with the package, that a data root's own MANIFEST.tsv cannot
# relabel. Written by `python -c "from genoctx.io.dataroot import write_frozen_held_out;
# write_frozen_held_out()"` from the manifest's COMPARED_ROLES rows.
FROZEN_HELD_OUT = Path(__file__).resolve().parents[1] / "weights" / "HELD_OUT.tsv"


@functools.lru_cache(maxsize=1)
def frozen_held_out() -> dict[str, tuple[str, str]]:
    """``{sha256: (path, role)}`` of :data:`FROZEN_HELD_OUT` (empty when it is absent)."""
    if not FROZEN_HELD_OUT.is_file():
        return {}
    rows = FROZEN_HELD_OUT.read_text().splitlines()[1:]
    return {digest: (path, role) for digest, role, path in (r.split("\t") for r in rows if r)}


def write_frozen_held_out(data_root: str | Path | None = None,
                          path: Path = FROZEN_HELD_OUT) -> None:
    """Write :data:`FROZEN_HELD_OUT` from the manifest's rows of :data:`COMPARED_ROLES`."""
    rows = sorted((e.sha256, e.role, e.path) for e in load_manifest(data_root).values()
                  if e.role in COMPARED_ROLES and e.sha256)
    path.write_text("sha256\trole\tpath\n" + "".join("\t".join(r) + "\n" for r in rows))


def require_role(path: str | Path, allowed: frozenset[str] | set[str],
                 data_root: str | Path | None = None, purpose: str = "training") -> str:
    """Refuse ``path`` unless its manifest role is in ``allowed``.

    Files not in the manifest are refused for training too (a held-out genome copied
    elsewhere would otherwise slip through); a user's own data is for inference, not for
    training the shipped model. A file of the frozen held-out list (:func:`frozen_held_out`)
    keeps its role there, whatever the manifest says.
    """
    frozen = frozen_held_out().get(sha256_file(path))
    if frozen is not None and frozen[1] not in allowed:
        raise DataRoleError(
            f"{path} holds the bytes of {frozen[0]}, held out (role '{frozen[1]}') in genoctx's "
            f"frozen list ({FROZEN_HELD_OUT.name}), whatever the data manifest says; refusing "
            f"to use it for {purpose}")
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
_FASTA_SUFFIXES = (".fa", ".fna", ".fasta", ".fas")
_SEQUENCE_FILE = (".gbff", ".gbk", ".gb", *_FASTA_SUFFIXES)
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
    return name.endswith(_SEQUENCE_FILE) or _is_archive(rel)


def _is_archive(rel: str) -> bool:
    return rel.lower().endswith((".tar.gz", ".tgz", ".tar"))


def _archive_sequences(path: Path) -> list[tuple[str, bytes]]:
    """``(name, sequence)`` of every record of the FASTA files inside a tar archive (such as
    the validation C. elegans small-gene loci: a FASTA and a GFF3 per locus)."""
    import tarfile

    out = []
    with tarfile.open(path) as tar:
        for member in tar:
            if not (member.isfile() and member.name.lower().endswith(_FASTA_SUFFIXES)):
                continue
            text = tar.extractfile(member).read()
            for block in text.split(b">")[1:]:
                head, _, body = block.partition(b"\n")
                out.append((f"{member.name}:{head.split()[0].decode(errors='replace')}",
                            b"".join(body.split())))
    return out


# Near copies: the same genome with a few changes (SNPs, trimmed, rotated, cut into pieces,
# joined to another) keeps the held-out record's 32-mers nearly everywhere, while another
# species, or a strain a few percent apart, loses most of them. Each training record's 32-mers
# are sampled (one per 1,000 bases of a long record, more densely in a short one) and looked up
# among every 32-mer of the held-out sequence files (either strand); a run of
# NEAR_COPY_SAMPLES consecutive samples (100 kb of a long record), or all of a shorter record's,
# at least NEAR_COPY_SHARE of them found, is refused.
KMER = 32
NEAR_COPY_SAMPLES = 100
NEAR_COPY_SHARE = 0.9
_NEAR_COPY_MIN_SAMPLES = 10  # fewer valid samples than this say nothing
_BASE_CODE = np.full(256, 4, dtype=np.uint8)
for _i, _b in enumerate(b"ACGT"):
    _BASE_CODE[_b] = _BASE_CODE[_b | 0x20] = _i
_BASE_CODE[ord("U")] = _BASE_CODE[ord("u")] = 3


def kmer_codes(seq: bytes, positions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Canonical 2-bit codes (uint64, the smaller of the two strands') of the :data:`KMER`-mers
    of ``seq`` starting at ``positions`` (every start when None), and a mask of those that hold
    only A/C/G/T (any case; U as T); the codes of the others mean nothing."""
    code = _BASE_CODE[np.frombuffer(bytes(seq), np.uint8)]
    if len(code) < KMER:
        return np.zeros(0, np.uint64), np.zeros(0, bool)
    return canonical_kmers(code, KMER, positions)


def _held_out_index(root: str) -> tuple[dict[str, tuple[str, str]], list[np.ndarray],
                                        list[tuple[str, str]]]:
    """What :func:`require_unseen` compares with, from every record of the manifest's sequence
    files of :data:`COMPARED_ROLES` under ``root`` (read once per process and version of the
    manifest; one missing is an error): ``{sequence digest: (path, role)}``, the sorted
    canonical 32-mer codes of each file, and the files' ``(path, role)``."""
    manifest = Path(root) / "MANIFEST.tsv"
    if not manifest.is_file():
        load_manifest(root)  # says so in one line
    st = manifest.stat()
    return _held_out_index_of(root, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _held_out_index_of(root: str, size: int, mtime_ns: int):
    """:func:`_held_out_index` of one version of the manifest (the cache key: a manifest
    rewritten in the same process, a file relabelled held out, is read again)."""
    digests: dict[str, tuple[str, str]] = {}
    codes, files = [], []
    for rel, role, records in held_out_records(root):
        for _, seq in records:
            if len(seq) >= UNSEEN_MIN_BASES:
                digests.setdefault(sequence_digest(seq), (rel, role))
        c, ok = kmer_codes(b"N".join(seq for _, seq in records))  # no k-mer across records
        codes.append(np.sort(c[ok]))
        files.append((rel, role))
    return digests, codes, files


def held_out_records(root: str | Path):
    """``(path, role, records)`` of each sequence file of :data:`COMPARED_ROLES` in the
    manifest under ``root``, by path; one missing is a :class:`DataRoleError`."""
    from genoctx.io.annotation import read_sequences

    for e in sorted(load_manifest(root).values(), key=lambda e: e.path):
        path = Path(root) / e.path
        if e.role not in COMPARED_ROLES or not _is_sequence_file(e.path):
            continue
        if not path.is_file():  # what is not there cannot be compared: no training without it
            raise DataRoleError(f"{e.path} (role '{e.role}' in the data manifest) is missing "
                                f"under {root}; training compares every record with the "
                                "held-out sequences, so the data root must hold them all")
        yield e.path, e.role, (_archive_sequences(path) if _is_archive(e.path)
                               else read_sequences(path, unique=False))


def _near_copy(seq: bytes, codes: list[np.ndarray]) -> tuple[float, int, int] | None:
    """``(share, start, file index)`` of the densest run of sampled 32-mers of ``seq`` found in
    the held-out files' sorted ``codes``, when it reaches :data:`NEAR_COPY_SHARE`; else None.
    The file named is the one that holds most of the run's samples."""
    step = max(KMER, min(1_000, len(seq) // NEAR_COPY_SAMPLES))
    at = np.arange(0, max(0, len(seq) - KMER + 1), step)
    sample, ok = kmer_codes(seq, at)
    sample, at = sample[ok], at[ok]
    if len(sample) < _NEAR_COPY_MIN_SAMPLES or not codes:
        return None

    def in_file(code: np.ndarray, x: np.ndarray) -> np.ndarray:
        if not len(code):
            return np.zeros(len(x), bool)
        return code[np.minimum(np.searchsorted(code, x), len(code) - 1)] == x

    found = np.zeros(len(sample), bool)
    for code in codes:
        found |= in_file(code, sample)
    w = min(NEAR_COPY_SAMPLES, len(sample))
    run = np.concatenate([[0], np.cumsum(found)])
    per = run[w:] - run[:-w]
    best = int(np.argmax(per))
    if per[best] < NEAR_COPY_SHARE * w:
        return None
    window = sample[best:best + w]
    owner = int(np.argmax([in_file(code, window).sum() for code in codes]))
    return per[best] / w, int(at[best]), owner


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
    GenBank file) but not this one; nor does a near copy (:func:`_near_copy`: a few bases
    changed, trimmed, cut into pieces or joined to another sequence). ``records`` are ``(name,
    sequence)``; records shorter than :data:`UNSEEN_MIN_BASES` are not compared."""
    held, codes, files = _held_out_index(str(resolve_data_root(data_root).resolve()))
    for name, seq in records:
        if len(seq) < UNSEEN_MIN_BASES:
            continue
        hit = held.get(sequence_digest(seq))
        if hit is not None:
            raise DataRoleError(f"{source}: record {name} has the sequence of a record of "
                                f"{hit[0]}, which has role '{hit[1]}' in the data manifest; "
                                "refusing to use it for training")
        near = _near_copy(seq, codes)
        if near is not None:
            share, start, k = near
            raise DataRoleError(
                f"{source}: record {name} is a near copy of held-out sequence: {share:.0%} of "
                f"its sampled {KMER}-mers from base {start + 1:,} on are in {files[k][0]}, "
                f"which has role '{files[k][1]}' in the data manifest (another species or "
                "strain shares far fewer); refusing to use it for training")


def data_file(rel: str, data_root: str | Path | None = None) -> Path:
    """Path of a manifest file under the data root; clear error when it is missing."""
    p = resolve_data_root(data_root) / rel
    if not p.exists():
        raise InputError(f"data file {rel} not found under {p.parent}")
    return p
