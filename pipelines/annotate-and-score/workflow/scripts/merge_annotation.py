"""Merge the annotated shards of one sample into one GFF3, BED, protein FASTA and bedGraph per track.

Each shard (``plan_shards.py``) annotated regions wider than their *cores*; a gene or RNA is
kept only from the shard whose core holds its 3' end (the stop codon of a gene), and each
bedGraph interval is clipped to its shard's cores. The cores of a contig partition it, so
every feature and every base is written once. The GFF3 and BED are rewritten with genoctx's
own writers: one ``##gff-version 3`` line, one ``##sequence-region`` per contig of the FASTA,
and IDs numbered again per contig in position order (unique across shards), or, when the sample
sheet gives the sample a ``locus_tag``, ``TAG_00001``... across the genome (``genoctx annotate
--locus-tag``); the proteins (``.faa``, as ``genoctx annotate --formats faa``) carry the same
IDs.
"""

# No `from __future__` imports: Snakemake runs this file after a preamble of its own.

import sys
from collections import defaultdict
from pathlib import Path
from urllib.parse import unquote

RNA_TYPES = ("tRNA", "tmRNA", "rRNA", "ncRNA")
Cores = dict[str, list[tuple[int, int]]]  # contig -> core intervals (0-based half-open)


def read_cores(bed: str | Path) -> Cores:
    """The cores of one shard from its plan BED (name column ``core=a-b``)."""
    cores: Cores = defaultdict(list)
    for line in Path(bed).read_text().splitlines():
        contig, _, _, name = line.split("\t")[:4]
        a, b = name.removeprefix("core=").split("-")
        cores[contig].append((int(a), int(b)))
    return dict(cores)


def three_prime(feature, length: int | None = None) -> int:
    """0-based position of a feature's last base along its strand; on a circle of ``length``
    a feature across the origin ends at ``end - length``."""
    pos = feature.start if feature.strand == -1 else feature.end - 1
    return pos % length if length else pos


def owned(feature, cores: Cores, length: int | None = None) -> bool:
    pos = three_prime(feature, length)
    return any(a <= pos < b for a, b in cores.get(feature.contig, ()))


def read_header(gff3: str | Path) -> tuple[dict[str, int], str | None, set[str]]:
    """Contig lengths (``##sequence-region``, in order), the model digest of the gene lines and
    the circular contigs (``region`` rows with ``Is_circular=true``)."""
    lengths, sha, circular = {}, None, set()
    with open(gff3) as fh:
        for line in fh:
            if line.startswith("##sequence-region"):
                _, name, _, end = line.split()
                lengths[unquote(name)] = int(end)
            elif "\tregion\t" in line and "Is_circular=true" in line:
                circular.add(unquote(line.split("\t")[0]))
            elif sha is None and "\tgene\t" in line and "model_sha256=" in line:
                sha = line.rstrip("\n").split("model_sha256=")[1].split(";")[0]
    return lengths, sha, circular


def read_rnas(gff3: str | Path) -> list:
    """The RNA features (tRNA/tmRNA/rRNA/ncRNA lines) of a genoctx GFF3 as RNACalls (with their
    product, inference and partial attributes, and the ends their sequence cut)."""
    from genoctx.heads.decoder import RNACall

    rnas = []
    with open(gff3) as fh:
        for line in fh:
            col = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(col) != 9 or col[2] not in RNA_TYPES:
                continue
            strand = {"+": 1, "-": -1}.get(col[6], 0)
            score = float("nan") if col[5] == "." else float(col[5])
            a = {k: unquote(v) for k, v in (kv.split("=", 1) for kv in col[8].split(";")
                                            if "=" in kv)}
            attrs = {k: a[k] for k in ("product", "inference", "partial") if k in a}
            cut = (a.get("start_range", "").startswith("."), a.get("end_range", "").endswith("."))
            if any(cut):  # which ends the shard's sequence cut (the writer marks them again)
                attrs["cut"] = cut
            rnas.append(RNACall(unquote(col[0]), int(col[3]) - 1, int(col[4]), strand, col[2],
                                score, attrs))
    return rnas


def merge_features(shards: list[tuple[Cores, str | Path]]
                   ) -> tuple[list, list, dict, str | None, set[str]]:
    """Genes, RNAs, contig lengths, model digest and circular contigs of all shards, each
    feature kept once."""
    from genoctx.io.writers import read_gff3_genes

    genes, rnas, lengths, sha, circular = [], [], {}, None, set()
    for cores, gff3 in shards:
        shard_lengths, shard_sha, shard_circular = read_header(gff3)
        for contig, n in shard_lengths.items():
            lengths.setdefault(contig, n)
        sha = sha or shard_sha
        circular |= shard_circular
        ring = {c: shard_lengths[c] for c in shard_circular}
        genes += [g for g in read_gff3_genes(gff3) if owned(g, cores, ring.get(g.contig))]
        rnas += [r for r in read_rnas(gff3) if owned(r, cores, ring.get(r.contig))]
    return genes, rnas, lengths, sha, circular


def _shard_lines(path: str | Path) -> dict[str, list[tuple[int, int, str]]]:
    """One shard's bedGraph lines by contig, ``(start, end, value)`` in file order, values kept
    as written."""
    lines: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    with open(path) as fh:
        for line in fh:
            if line.startswith(("track", "#", "browser")) or not line.strip():
                continue
            contig, lo, hi, value = line.rstrip("\n").split("\t")
            lines[contig].append((int(lo), int(hi), value))
    return lines


def _clip(rows: list[tuple[int, int, str]], a: int, b: int) -> list[tuple[int, int, str]]:
    """``rows`` clipped to the core ``[a, b)``, by start (file order among equal starts)."""
    out = [(max(lo, a), min(hi, b), v) for lo, hi, v in rows if max(lo, a) < min(hi, b)]
    out.sort(key=lambda r: r[0])
    return out


def merge_bedgraph(parts: list[tuple[Cores, str | Path]], order: dict[str, int], name: str,
                   out: str | Path) -> None:
    """One bedGraph from shard tracks: clipped, sorted, equal neighbours joined.

    Streams core by core (the cores of all shards partition the contigs, so putting them in
    contig and position order puts every line in order). Memory holds one shard's lines, not
    the genome's; each shard is read once where its cores come one after another (a long
    contig's chunk, small contigs packed in FASTA order)."""
    from genoctx.io.atomic import atomic_open

    pieces = sorted(((order.get(contig, len(order)), contig, a, b, str(path))
                     for cores, path in parts for contig, spans in cores.items()
                     for a, b in spans), key=lambda p: p[:3])
    shard = (None, {})  # the last shard read: (path, its lines by contig)
    with atomic_open(out, "w", newline="\n") as fh:
        fh.write(f'track type=bedGraph name="{name}"\n')
        last = None  # [contig, start, end, value] not yet written
        for _, contig, a, b, path in pieces:
            if shard[0] != path:
                shard = (path, _shard_lines(path))
            buf = []
            for s, e, v in _clip(shard[1].get(contig, []), a, b):
                if last and last[0] == contig and last[2] == s and last[3] == v:
                    last[2] = e
                    continue
                if last:
                    buf.append(f"{last[0]}\t{last[1]}\t{last[2]}\t{last[3]}\n")
                last = [contig, s, e, v]
            fh.writelines(buf)
        if last:
            fh.write(f"{last[0]}\t{last[1]}\t{last[2]}\t{last[3]}\n")


def main(smk) -> None:
    from genoctx.io.fasta import FastaFile
    from genoctx.io.writers import assign_locus_tags, write_bed, write_gene_fasta, write_gff3

    cores = [read_cores(p) for p in smk.input.regions]
    genes, rnas, lengths, sha, circular = merge_features(list(zip(cores, smk.input.gff3)))
    if smk.params.locus_tag:
        genes, rnas = assign_locus_tags(genes, rnas, lengths, smk.params.locus_tag)
    write_gff3(smk.output.gff3, genes, rnas, lengths,
               attrs={"model_sha256": sha} if sha else None, circular=circular)
    write_bed(smk.output.bed, genes, rnas, lengths)
    with FastaFile(smk.input.fasta) as fa:  # proteins with the merged GFF3's IDs
        write_gene_fasta(smk.output.faa, genes, lengths, fa.fetch, protein=True,
                         translation_table=smk.params.translation_table)
    order = {c: i for i, c in enumerate(lengths)}
    tracks = list(smk.params.tracks)
    for track, out in zip(tracks, smk.output.bedgraph):
        # `genoctx annotate --out PREFIX` writes PREFIX.gff3 beside PREFIX.<track>.bedgraph
        paths = [f"{gff3[: -len('.gff3')]}.{track}.bedgraph" for gff3 in smk.input.gff3]
        merge_bedgraph(list(zip(cores, paths)), order, track, out)
    print(f"{len(cores)} shards -> {len(genes)} genes, {len(rnas)} RNAs", file=sys.stderr)


if "snakemake" in globals():
    from _smk import run_logged

    run_logged(main, snakemake)  # noqa: F821 (injected by Snakemake)
