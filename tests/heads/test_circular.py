"""Circular replicons: genes across the origin, from the decoder through every writer.

The reference is rotation: a circle has no preferred origin, so pPCP1 (a real plasmid) cut at
another place and decoded as a circle must give the genes of pPCP1 decoded from its own origin,
moved by the cut, including the gene the new origin falls in.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from Bio import SeqIO
from Bio.Seq import Seq

from genoctx.errors import InputError
from genoctx.heads.classes import CDS_MINUS, CDS_PLUS, NUM_CLASSES
from genoctx.heads.decoder import GeneCall, call_genes_multi, gap_middle
from genoctx.heads.rna_genes import drop_cds_in_rna
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.fasta import FastaFile
from genoctx.io.writers import (
    forward_parts,
    read_gff3_genes,
    write_bed,
    write_genbank,
    write_gene_fasta,
    write_gff3,
)


@pytest.fixture(scope="module")
def pcp1(example_fasta):
    fa = FastaFile(example_fasta)
    (name, n), = fa.lengths.items()
    seq = fa.fetch(name, 0, n)
    calls = call_genes_multi([(name, seq)], circular=True)  # the circle from its own origin
    # the origin moved into the middle of the longest gene
    g = max(calls, key=lambda g: g.end - g.start)
    cut = (g.start + g.end) // 2
    return name, seq, calls, cut


# A circle's statistics are self-trained on its sequence read as a line from its origin, so
# they differ slightly with the origin; a call near the decision threshold (score under this,
# pPCP1's weak GTG gene at 9265..9639 scores 0.43) may come and go with it. Every other call
# must not depend on the origin.
CLEAR = 0.5


def _same_but_weak(a: list[tuple], b: list[tuple], weak: set[tuple]) -> bool:
    """``a`` and ``b`` (``_moved`` lists) differ only by calls in ``weak``."""
    return set(a) ^ set(b) <= weak


def _weak(calls, cut, n) -> set[tuple]:
    return set(_moved([g for g in calls if g.score < CLEAR], cut, n))


def _moved(calls, cut, n):
    """(start, end, strand) of calls on the sequence cut at ``cut``, in the original's
    coordinates (a gene across the origin of either: end past n)."""
    return sorted(((g.start + cut) % n, (g.start + cut) % n + g.end - g.start, g.strand)
                  for g in calls)


def test_decoding_as_a_circle_does_not_depend_on_the_origin(pcp1):
    name, seq, calls, cut = pcp1
    n = len(seq)
    turned = seq[cut:] + seq[:cut]
    ring = call_genes_multi([(name, turned)], circular=True)
    weak = _weak(ring, cut, n) | _weak(calls, 0, n)
    assert _same_but_weak(_moved(ring, cut, n), _moved(calls, 0, n), weak)
    assert len(_moved(ring, cut, n)) >= 8 and len(weak) <= 1
    across = [g for g in ring if g.end > n]
    assert len(across) == 1 and across[0].start < n
    assert not any(g.partial[0] or g.partial[1] for g in ring)
    # as a line, the gene the origin cuts is lost: what the circle is for
    line = call_genes_multi([(name, turned)], closed=True)
    assert _moved(line, cut, n) != _moved(ring, cut, n)
    assert all(g.end <= n for g in line)
    # self-training across records (single) takes the same path as each record alone (meta)
    single = call_genes_multi([(name, turned)], circular=[name], procedure="single")
    assert any(g.end > n for g in single)
    # the head's probabilities turn with the sequence: an in-frame oracle of the circle's genes
    # (codon positions counted across the origin) keeps every gene, the one across it too
    labels = np.zeros(n, dtype=np.int64)
    for g in ring:
        pos = np.arange(g.start, g.end)
        q = (pos - g.start) % 3 if g.strand > 0 else (g.end - 1 - pos) % 3
        labels[pos % n] = np.asarray(CDS_PLUS if g.strand > 0 else CDS_MINUS)[q]
    probs = np.full((n, NUM_CLASSES), 0.1 / NUM_CLASSES, dtype=np.float32)
    probs[np.arange(n), labels] += 0.9
    with_head = call_genes_multi([(name, turned)], {name: probs}, circular=True)
    assert _moved(with_head, cut, n) == _moved(ring, cut, n)


def test_a_circle_without_a_gene_across_its_origin_decodes_as_before(pcp1):
    name, seq, calls, _ = pcp1
    n = len(seq)
    # the origin moved into the widest stretch no gene of the circle covers
    cut = gap_middle([(g.start, g.end) for g in calls] +
                     [(g.start - n, g.end - n) for g in calls], 0, n)
    turned = seq[cut:] + seq[:cut]
    ring = call_genes_multi([(name, turned)], circular=True)
    line = call_genes_multi([(name, turned)], closed=True)
    assert [(g.start, g.end, g.strand, g.score) for g in ring] == \
        [(g.start, g.end, g.strand, g.score) for g in line]
    weak = _weak(ring, cut, n) | _weak(calls, 0, n)
    assert _same_but_weak(_moved(ring, cut, n), _moved(calls, 0, n), weak) and len(weak) <= 1


def test_gap_middle_is_the_middle_of_the_widest_uncovered_stretch():
    spans = [(0, 100), (200, 400), (700, 800), (900, 990)]
    assert gap_middle(spans, 0, 1000) == 550
    assert gap_middle(spans, 0, 300) == 150       # only what lies in the range counts
    assert gap_middle(spans[::-1], 350, 720) == 550
    assert gap_middle([(0, 50)], 0, 100) == 75     # a stretch up to the range's end
    assert gap_middle([(-30, 20), (10, 60)], 0, 100) == 80
    assert gap_middle([], 10, 20) == 15
    assert gap_middle([(0, 1000)], 10, 20) is None


def _gene(contig, start, end, strand):
    return GeneCall(contig, start, end, strand, 0.9, "ATG")


def test_writers_put_a_gene_across_the_origin_in_every_format(tmp_path, pcp1):
    name, seq, _, cut = pcp1
    n = len(seq)
    ring = call_genes_multi([(name, seq[cut:] + seq[:cut])], circular=True)
    turned = seq[cut:] + seq[:cut]
    lengths = {name: n}

    def fetch(c, a, b):
        return turned[a:b]

    (across,) = [g for g in ring if g.end > n]
    whole = (turned + turned)[across.start:across.end]
    nt = whole if across.strand > 0 else str(Seq(whole.decode()).reverse_complement()).encode()
    protein = str(Seq(nt.decode()).translate(table=11))
    assert protein.endswith("*") and "*" not in protein[:-1]

    gff = tmp_path / "r.gff3"
    write_gff3(gff, ring, [], lengths, circular={name})
    text = gff.read_text()
    assert f"\tregion\t1\t{n}\t" in text and "Is_circular=true" in text
    back = read_genes(gff, include_joined=True)
    (g,) = [g for g in back if len(g.parts) == 2]
    order = [(across.start, n), (0, across.end - n)]
    assert g.strand == across.strand and g.parts == (order if g.strand > 0 else order[::-1])
    assert len(back) == len(ring)
    with pytest.raises(InputError, match="outside contig"):  # only on a circular contig
        write_gff3(tmp_path / "l.gff3", ring, [], lengths)

    bed = tmp_path / "r.bed"
    write_bed(bed, ring, [], lengths)
    rows = [line.split("\t") for line in bed.read_text().splitlines()]
    assert len(rows) == len(ring) + 1 and all(int(r[2]) <= n for r in rows)
    pieces = sorted((int(r[1]), int(r[2])) for r in rows if r[3] == rows[0][3])
    assert pieces == [(0, across.end - n), (across.start, n)]

    faa = tmp_path / "r.faa"
    write_gene_fasta(faa, ring, lengths, fetch, protein=True)
    got = {r.description.split(" # ")[1:3] == [str(across.start + 1), str(across.end)]: str(r.seq)
           for r in SeqIO.parse(faa, "fasta")}
    assert got[True] == "M" + protein[1:]

    gbk = tmp_path / "r.gbk"
    write_genbank(gbk, ring, [], [(name, 0, n, n)], fetch, circular={name})
    rec = SeqIO.read(gbk, "genbank")
    assert rec.annotations["topology"] == "circular"
    (cds,) = [f for f in rec.features if f.type == "CDS" and len(f.location.parts) == 2]
    assert str(cds.extract(rec.seq).translate(table=11)) == protein
    assert cds.qualifiers["translation"][0] == "M" + protein[1:-1]


def test_forward_parts_and_rna_overlap_across_the_origin():
    g = _gene("c", 950, 1150, -1)
    assert forward_parts(g, {"c": 1000}) == [(950, 1000), (0, 150)]
    assert forward_parts(g) == [(950, 1150)]
    from genoctx.heads.decoder import RNACall

    rna = RNACall("c", 20, 110, 1, "tRNA", 1.0)
    assert drop_cds_in_rna([g], [rna], lengths={"c": 1000}) == []
    assert drop_cds_in_rna([g], [rna]) == [g]  # without lengths the piece at 0 is not seen


def test_annotate_circular_cli(tmp_path, cli, pcp1, example_fasta):
    name, seq, _, cut = pcp1
    turned = tmp_path / "turned.fa"
    turned.write_bytes(b">%s\n%s\n" % (name.encode(), seq[cut:] + seq[:cut]))
    code, _, err = cli(["annotate", turned, "--model", "none", "--circular", "--quiet",
                        "--formats", "gff3,faa", "--out", tmp_path / "ring"])
    assert code == 0, err
    code, _, err = cli(["annotate", example_fasta, "--model", "none", "--circular", "--quiet",
                        "--formats", "faa", "--out", tmp_path / "plain"])
    assert code == 0, err
    # the proteins of a circle do not depend on where its sequence starts (but for a weak call)
    proteins, weak = {}, set()
    for p in ("ring", "plain"):
        records = list(SeqIO.parse(tmp_path / f"{p}.faa", "fasta"))
        proteins[p] = {str(r.seq) for r in records}
        weak |= {str(r.seq) for r in records
                 if float(r.description.rsplit("score=", 1)[1]) < CLEAR}
    assert proteins["ring"] ^ proteins["plain"] <= weak and len(weak) <= 1
    assert len(proteins["ring"]) >= 8
    assert "Is_circular=true" in (tmp_path / "ring.gff3").read_text()
    code, _, err = cli(["annotate", turned, "--model", "none", "--circular", "--quiet",
                        "--mode", "eukaryote", "--out", tmp_path / "euk"])
    assert code != 0 and "prokaryote" in err


def test_annotated_gene_across_a_chromosome_origin_is_found(data_root):
    """C. trachomatis E/150 (NC_017439, train role) annotates its chromosome's first gene across the
    origin, join(1042397..1042996,1..1176): decoded as a circle, genoctx calls it exactly; as
    a line it calls a piece of it. Elsewhere the calls are those of the line."""
    path = data_root / "genomes/bacteria/Chlamydia_trachomatis_GCF_000092665.1_ASM9266v1.gbff.gz"
    records = [(c, s) for c, s in read_sequences_genbank(path) if len(s)]
    lengths = {c: len(s) for c, s in records}
    (truth,) = [g for g in read_genes(path, include_joined=True)
                if g.joined and g.parts[-1][0] == 0]
    line = call_genes_multi(records, closed=True)
    ring = call_genes_multi(records, circular=True)
    want = (truth.contig, truth.parts[0][0], truth.parts[0][0] + sum(b - a for a, b in truth.parts),
            truth.strand)
    assert want in {(g.contig, g.start, g.end, g.strand) for g in ring}
    assert want not in {(g.contig, g.start, g.end, g.strand) for g in line}
    n = lengths[truth.contig]
    far = lambda g: 10_000 < g.start and g.end < n - 10_000
    assert [g for g in ring if far(g)] == [g for g in line if far(g)]


def test_trna_across_the_origin_is_found_and_written(tmp_path, data_root):
    """E. coli K-12's tRNA-Ile(gat) at 225,381–225,457 (ARAGORN on the genome) in a 40-kb
    circle cut through it: ARAGORN's circular search finds it across the origin, the CDS filter
    and the writers see both of its pieces."""
    pytest.importorskip("pyaragorn")
    from genoctx.heads.rna_genes import find_trna

    with gzip.open(data_root / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz", "rt") as fh:
        seq = bytes(next(SeqIO.parse(fh, "genbank")).seq[:300_000])
    (t,) = [r for r in find_trna([("e", seq)]) if r.start == 225_380]
    mid = (t.start + t.end) // 2
    ring = seq[mid:mid + 20_000] + seq[mid - 20_000:mid]  # the origin falls inside the tRNA
    n = len(ring)
    circle = find_trna([("c", ring)], circular={"c"})
    (hit,) = [r for r in circle if r.end > n]
    assert (hit.start, hit.end, hit.strand) == (t.start - mid + n, t.end - mid + n, 1)
    assert hit.attrs["product"] == t.attrs["product"] == "tRNA-Ile(gat)"
    # as a line the same finder gives the other tRNAs only
    line = find_trna([("c", ring)])
    assert [(r.start, r.end) for r in line] == [(r.start, r.end) for r in circle if r.end <= n]
    cds = _gene("c", 0, 399, -1)  # holds the tRNA's piece after the origin (39 bp)
    assert drop_cds_in_rna([cds], [hit], lengths={"c": n}) == []
    gbk = tmp_path / "t.gbk"
    write_genbank(gbk, [], [hit], [("c", 0, n, n)], lambda c, a, b: ring[a:b], circular={"c"})
    (feat,) = [f for f in SeqIO.read(gbk, "genbank").features if f.type == "tRNA"]
    assert str(feat.extract(Seq(ring.decode()))) == seq[t.start:t.end].decode().upper()


@pytest.mark.parametrize("product", ["16S", "23S", "5S"])
def test_rrna_across_the_origin_is_found_once(data_root, product):
    """E. coli K-12's rrnH operon (barrnap on the genome: 16S, 23S, 5S) in a 40-kb circle cut
    through one of its genes: the circular search finds that gene across the origin, with the
    coordinates barrnap gives it on the genome, and none of the pieces the line's search finds
    at the two ends; the other genes are the line's."""
    pytest.importorskip("pybarrnap")
    from genoctx.heads.rna_genes import find_rrna

    with gzip.open(data_root / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz", "rt") as fh:
        seq = bytes(next(SeqIO.parse(fh, "genbank")).seq[:300_000])
    (r,) = [g for g in find_rrna([("e", seq)]) if g.attrs["product"].startswith(product + " ")]
    mid = (r.start + r.end) // 2
    ring = seq[mid:mid + 20_000] + seq[mid - 20_000:mid]
    n = len(ring)
    circle = find_rrna([("c", ring)], circular={"c"})
    line = find_rrna([("c", ring)])
    (hit,) = [g for g in circle if g.end > n]
    assert (hit.start, hit.end, hit.strand) == (r.start - mid + n, r.end - mid + n, r.strand)
    assert hit.attrs["product"] == r.attrs["product"] and "partial" not in hit.attrs
    ends = [g for g in line if g.start < 20 or g.end > n - 20]  # the line's pieces of it
    assert ends and all(g.attrs.get("partial") == "true" for g in ends)
    assert [g for g in circle if g.end <= n] == [g for g in line if g not in ends]
    assert find_rrna([("c", ring)], circular={"other"}) == line


def _around_origin(across, n: int) -> list[int]:
    """SNV positions on both pieces of the gene ``across`` the origin of a circle of ``n``
    bases, near its ends and elsewhere (the second one also gets a deletion)."""
    return [across.start + 1, across.start + 200, n - 3, n - 1, 0, 2, 150, across.end - n - 2,
            1000, 3000, 8000]


def _write_vcf(path, name: str, positions: list[int], s: bytes) -> None:
    """SNVs at ``positions`` of the sequence ``s``, then a 1-base deletion at the second."""
    alt = {"A": "C", "C": "G", "G": "T", "T": "A"}
    lines = [f"##fileformat=VCFv4.2\n##contig=<ID={name},length={len(s)}>\n",
             "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"]
    lines += [f"{name}\t{p + 1}\t.\t{chr(s[p])}\t{alt[chr(s[p])]}\t.\t.\t.\n" for p in positions]
    lines.append(f"{name}\t{positions[1] + 1}\t.\t{s[positions[1]:positions[1] + 2].decode()}"
                 f"\t{chr(s[positions[1]])}\t.\t.\t.\n")  # a 1-base deletion: frameshift
    path.write_text("".join(lines))


def _cut_in_codon(pcp1) -> int:
    """An origin one base into a codon of pPCP1's longest gene: that codon is split."""
    _, _, calls, _ = pcp1
    g = max(calls, key=lambda g: g.end - g.start)
    return g.start + 3 * ((g.end - g.start) // 6) + 1


def _conseqs(path) -> list:
    import pysam

    with pysam.VariantFile(str(path)) as vf:
        return [r.info["GCX_CONSEQ"] for r in vf]


def test_variant_consequences_read_codons_across_the_origin(tmp_path, cli, pcp1, example_fasta):
    """score-variants with the --circular annotation of pPCP1 cut inside a gene gives every
    variant the class and consequence that the same variant gets on pPCP1 itself, the gene's
    two pieces included."""
    import pysam

    name, seq, _, cut = pcp1
    n = len(seq)
    turned = tmp_path / "turned.fa"
    turned.write_bytes(b">%s\n%s\n" % (name.encode(), seq[cut:] + seq[:cut]))
    for fasta, out, flag in ((turned, "ring", "--circular"), (example_fasta, "line", "--closed")):
        code, _, err = cli(["annotate", fasta, "--model", "none", flag, "--quiet", "--formats",
                            "gff3", "--out", tmp_path / out])
        assert code == 0, err
    (across,) = [g for g in read_gff3_genes(tmp_path / "ring.gff3") if g.end > n]
    at = _around_origin(across, n)
    ring_seq = seq[cut:] + seq[:cut]
    _write_vcf(tmp_path / "ring.vcf", name, at, ring_seq)
    _write_vcf(tmp_path / "line.vcf", name, [(p + cut) % n for p in at], seq)
    got = {}
    for which, fasta in (("ring", turned), ("line", example_fasta)):
        code, _, err = cli(["score-variants", tmp_path / f"{which}.vcf", "--reference", fasta,
                            "--annotation", tmp_path / f"{which}.gff3", "--context", "128",
                            "--out", tmp_path / f"{which}.out.vcf"])
        assert code == 0, err
        with pysam.VariantFile(str(tmp_path / f"{which}.out.vcf")) as vf:
            got[which] = [(r.info["GCX_CLASS"], r.info["GCX_CONSEQ"]) for r in vf]
    assert got["ring"] == got["line"]
    classes = [c for c, _ in got["ring"]]
    assert sum(c.startswith("CDS-" if across.strand < 0 else "CDS+") for c in classes[:8]) == 8
    assert got["ring"][-1][1] == ("frameshift",)


def test_gene_model_reads_a_predicted_call_across_the_origin_as_the_annotation(tmp_path, pcp1):
    """A decoder call across the origin (end past the length) gives the gene model that the
    GFF3 written for it gives: same class and consequence at every tested base, both strands."""
    from genoctx.heads.consequence import GeneModel
    from genoctx.io.annotation import read_features

    name, seq, _, _ = pcp1
    n, cut = len(seq), _cut_in_codon(pcp1)
    turned = tmp_path / "turned.fa"
    turned.write_bytes(b">%s\n%s\n" % (name.encode(), seq[cut:] + seq[:cut]))
    ring = call_genes_multi([(name, seq[cut:] + seq[:cut])], circular=True)
    (across,) = [g for g in ring if g.end > n]
    with FastaFile(turned) as fa:
        for strand in (1, -1):  # the real call, and the same span read on the other strand
            g = GeneCall(name, across.start, across.end, strand, 0.9, "ATG")
            write_gff3(tmp_path / "one.gff3", [g], [], {name: n}, circular={name})
            want = GeneModel.from_features(read_features(tmp_path / "one.gff3"), fa)
            got = GeneModel.from_gene_calls([g], fa)
            alt = {"A": "C", "C": "G", "G": "T", "T": "A"}
            for p in (*_around_origin(across, n), across.start - 1, across.end - n):
                r = chr(seq[(p + cut) % n])
                assert got.klass(name, p) == want.klass(name, p)
                assert got.consequence(name, p, r, alt[r]) == want.consequence(name, p, r, alt[r])
            sign = "CDS+" if strand > 0 else "CDS-"
            assert {got.klass(name, p)[:4] for p in (n - 1, 0)} == {sign}


def test_score_variants_circular_predicts_the_gene_across_the_origin(tmp_path, cli, pcp1):
    """Without an annotation, ``score-variants --circular`` (or ``--circular-declared`` with a
    ``circular=true`` header) gives the consequences that the ``annotate --circular`` GFF3
    gives; read as a line, the gene across the origin is two partial genes and consequences
    differ (the codon split by the origin is in neither)."""
    name, seq, _, _ = pcp1
    n, cut = len(seq), _cut_in_codon(pcp1)
    ring_seq = seq[cut:] + seq[:cut]
    turned, tagged = tmp_path / "turned.fa", tmp_path / "tagged.fa"
    turned.write_bytes(b">%s\n%s\n" % (name.encode(), ring_seq))
    tagged.write_bytes(b">%s circular=true\n%s\n" % (name.encode(), ring_seq))
    code, _, err = cli(["annotate", turned, "--model", "none", "--circular", "--quiet",
                        "--formats", "gff3", "--out", tmp_path / "ring"])
    assert code == 0, err
    (across,) = [g for g in read_gff3_genes(tmp_path / "ring.gff3") if g.end > n]
    _write_vcf(tmp_path / "v.vcf", name, _around_origin(across, n), ring_seq)
    runs = {"annotation": (turned, ["--annotation", tmp_path / "ring.gff3"]),
            "circular": (turned, ["--circular"]), "declared": (tagged, ["--circular-declared"]),
            "line": (turned, [])}
    got = {}
    for which, (fasta, flags) in runs.items():
        code, _, err = cli(["score-variants", tmp_path / "v.vcf", "--reference", fasta,
                            "--context", "128", "--quiet", "--out", tmp_path / f"{which}.vcf",
                            *flags])
        assert code == 0, err
        got[which] = _conseqs(tmp_path / f"{which}.vcf")
    assert got["circular"] == got["annotation"] == got["declared"]
    assert got["circular"][-1] == ("frameshift",)
    said = f"circular sequences read whole: {name}"
    assert all((said in (tmp_path / f"{w}.vcf").read_text()) == (w in ("circular", "declared"))
               for w in runs)
    split = [i for i, p in enumerate(_around_origin(across, n)) if p in (n - 1, 0)]
    assert all(got["line"][i] == ("noncoding",) != got["circular"][i] for i in split)
    # both flags, or a flag beside an annotation: a clear error before any work
    for flags in (["--circular", "--circular-declared"],
                  ["--circular", "--annotation", tmp_path / "ring.gff3"],
                  ["--circular-declared", "--annotation", tmp_path / "ring.gff3"]):
        code, _, err = cli(["score-variants", tmp_path / "v.vcf", "--reference", tagged,
                            "--out", tmp_path / "x.vcf", *flags])
        assert code != 0 and "--circular" in err and not (tmp_path / "x.vcf").exists()
    # a circular header without a flag: a hint names the option
    code, _, err = cli(["score-variants", tmp_path / "v.vcf", "--reference", tagged,
                        "--context", "128", "--out", tmp_path / "hint.vcf"])
    assert code == 0 and "--circular-declared" in err


def test_model_tracks_wrap_across_the_origin(tmp_path, pcp1, example_fasta):
    """With the model, a circle's first and last bases read half a window of the other end:
    the tracks there are those of the same bases on pPCP1 itself (where they lie inside the
    sequence); read as a line, they have no context on one side and are far off."""
    from genoctx.heads.annotate import annotate_fasta

    name, seq, _, cut = pcp1
    n = len(seq)
    turned = tmp_path / "turned.fa"
    turned.write_bytes(b">%s\n%s\n" % (name.encode(), seq[cut:] + seq[:cut]))
    kw = {"quiet": True, "rna": "none"}
    plain = annotate_fasta(example_fasta, **kw).tracks[0]
    ring = annotate_fasta(turned, circular=True, **kw).tracks[0]
    line = annotate_fasta(turned, **kw).tracks[0]
    ends = np.r_[0:64, n - 64:n]
    for track, want in plain.items():
        want = np.roll(want, -cut)[ends]  # pPCP1's values at the turned sequence's ends
        ring_err = np.abs(ring[track][ends] - want).mean()
        line_err = np.abs(line[track][ends] - want).mean()
        # measured: CDS_plus 0.003 against 0.118, CDS_minus 0.003 against 0.198
        assert ring_err < 0.02 and (ring_err < line_err / 10 or line_err < 0.01), track
        assert ring[track].shape == (n,)


@pytest.mark.parametrize("size", [300, 3000])
def test_predict_probs_on_a_circle_reports_its_own_length(pcp1, size):
    """circular=True reads half a window of the other end on each side (the whole circle
    twice over when it is shorter than that) and still returns [L, classes], with progress
    adding up to L."""
    from genoctx.heads.annotation import load_annotation_model, predict_probs
    from genoctx.tokenize import nucleotide as nt

    backbone, head = load_annotation_model("embedded", device="cpu")
    _, seq, _, _ = pcp1
    ids = nt.encode(seq[:size])
    seen = []
    p = predict_probs(backbone, head, ids, context=1024, circular=True, progress=seen.append)
    assert p.shape == (size, NUM_CLASSES) and sum(seen) == size and all(n >= 0 for n in seen)
    pad = min(512, size)
    want = predict_probs(backbone, head, np.concatenate([ids[-pad:], ids, ids[:pad]]),
                         context=1024)[pad:pad + size]
    np.testing.assert_array_equal(p, want)
