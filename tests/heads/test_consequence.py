"""Consequences and classes of GeneModel against Biopython translation and the training labels.

Genes are real (pPCP1 GenBank CDS on both strands, A. thaliana spliced gene models) or built by
hand on real ORFs: a codon-length 'intron' cut out of a real ORF leaves the real protein except
for the one codon across the junction, so whole-protein translation stays a valid oracle.
"""

from __future__ import annotations

import pytest
from Bio.Seq import Seq

from genoctx.heads.consequence import GeneModel, most_severe, trim_alleles
from genoctx.io.annotation import Feature, read_features, read_sequences_genbank
from genoctx.io.fasta import FastaFile

COMP = str.maketrans("ACGT", "TGCA")


def revcomp(s: str) -> str:
    return s.translate(COMP)[::-1]


@pytest.fixture(scope="module")
def pcp1(example_genbank, tmp_path_factory):
    """(FastaFile named as the GenBank record, features) of the pPCP1 plasmid."""
    name, seq = next(read_sequences_genbank(example_genbank))
    path = tmp_path_factory.mktemp("pcp1") / "pPCP1.fa"
    path.write_text(f">{name}\n" + "\n".join(seq[i:i + 70].decode()
                                             for i in range(0, len(seq), 70)) + "\n")
    fa = FastaFile(path)
    yield fa, read_features(example_genbank)
    fa.close()


def genomic_positions(parts, strand):
    """Genomic coordinates of the spliced CDS in transcription order."""
    out = []
    for s, e in parts:
        out += list(range(s, e)) if strand > 0 else list(range(e - 1, s - 1, -1))
    return out


def spliced(fa, contig, parts, strand) -> str:
    seq = "".join(fa.fetch(contig, s, e).decode().upper() for s, e in sorted(parts))
    return seq if strand > 0 else revcomp(seq)


def oracle(cds_ref: str, cds_alt: str) -> str:
    """The consequence from whole-protein translation (real ORFs: the only stop is the last)."""
    if (len(cds_alt) - len(cds_ref)) % 3:
        return "frameshift"
    p_ref, p_alt = str(Seq(cds_ref).translate()), str(Seq(cds_alt).translate())
    assert p_ref.find("*") == len(p_ref) - 1, "test genes are complete ORFs"
    found = []
    start_kept = cds_alt[:3] in (cds_ref[:3], "ATG")
    if not start_kept:
        found.append("start_lost")
    stop = p_alt.find("*")
    if 0 <= stop < len(p_alt) - 1:  # earlier than the (shifted) annotated stop
        found.append("nonsense")
    elif stop < 0:
        found.append("stop_lost")
    if len(cds_alt) != len(cds_ref):
        found.append("inframe_indel")
    same = p_ref[1:] == p_alt[1:] and start_kept
    found.append("synonymous" if same else "missense")
    return most_severe(*found)


def other_genes(features, contig, gene) -> set[int]:
    """Bases of the other transcripts (an SNV there may have their more severe consequence)."""
    out = set()
    for f in features[contig]:
        if f.kind in ("CDS", "intron") and f.transcript_id != gene.transcript_id:
            out.update(g for s, e in f.parts for g in range(s - 8, e + 8))
    return out


def check_all_snvs(gm, fa, contig, parts, strand, near_boundary=(), skip=()):
    """Every SNV of the CDS against the oracle; ``near_boundary`` bases add splice_region."""
    cds = spliced(fa, contig, parts, strand)
    where = genomic_positions(sorted(parts, reverse=strand < 0), strand)
    seen = set()
    for i, g in enumerate(where):
        if g in skip:
            continue
        base = fa.fetch(contig, g, g + 1).decode().upper()
        for alt in "ACGT":
            if alt == base:
                continue
            t_alt = alt if strand > 0 else alt.translate(COMP)
            want = oracle(cds, cds[:i] + t_alt + cds[i + 1:])
            if g in near_boundary:
                want = most_severe(want, "splice_region")
            got = gm.consequence(contig, g, base, alt)
            assert got == want, (contig, g, base, alt, strand)
            seen.add(got)
    return seen


@pytest.mark.parametrize("strand", [1, -1])
def test_snvs_of_real_genes_match_translation(pcp1, strand):
    fa, features = pcp1
    contig = fa.contigs[0]
    cds = [f for f in features[contig] if f.kind == "CDS" and f.strand == strand]
    alone = [f for f in cds if not set(range(f.start, f.end)) & other_genes(features, contig, f)]
    gene = max(alone, key=lambda f: f.end - f.start)
    gm = GeneModel.from_features(features, fa)
    seen = check_all_snvs(gm, fa, contig, gene.parts, strand,
                          skip=other_genes(features, contig, gene))
    assert {"synonymous", "missense", "nonsense", "start_lost", "stop_lost"} <= seen
    # outside every gene
    gaps = [g for g in range(fa.lengths[contig]) if not any(f.start <= g < f.end
                                                            for f in features[contig])]
    assert gm.consequence(contig, gaps[0], "A", "C") == "noncoding"


def hand_spliced(fa, gene: Feature, phase_offset: int = 301):
    """Cut a codon-multiple intron out of a real ORF: ``(cds_parts, intron)`` in transcription
    order; the junction codon is checked not to be a stop."""
    s, e = gene.parts[0]
    for length in range(60, 200, 3):
        if gene.strand > 0:
            a, b = s + phase_offset, s + phase_offset + length
            parts = [(s, a), (b, e)]
        else:
            b, a = e - phase_offset, e - phase_offset - length
            parts = [(b, e), (s, a)]
        cds = spliced(fa, gene.contig, parts, gene.strand)
        if str(Seq(cds).translate()).find("*") == len(cds) // 3 - 1:
            return parts, (min(a, b), max(a, b))
    raise AssertionError("no intron length keeps the ORF open")


@pytest.mark.parametrize("strand", [1, -1])
def test_spliced_gene_codons_and_splice_sites(pcp1, strand):
    fa, features = pcp1
    contig = fa.contigs[0]
    gene = max((f for f in features[contig] if f.kind == "CDS" and f.strand == strand),
               key=lambda f: f.end - f.start)
    parts, (i0, i1) = hand_spliced(fa, gene)
    feats = {contig: [
        Feature(contig, gene.start, gene.end, strand, "CDS", parts=parts, transcript_id="t1"),
        Feature(contig, i0, i1, strand, "intron", parts=[(i0, i1)], transcript_id="t1")]}
    gm = GeneModel.from_features(feats, fa)
    near = set(range(i0 - 3, i0)) | set(range(i1, i1 + 3))
    seen = check_all_snvs(gm, fa, contig, parts, strand, near_boundary=near)
    assert "splice_region" in seen and "missense" in seen
    def base(g):
        return fa.fetch(contig, g, g + 1).decode()

    def alt(g):
        return "A" if base(g) != "A" else "C"

    for g in (i0, i0 + 1, i1 - 2, i1 - 1):
        assert gm.consequence(contig, g, base(g), alt(g)) == "splice"
    for g in (i0 + 2, i0 + 7, i1 - 8, i1 - 3):
        assert gm.consequence(contig, g, base(g), alt(g)) == "splice_region"
    for g in (i0 + 8, (i0 + i1) // 2, i1 - 9):
        assert gm.consequence(contig, g, base(g), alt(g)) == "noncoding"
    # a deletion from the last exonic base into the intron, anchored one base before
    anchor = i0 - 2
    ref = fa.fetch(contig, anchor, i0 + 2).decode()
    assert gm.consequence(contig, anchor, ref, ref[0]) == "splice"
    # an insertion between the two intronic bases of a splice site
    assert gm.consequence(contig, i1 - 2, base(i1 - 2), base(i1 - 2) + "T") == "splice"
    assert gm.klass(contig, (i0 + i1) // 2) == ("intron+" if strand > 0 else "intron-")


def test_indels_in_a_coding_sequence(pcp1):
    fa, features = pcp1
    contig = fa.contigs[0]
    gene = max((f for f in features[contig] if f.kind == "CDS" and f.strand > 0),
               key=lambda f: f.end - f.start)
    gm = GeneModel.from_features(features, fa)
    s = gene.parts[0][0]
    cds = spliced(fa, contig, gene.parts, 1)
    for offset in range(30, 60):
        g = s + offset  # VCF anchor at g, the change starts at g + 1
        anchor = cds[offset]
        for ref_len, alt_tail in ((2, ""), (4, ""), (1, "TAA"), (1, "GCA"), (1, "G"), (7, "")):
            ref = cds[offset:offset + ref_len]
            alt = anchor + alt_tail
            want = oracle(cds, cds[:offset] + alt + cds[offset + ref_len:])
            assert gm.consequence(contig, g, ref, alt) == want, (offset, ref, alt)
    # an insertion right before the start codon is outside the CDS
    assert gm.consequence(contig, s - 1, cds[0], cds[0] + "A") == "noncoding"


@pytest.mark.parametrize("strand", [1, -1])
def test_deletions_across_a_cds_end_reach_its_start_or_stop_codon(pcp1, strand):
    """A deletion running from outside a gene into its start or stop codon is never in frame:
    frameshift when the coding bases it removes are not a multiple of 3, else start_lost /
    stop_lost; one over the whole gene loses its stop."""
    fa, features = pcp1
    contig = fa.contigs[0]
    cds = [f for f in features[contig] if f.kind == "CDS"]
    gene = max((f for f in cds if f.strand == strand and not any(  # no neighbour within 20 bp
        o is not f and o.start < f.end + 20 and f.start - 20 < o.end for o in cds)),
        key=lambda f: f.end - f.start)
    gm = GeneModel.from_features(features, fa)
    (s, e), = gene.parts
    seq = fa.fetch(contig).decode().upper()
    start_end = s if strand > 0 else e  # the start codon's outer end
    near_others = other_genes(features, contig, gene)  # their consequences may be more severe
    checked = set()
    for end in (s, e):
        for lo in range(end - 8, end + 6):
            for size in range(2, 10):
                ref, alt = seq[lo - 1:lo + size], seq[lo - 1]
                p, r, _ = trim_alleles(lo - 1, ref, alt)  # the deletion as normalised
                inside = max(0, min(p + len(r), e) - max(p, s))
                if not 0 < inside < len(r) or near_others & set(range(p, p + len(r))):
                    continue  # wholly outside or inside the gene (other tests), or by another
                want = ("frameshift" if inside % 3 else
                        "start_lost" if end == start_end else "stop_lost")
                assert gm.consequence(contig, lo - 1, ref, alt) == want, (lo, size, strand)
                checked.add((end, want))
    assert len(checked) == 4  # frameshift and codon lost at both ends
    assert gm.consequence(contig, s - 6, seq[s - 6:e + 5], seq[s - 6]) == "stop_lost"


def test_gff3_cds_row_names_its_own_genetic_code(pcp1, tmp_path):
    """A GFF3 CDS row's transl_table (genoctx annotate -g 4 writes it there, not on the gene
    row) is the code of that CDS: TGG → TGA is then silent."""
    fa, features = pcp1
    contig = fa.contigs[0]
    genes = [f for f in features[contig]
             if f.kind == "CDS" and not set(range(f.start, f.end)) & other_genes(features, contig, f)]
    gene, sites = max(((g, _trp_third_bases(fa, g)) for g in genes), key=lambda t: len(t[1]))
    (s, e), = gene.parts
    strand = "+" if gene.strand > 0 else "-"
    gff = tmp_path / "g.gff3"
    gff.write_text("##gff-version 3\n"
                   f"{contig}\tt\tgene\t{s + 1}\t{e}\t.\t{strand}\t.\tID=g1\n"
                   f"{contig}\tt\tCDS\t{s + 1}\t{e}\t.\t{strand}\t0\tID=c1;Parent=g1;"
                   "transl_table=4\n")
    gm = GeneModel.from_features(read_features(gff), fa)
    g = sites[0]
    ref = fa.fetch(contig, g, g + 1).decode().upper()
    assert gm.consequence(contig, g, ref, "A" if gene.strand > 0 else "T") == "synonymous"


def test_trim_alleles_drops_anchor_bases():
    assert trim_alleles(10, "ACG", "A") == (11, "CG", "")
    assert trim_alleles(10, "A", "ATT") == (11, "", "TT")
    assert trim_alleles(10, "CAT", "CGT") == (11, "A", "G")


def _trp_third_bases(fa, gene: Feature) -> list[int]:
    """Genomic positions of the third base of each in-frame TGG (Trp) codon of ``gene``."""
    cds = spliced(fa, gene.contig, gene.parts, gene.strand)
    where = genomic_positions(sorted(gene.parts) if gene.strand > 0 else
                              sorted(gene.parts, reverse=True), gene.strand)
    return [where[i + 2] for i in range(3, len(cds) - 3, 3) if cds[i:i + 3] == "TGG"]


def test_translation_table_decides_whether_tga_is_a_stop(pcp1):
    """TGG → TGA ends the protein in code 11 and is silent in code 4 (Mycoplasma), whether the
    code is the model's default or the CDS's own transl_table; TGG → TAG is a stop in both."""
    import dataclasses

    from genoctx.errors import InputError

    fa, features = pcp1
    contig = fa.contigs[0]
    genes = [f for f in features[contig]
             if f.kind == "CDS" and not set(range(f.start, f.end)) & other_genes(features, contig, f)]
    gene, sites = max(((g, _trp_third_bases(fa, g)) for g in genes), key=lambda t: len(t[1]))
    assert sites, "pPCP1 has Trp codons"
    # on the minus strand the coding G of TGG reads C on the forward strand
    to_a = "A" if gene.strand > 0 else "T"
    second = [g - 1 if gene.strand > 0 else g + 1 for g in sites]
    assert gene.attributes["transl_table"] == ["11"]  # as the GenBank record says

    def with_table(value):
        attrs = {k: v for k, v in gene.attributes.items() if k != "transl_table"}
        if value is not None:
            attrs["transl_table"] = value
        return {contig: [dataclasses.replace(f, attributes=attrs) if f is gene else f
                         for f in features[contig]]}

    models = {"own 11 over 4": (GeneModel.from_features(features, fa, table=4), "nonsense"),
              "default 11": (GeneModel.from_features(with_table(None), fa), "nonsense"),
              "default 4": (GeneModel.from_features(with_table(None), fa, table=4), "synonymous"),
              "own 4 over 11": (GeneModel.from_features(with_table(["4"]), fa), "synonymous"),
              "GFF3 own 4": (GeneModel.from_features(with_table("4"), fa), "synonymous")}
    for g, g2 in zip(sites, second):
        ref = fa.fetch(contig, g, g + 1).decode().upper()
        ref2 = fa.fetch(contig, g2, g2 + 1).decode().upper()
        for label, (m, want) in models.items():
            assert m.consequence(contig, g, ref, to_a) == want, label
        assert ref2 == ("G" if gene.strand > 0 else "C")
        for m, _ in models.values():  # TGG → TAG
            assert m.consequence(contig, g2, ref2, to_a) == "nonsense"
    with pytest.raises(InputError, match="not an NCBI genetic code"):
        GeneModel.from_features(features, fa, table=7)
    bad = {contig: [dataclasses.replace(gene, attributes={"transl_table": "x"})]}
    with pytest.raises(InputError, match="not a number"):
        GeneModel.from_features(bad, fa)


def test_gene_calls_give_the_same_consequences_as_the_genbank_genes(pcp1):
    from genoctx.heads.decoder import GeneCall

    fa, features = pcp1
    contig = fa.contigs[0]
    genes = [f for f in features[contig] if f.kind == "CDS"]
    calls = [GeneCall(contig, f.start, f.end, f.strand, 1.0, "ATG") for f in genes]
    from_calls = GeneModel.from_gene_calls(calls, fa)
    from_gb = GeneModel.from_features(features, fa)
    for g in range(0, fa.lengths[contig], 37):
        base = fa.fetch(contig, g, g + 1).decode()
        alt = "T" if base != "T" else "G"
        assert from_calls.consequence(contig, g, base, alt) == \
            from_gb.consequence(contig, g, base, alt)
        assert from_calls.klass(contig, g) == from_gb.klass(contig, g)


def test_classes_match_the_training_labels(data_root):
    """klass() equals labels_from_tracks(label_tracks(...)) on real A. thaliana gene models."""
    from genoctx.heads.annotation import labels_from_tracks
    from genoctx.heads.classes import CLASSES, IGNORE_INDEX
    from genoctx.io.annotation import label_tracks

    chunk = data_root / "genomes" / "eukaryote_chunks"
    features = read_features(chunk / "A.thaliana.gff.gz")
    with FastaFile(chunk / "A.thaliana.fa.gz") as fa:
        gm = GeneModel.from_features(features, fa)
        tracks = label_tracks({"Chr1": features["Chr1"]}, {"Chr1": fa.lengths["Chr1"]})
    labels = labels_from_tracks(tracks["Chr1"])
    names = set()
    for g in range(0, 60_000, 5):
        want = "." if labels[g] == IGNORE_INDEX else CLASSES[labels[g]]
        got = gm.klass("Chr1", g)
        assert got == want, g
        names.add(got)
    assert {"CDS+0", "CDS-2", "intron+", "intron-", "UTR+", "intergenic"} <= names


def test_real_spliced_genes(data_root):
    """All SNVs of a + and a − strand A. thaliana gene (real introns, GFF phases)."""
    chunk = data_root / "genomes" / "eukaryote_chunks"
    features = read_features(chunk / "A.thaliana.gff.gz")
    with FastaFile(chunk / "A.thaliana.fa.gz") as fa:
        gm = GeneModel.from_features(features, fa)
        for tid in ("AT1G01010.1", "AT1G01020.1"):
            cds = next(f for f in features["Chr1"] if f.kind == "CDS" and f.transcript_id == tid)
            introns = next(f for f in features["Chr1"]
                           if f.kind == "intron" and f.transcript_id == tid).parts
            near = {g for s, e in introns for g in (*range(s - 3, s), *range(e, e + 3))}
            seen = check_all_snvs(gm, fa, "Chr1", cds.parts, cds.strand, near_boundary=near,
                                  skip=other_genes(features, "Chr1", cds))
            assert {"missense", "synonymous", "nonsense"} <= seen
            for s, e in introns:
                base = fa.fetch("Chr1", s, s + 1).decode()
                assert gm.consequence("Chr1", s, base, "A" if base != "A" else "C") == "splice"


def _rcor_gff(data_root, tmp_path, unique_ids: bool):
    """rcor-1 (Y74C9A.4a.1, minus strand) from the real C. elegans GFF3: its CDS rows share
    ``ID=CDS:Y74C9A.4a`` as shipped, or each gets its own ID (as some GFF3 writers do)."""
    import gzip

    rows, n = [], 0
    with gzip.open(data_root / "genomes" / "eukaryote_chunks" / "C.elegans.gff.gz", "rt") as fh:
        for line in fh:
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 9 or cols[1] != "WormBase" or not any(
                    p == "Transcript:Y74C9A.4a.1" for kv in cols[8].split(";")
                    if kv.startswith(("ID=", "Parent=")) for p in kv.split("=", 1)[1].split(",")):
                continue
            if unique_ids and cols[2] == "CDS":
                n += 1
                cols[8] = ";".join(f"ID=cds{n}" if kv.startswith("ID=") else kv
                                   for kv in cols[8].split(";"))
            rows.append("\t".join(cols))
    path = tmp_path / f"rcor_{'uniq' if unique_ids else 'shared'}.gff3"
    path.write_text("##gff-version 3\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("unique_ids", [False, True])
def test_cds_rows_with_their_own_ids_under_one_mrna_are_one_cds(data_root, tmp_path, unique_ids):
    """Each CDS row of an mRNA with an ID of its own was read as a CDS of its own (one exon
    each): a stop gained in exon 4 read as missense, a splice-region base as missense and a
    missense in the first exon as start_lost."""
    features = read_features(_rcor_gff(data_root, tmp_path, unique_ids))
    cds = [f for f in features["I"] if f.kind == "CDS"]
    assert len(cds) == 1 and len(cds[0].parts) == 12 and not cds[0].joined
    with FastaFile(data_root / "genomes" / "eukaryote_chunks" / "C.elegans.fa.gz") as fa:
        gm = GeneModel.from_features(features, fa)
        assert [gm.consequence("I", p - 1, r, a) for p, r, a in
                ((20272, "C", "A"), (20963, "G", "A"), (24844, "A", "C"))] == \
            ["nonsense", "splice_region", "missense"]


def _partial_pcp1(pcp1, tmp_path, fmt: str, strand: int):
    """pPCP1's first CDS (87..1109, +) cut to a 5'-partial CDS starting at its TTG codon at
    198 (an internal Leu codon), as GFF3 (NCBI ranges) or GenBank (``<198..1109``); on the
    minus strand its mirror (a reverse-complemented copy of the sequence)."""
    fa, _ = pcp1
    contig = fa.contigs[0]
    seq = fa.fetch(contig).decode()
    n = len(seq)
    assert seq[197:200] == "TTG"
    lo, hi = 198, 1109
    if strand < 0:
        seq, lo, hi = revcomp(seq), n - 1109 + 1, n - 198 + 1
    ref = tmp_path / f"p{strand}.fa"
    ref.write_text(f">{contig}\n{seq}\n")
    if fmt == "gff3":
        ends = "start_range=.,198" if strand > 0 else f"end_range={hi},."
        path = tmp_path / f"p{strand}.gff3"
        path.write_text(
            f"##gff-version 3\n##sequence-region {contig} 1 {n}\n"
            f"{contig}\tRefSeq\tgene\t{lo}\t{hi}\t.\t{'+' if strand > 0 else '-'}\t.\t"
            f"ID=gene-p1;partial=true;{ends}\n"
            f"{contig}\tRefSeq\tCDS\t{lo}\t{hi}\t.\t{'+' if strand > 0 else '-'}\t0\t"
            f"ID=cds-p1;Parent=gene-p1;partial=true;{ends}\n")
    else:
        loc = f"<{lo}..{hi}" if strand > 0 else f"complement({lo}..>{hi})"
        body = "".join(f"{i + 1:>9} {seq[i:i + 60].lower()}\n" for i in range(0, n, 60))
        path = tmp_path / f"p{strand}.gb"
        path.write_text(
            f"LOCUS       {contig.split('.')[0]:<16}{n:>12} bp    DNA     circular BCT "
            "21-JUL-2008\n"
            f"ACCESSION   {contig.split('.')[0]}\nVERSION     {contig}\n"
            "FEATURES             Location/Qualifiers\n"
            f"     source          1..{n}\n"
            f"     CDS             {loc}\n"
            '                     /locus_tag="p1"\n                     /codon_start=1\n'
            "ORIGIN\n" + body + "//\n")
    return ref, path, (lo - 1 if strand > 0 else hi - 1)


@pytest.mark.parametrize("fmt", ["gff3", "genbank"])
@pytest.mark.parametrize("strand", [1, -1])
def test_a_5_prime_partial_cds_has_no_start_codon_to_lose(pcp1, tmp_path, fmt, strand):
    """A CDS the annotation marks 5'-partial (GFF3 start_range/end_range, GenBank '<'/'>')
    starts with a codon that is not a start: TTG → CTG there is synonymous (Leu), not
    start_lost; the flags reach the CDS feature as partial5/partial3 along its strand."""
    ref, path, first = _partial_pcp1(pcp1, tmp_path, fmt, strand)
    contig = pcp1[0].contigs[0]
    features = read_features(path)
    cds = next(f for f in features[contig] if f.kind == "CDS")
    assert (cds.attributes["partial5"], cds.attributes["partial3"]) == (True, False)
    with FastaFile(ref) as fa:
        gm = GeneModel.from_features(features, fa)
        base = fa.fetch(contig, first, first + 1).decode()
        alt = revcomp("C") if strand < 0 else "C"
        assert base == ("T" if strand > 0 else "A")
        assert gm.consequence(contig, first, base, alt) == "synonymous"


def test_a_3_prime_partial_cds_has_no_stop_codon_to_lose(pcp1):
    """A deletion across the 3' end of a 3'-partial CDS (no stop codon annotated) is an
    in-frame indel, not stop_lost; the same deletion at a complete CDS's stop codon is."""
    import dataclasses

    fa, features = pcp1
    contig = fa.contigs[0]
    cds = next(f for f in features[contig] if f.kind == "CDS" and f.strand > 0)
    s, e = cds.parts[0]
    k = next(k for k in range(30, 90, 3)  # a deletion that cannot slide along a repeat
             if fa.fetch(contig, e - k - 3, e - k - 2) != fa.fetch(contig, e - k + 1, e - k + 2))
    cut = dataclasses.replace(cds, end=e - k, parts=[(s, e - k)],
                              attributes={**cds.attributes, "partial5": False, "partial3": True})
    for feature, want in ((cds, "stop_lost"), (cut, "inframe_indel")):
        gm = GeneModel.from_features({contig: [feature]}, fa)
        end = feature.parts[0][1]
        ref = fa.fetch(contig, end - 4, end + 2).decode()  # deletes 3 coding bases and one after
        assert gm.consequence(contig, end - 4, ref, ref[0] + ref[-1]) == want
