"""Plan the annotation shards of one FASTA: one BED file per shard (checkpoint ``plan_shards``).

A contig longer than ``shard_bases`` is cut into ``ceil(length / shard_bases)`` equal chunks.
Each chunk's *core* ``[a, b)`` is widened by ``overlap`` bases on both sides (clipped to the
contig) to give the region that is annotated, so genes crossing a cut are seen whole. Contigs
shorter than ``pack_below`` are packed, in FASTA order, into shards of up to ``shard_bases``;
the other contigs are one shard each (their core is the whole contig). ``whole`` names the
circles (True: every contig), which are never cut: a circle's genes may cross its origin, which
only a shard holding the whole contig can see. The rule passes the sample's circular mode:
"all", "declared" (the contigs whose FASTA headers say they are circular) or "".

Each BED line is ``contig, start, end, core=a-b`` (0-based half-open). ``merge_annotation.py``
keeps a feature only from the shard whose core holds its 3' end, so the cores of a contig
partition it and no feature is written twice.
"""

# No `from __future__` imports: Snakemake runs this file after a preamble of its own.

import sys
from collections.abc import Collection
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path


@dataclass(frozen=True)
class Piece:
    """One region of a shard: annotate ``[start, end)``, keep features whose 3' end is in the core."""

    contig: str
    start: int
    end: int
    core_start: int
    core_end: int

    def bed_line(self) -> str:
        return f"{self.contig}\t{self.start}\t{self.end}\tcore={self.core_start}-{self.core_end}\n"


def plan(lengths: dict[str, int], shard_bases: int, pack_below: int,
         overlap: int, whole: bool | Collection[str] = False) -> list[list[Piece]]:
    """Shards (lists of pieces) covering every base of every non-empty contig once (by cores)."""
    if shard_bases < 1 or pack_below < 0 or overlap < 0:
        raise ValueError("shard_bases must be >= 1, pack_below and overlap >= 0")
    shards: list[list[Piece]] = []
    pack: list[Piece] = []
    packed = 0
    for contig, n in lengths.items():
        if n == 0:
            continue
        if n < pack_below and n <= shard_bases:
            if pack and packed + n > shard_bases:
                shards.append(pack)
                pack, packed = [], 0
            pack.append(Piece(contig, 0, n, 0, n))
            packed += n
            continue
        circle = whole is True or (not isinstance(whole, bool) and contig in whole)
        k = 1 if circle else -(-n // shard_bases)
        cuts = [round(i * n / k) for i in range(k + 1)]
        for a, b in pairwise(cuts):
            shards.append([Piece(contig, max(0, a - overlap), min(n, b + overlap), a, b)])
    if pack:
        shards.append(pack)
    return shards


def write_plan(shards: list[list[Piece]], folder: Path) -> list[Path]:
    """``folder/0000.bed``, ``0001.bed`` ... one per shard."""
    folder.mkdir(parents=True, exist_ok=True)
    width = max(4, len(str(len(shards) - 1)))
    paths = []
    for i, shard in enumerate(shards):
        path = folder / f"{i:0{width}d}.bed"
        path.write_text("".join(p.bed_line() for p in shard))
        paths.append(path)
    return paths


def main(smk) -> None:
    from genoctx.io.fasta import FastaFile

    with FastaFile(smk.input.fasta) as fa:
        lengths = dict(fa.lengths)
    mode = str(smk.params.whole)
    if mode == "declared":
        from genoctx.io.fasta import circular_headers

        whole = frozenset(circular_headers(smk.input.fasta))
    else:
        whole = mode == "all"
    shards = plan(lengths, int(smk.params.shard_bases), int(smk.params.pack_below),
                  int(smk.params.overlap), whole=whole)
    if not shards:
        raise SystemExit(f"{smk.input.fasta} holds no sequence to annotate")
    write_plan(shards, Path(smk.output[0]))
    print(f"{len(lengths)} contigs, {sum(lengths.values()):,} bp -> {len(shards)} shards",
          file=sys.stderr)


if "snakemake" in globals():
    from _smk import run_logged

    run_logged(main, snakemake)  # noqa: F821 (injected by Snakemake)
