"""GFF3 / BED / bedGraph writers: format checks, round trips, determinism, atomicity."""

import dataclasses
import random
from urllib.parse import unquote

import numpy as np
import pysam
import pytest

from genoctx.errors import InputError
from genoctx.heads.decoder import GeneCall, RNACall
from genoctx.io.writers import (
    read_gff3_genes,
    write_bed,
    write_bedgraph,
    write_bedgraph_many,
    write_bigwig,
    write_gff3,
)

LENGTHS = {"chr one": 5000, "plasmid": 1200}


def _genes():
    return [
        GeneCall("chr one", 0, 300, 1, 0.91234, "GTG", (True, False)),   # runs in from the left edge
        GeneCall("chr one", 250, 1000, -1, 0.5, "ATG"),
        GeneCall("chr one", 4700, 5000, -1, 0.12, "TTG", (True, False)),  # minus: 5' end on the right
        GeneCall("plasmid", 99, 1200, 1, 1.0, "ATG", (False, True)),
        GeneCall("chr one", 1200, 1500, 1, 0.75, "ATG"),
    ]


def _rnas():
    return [RNACall("chr one", 2000, 2076, 1, "tRNA", 0.8), RNACall("plasmid", 10, 90, -1, "ncRNA", 0.6)]


def _parse(path):
    """A tiny independent GFF3 reader: header lines and 9-column rows with attribute dicts."""
    header, rows = [], []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            header.append(line)
            continue
        col = line.split("\t")
        assert len(col) == 9, line
        attrs = dict(kv.split("=", 1) for kv in col[8].split(";"))
        rows.append((col, attrs))
    return header, rows


def test_gff3_structure(tmp_path):
    path = tmp_path / "out.gff3"
    write_gff3(path, _genes(), _rnas(), LENGTHS, attrs={"model": "abc"})
    header, rows = _parse(path)
    assert header[0] == "##gff-version 3"
    assert header[1:] == ["##sequence-region chr%20one 1 5000", "##sequence-region plasmid 1 1200"]
    ids = {a["ID"] for _, a in rows}
    for col, a in rows:
        assert int(col[3]) >= 1 and int(col[3]) <= int(col[4])
        if "Parent" in a:
            assert a["Parent"] in ids
        if col[2] == "CDS":
            assert col[7] == "0"
        if col[2] == "gene":
            assert a["model"] == "abc"
    first = rows[0][0]
    assert first[:8] == ["chr%20one", "genoctx", "gene", "1", "300", "0.9123", "+", "."]
    kinds = sorted(col[2] for col, _ in rows)
    assert kinds == sorted(["gene"] * 7 + ["CDS"] * 5 + ["tRNA", "ncRNA"])
    # sorted by contig (lengths order) then start
    keys = [(list(LENGTHS).index(col[0].replace("%20", " ")), int(col[3])) for col, _ in rows]
    assert keys == sorted(keys)


def test_gff3_round_trip(tmp_path):
    path = tmp_path / "out.gff3"
    genes = _genes()
    genes[-1] = dataclasses.replace(genes[-1], attrs={"model": "Escherichia_coli_K12"})
    write_gff3(path, genes, _rnas(), LENGTHS)
    back = read_gff3_genes(path)
    # the bank model a short sequence started from comes back as the decoder names it
    assert [g.attrs.get("model") for g in back if g.attrs.get("bank_model")] == [
        "Escherichia_coli_K12"]
    key = lambda g: (g.contig, g.start, g.end, g.strand)
    assert sorted(map(key, back)) == sorted(map(key, genes))
    by = {key(g): g for g in genes}
    for g in back:
        orig = by[key(g)]
        assert g.partial == orig.partial
        # a gene running in from a sequence edge has no start codon to write
        assert g.start_codon == ("" if orig.partial[0] else orig.start_codon)
        assert g.score == pytest.approx(orig.score, abs=1e-4)


def test_gff3_deterministic_and_atomic(tmp_path):
    a, b = tmp_path / "a.gff3", tmp_path / "b.gff3"
    genes = _genes()
    write_gff3(a, genes, _rnas(), LENGTHS)
    random.Random(0).shuffle(genes)
    write_gff3(b, genes, _rnas()[::-1], LENGTHS)
    assert a.read_bytes() == b.read_bytes()
    bad = tmp_path / "bad.gff3"
    with pytest.raises(InputError, match="no length"):
        write_gff3(bad, genes, [], {"plasmid": 1200})
    with pytest.raises(InputError, match="outside"):
        write_gff3(bad, [GeneCall("plasmid", 0, 1300, 1, 0.5, "ATG")], [], LENGTHS)
    assert not bad.exists() and not list(tmp_path.glob(".bad*"))


def test_read_gff3_prodigal_style(tmp_path):
    path = tmp_path / "prodigal.gff"
    path.write_text(
        "##gff-version  3\n"
        "# Sequence Data: seqnum=1;seqlen=1000\n"
        "seq1\tProdigal_v2.6.3\tCDS\t1\t300\t12.5\t-\t0\tID=1_1;partial=10;start_type=Edge\n"
        "seq1\tProdigal_v2.6.3\tCDS\t401\t700\t30.1\t+\t0\tID=1_2;partial=00;start_type=GTG\n"
        "##FASTA\n>seq1\nACGT\n")
    a, b = read_gff3_genes(path)
    assert (a.start, a.end, a.strand, a.partial) == (0, 300, -1, (False, True))
    assert (b.start, b.end, b.strand, b.partial, b.start_codon) == (400, 700, 1, (False, False), "GTG")
    assert b.score == pytest.approx(30.1)
    path.write_text("seq1\tx\tCDS\t0\t300\t.\t+\t0\tID=a\n")
    with pytest.raises(InputError, match="1-based"):
        read_gff3_genes(path)


def test_bed_tabix(tmp_path):
    path = tmp_path / "genes.bed"
    write_bed(path, _genes(), _rnas())
    lines = [line.split("\t") for line in path.read_text().splitlines()]
    assert all(len(c) == 6 for c in lines)
    assert [(c[0], int(c[1])) for c in lines] == sorted((c[0], int(c[1])) for c in lines)
    assert {int(c[4]) for c in lines} <= set(range(1001))
    first = next(c for c in lines if c[1] == "0" and c[0] == "chr one")
    assert first[2:] == ["300", "chr one_1", "912", "+"]
    gz = pysam.tabix_index(str(path), preset="bed", force=True)
    tbx = pysam.TabixFile(gz)
    hits = [r.split("\t") for r in tbx.fetch("plasmid", 0, 100)]
    assert {(h[1], h[2], h[5]) for h in hits} == {("10", "90", "-"), ("99", "1200", "+")}
    assert len(list(tbx.fetch("chr one", 4800, 4900))) == 1


def test_bed_scores_are_the_gff3_scores_times_1000(tmp_path):
    """The BED score is round(1000 · the GFF3's 4-decimal score), so a BED rebuilt from the
    GFF3 (the workflow's merge) equals annotate's own; 0.99949 is 0.9995 in the GFF3 and must
    not be 999 in the BED beside 1000 in the rebuilt one."""
    rng = random.Random(7)
    scores = [0.99949, 0.12345, 0.00049, 0.0005] + [rng.random() for _ in range(300)]
    genes = [GeneCall("chr one", 3 * i, 3 * i + 300, 1, p, "ATG") for i, p in enumerate(scores)]
    lengths = {"chr one": 2000}
    write_gff3(tmp_path / "a.gff3", genes, [], lengths)
    write_bed(tmp_path / "a.bed", genes, [], lengths)
    again = read_gff3_genes(tmp_path / "a.gff3")
    write_bed(tmp_path / "b.bed", again, [], lengths)
    assert (tmp_path / "a.bed").read_text() == (tmp_path / "b.bed").read_text()
    gff_score = {(g.start, g.end): g.score for g in again}
    for line in (tmp_path / "a.bed").read_text().splitlines():
        c = line.split("\t")
        assert int(c[4]) == round(1000 * gff_score[(int(c[1]), int(c[2]))])


def test_bedgraph_runs_and_append(tmp_path):
    path = tmp_path / "cds.bedgraph"
    track = np.array([0.1, 0.1004, 0.2, 0.2, np.nan, 0.2, 1.0, 1.0], dtype=np.float32)
    write_bedgraph(path, track, "c1", start=100, name="CDS plus")
    write_bedgraph(path, np.zeros(3), "c2", name="ignored", append=True)
    lines = path.read_text().splitlines()
    assert lines[0] == 'track type=bedGraph name="CDS plus"'
    rows = [line.split("\t") for line in lines[1:]]
    assert rows == [["c1", "100", "102", "0.1"], ["c1", "102", "104", "0.2"],
                    ["c1", "105", "106", "0.2"], ["c1", "106", "108", "1"], ["c2", "0", "3", "0"]]
    # expanding the runs gives the rounded track back
    rebuilt = np.full(len(track), np.nan)
    for c, s, e, v in rows[:4]:
        rebuilt[int(s) - 100:int(e) - 100] = float(v)
    np.testing.assert_allclose(rebuilt, np.round(track.astype(float), 3), equal_nan=True)
    with pytest.raises(InputError):
        write_bedgraph(tmp_path / "x.bg", np.zeros((2, 2)), "c", name="x")
    # one pass over many contigs writes the same bytes as appending contig by contig
    many = tmp_path / "many.bedgraph"
    write_bedgraph_many(many, [("c1", 100, track), ("c2", 0, np.zeros(3))], name="CDS plus")
    assert many.read_bytes() == path.read_bytes()


def test_bedgraph_of_a_noisy_megabase_track_matches_naive_formatting(tmp_path):
    rng = np.random.default_rng(0)
    track = rng.random(20_000).astype(np.float32)
    track[::7] = np.nan
    track[100:200] = 0.5
    path = tmp_path / "t.bedgraph"
    write_bedgraph_many(path, [("chr", 5, track)], name="t")
    want, prev = [], None
    for i, x in enumerate(np.round(track.astype(np.float64), 3)):  # one base at a time
        if np.isnan(x):
            prev = None
            continue
        if prev is not None and prev[2] == x:
            prev[1] = i + 6
            continue
        prev = [i + 5, i + 6, x]
        want.append(prev)
    got = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    assert [(int(s), int(e), float(v)) for _, s, e, v in got] == [(a, b, float(v)) for a, b, v in want]


def _bedgraph_lines_one_by_one(track, contig, start, digits):
    """The plain form: walk the bases, merge equal rounded values, format each line."""
    lines, run = [], None
    for i, x in enumerate(np.round(np.asarray(track, np.float64), digits).tolist()):
        if run is not None and (x != x or x != run[2]):
            lines.append(run)
            run = None
        if x == x:
            run = [start + i, start + i + 1, x] if run is None else [run[0], start + i + 1, x]
    lines += [run] if run is not None else []
    text = []
    for a, b, x in lines:
        v = f"{x:.{digits}f}"
        v = v.rstrip("0").rstrip(".") if "." in v else v
        text.append(f"{contig}\t{a}\t{b}\t{'0' if v == '-0' else v}\n")
    return "".join(text)


@pytest.mark.parametrize("digits", [0, 1, 3, 5])
def test_bedgraph_lines_match_the_one_by_one_form(tmp_path, digits):
    rng = np.random.default_rng(digits)
    track = np.concatenate([rng.random(3000), rng.normal(0, 40, 2000), np.full(50, 0.25),
                            [1e12, -1e12, np.inf, -np.inf, -0.0, 0.0, -0.0004, 9.9996]])
    track[rng.random(len(track)) < 0.05] = np.nan
    for start, contig in ((0, "c"), (99_999_990, "NC_000913.3")):
        path = tmp_path / f"{digits}.bedgraph"
        write_bedgraph(path, track, contig, start=start, name="t", digits=digits)
        body = path.read_text().split("\n", 1)[1]
        assert body == _bedgraph_lines_one_by_one(track, contig, start, digits)


def test_bigwig_round_trip(tmp_path):
    pyBigWig = pytest.importorskip("pyBigWig")
    track = np.array([0.1, 0.1004, 0.2, 0.2, np.nan, 0.2, 1.0, 1.0], dtype=np.float32)
    path = tmp_path / "cds.bw"
    write_bigwig(path, [("c2", 0, np.zeros(3)), ("c1", 100, track)], {"c1": 200, "c2": 10})
    bw = pyBigWig.open(str(path))
    assert bw.chroms() == {"c1": 200, "c2": 10}
    assert bw.intervals("c1") == ((100, 102, pytest.approx(0.1)), (102, 104, pytest.approx(0.2)),
                                  (105, 106, pytest.approx(0.2)), (106, 108, 1.0))
    assert bw.intervals("c2") == ((0, 3, 0.0),)
    bw.close()
    for tracks, lengths, message in [
        ([("c1", 195, track)], {"c1": 200}, "runs past"),
        ([("c1", 0, track), ("c1", 4, track)], {"c1": 200}, "overlap"),
        ([("c3", 0, track)], {"c1": 200}, "no length"),
    ]:
        with pytest.raises(InputError, match=message):
            write_bigwig(tmp_path / "bad.bw", tracks, lengths)
        assert not list(tmp_path.glob("*bad.bw*"))


def test_bigwig_of_noisy_and_flat_stretches_reads_back_every_base(tmp_path):
    """Noisy stretches go in as per-base entries, flat ones as intervals; both read back as
    the rounded values, with NaN bases left empty."""
    pyBigWig = pytest.importorskip("pyBigWig")
    rng = np.random.default_rng(3)
    track = rng.random(5000).astype(np.float32)
    track[1000:1800] = 0.25  # flat
    track[2000:2010] = np.nan
    track[3000:3100] = np.nan
    track[3100:3130] = 0.5  # short, between gaps
    track[4990:] = np.nan
    path = tmp_path / "noisy.bw"
    write_bigwig(path, [("c", 7, track)], {"c": 6000})
    bw = pyBigWig.open(str(path))
    got = np.array(bw.values("c", 0, 6000), dtype=np.float64)
    kinds = {len(bw.intervals("c", 1007, 1807)), len(bw.intervals("c", 7, 107))}
    bw.close()
    want = np.full(6000, np.nan)
    want[7:5007] = np.round(track.astype(np.float64), 3)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.allclose(got[ok], want[ok], rtol=0, atol=1e-7)
    assert kinds == {1, 100}  # the flat stretch is one interval, the noisy one per base


def test_bigwig_of_a_contig_named_outside_ascii(tmp_path):
    """pyBigWig refused a numpy array of a non-ASCII name ("out of order"), which lost the
    whole annotate run's outputs."""
    pyBigWig = pytest.importorskip("pyBigWig")
    track = np.r_[np.full(300, 0.2), np.linspace(0, 1, 50)].astype(np.float32)  # both kinds
    write_bigwig(tmp_path / "u.bw", [("café", 0, track)], {"café": 400})
    bw = pyBigWig.open(str(tmp_path / "u.bw"))
    got = np.array(bw.values("café", 0, 350))
    bw.close()
    assert np.allclose(got, np.round(track, 3), atol=1e-7)


def test_gff3_loads_in_gffutils_with_the_right_hierarchy(tmp_path):
    """Both GFF3 writers' output, read by gffutils (what genome-analysis scripts use)."""
    gffutils = pytest.importorskip("gffutils")
    from genoctx.heads.spliced_decoder import SplicedGene
    from genoctx.io.writers import write_spliced_gff3

    path = tmp_path / "genes.gff3"
    rnas = [RNACall("chr one", 2000, 2076, 1, "tRNA", float("nan"),
                    {"product": "tRNA-Ile(gat)", "inference": "ARAGORN:1.2.41"})]
    write_gff3(path, _genes(), rnas, LENGTHS)
    db = gffutils.create_db(str(path), ":memory:", merge_strategy="create_unique")
    assert db.count_features_of_type("gene") == len(_genes()) + 1
    for g in _genes():
        (cds,) = [f for f in db.features_of_type("CDS") if (f.start - 1, f.end) == (g.start, g.end)]
        (parent,) = db.parents(cds)
        assert parent.featuretype == "gene" and (parent.start, parent.end) == (cds.start, cds.end)
        assert cds.strand == "+-"[g.strand < 0] and cds.seqid == g.contig.replace(" ", "%20")
    (trna,) = db.features_of_type("tRNA")
    assert trna.attributes["product"] == ["tRNA-Ile(gat)"] and trna.start == 2001
    # partial ends as NCBI writes them: two values, "start_range=.,1" (a literal comma)
    ranges = {(f.start, f.end): {k: f.attributes[k] for k in ("start_range", "end_range")
                                 if k in f.attributes} for f in db.features_of_type("CDS")}
    assert ranges[(1, 300)] == {"start_range": [".", "1"]}
    assert ranges[(4701, 5000)] == {"end_range": ["5000", "."]}
    assert ranges[(100, 1200)] == {"end_range": ["1200", "."]}
    assert ranges[(251, 1000)] == {}

    spliced = [SplicedGene("chr one", 1, ((100, 160), (250, 400)), 0.7),
               SplicedGene("chr one", -1, ((1000, 1101), (1200, 1280), (1400, 1430)), 0.4)]
    path = tmp_path / "spliced.gff3"
    write_spliced_gff3(path, spliced, LENGTHS)
    db = gffutils.create_db(str(path), ":memory:", merge_strategy="create_unique")
    for sg, gene in zip(spliced, db.features_of_type("gene", order_by="start")):
        (mrna,) = db.children(gene, level=1)
        kids = list(db.children(mrna, level=1, order_by="start"))
        assert mrna.featuretype == "mRNA"
        for kind in ("CDS", "exon"):
            assert [(f.start - 1, f.end) for f in kids if f.featuretype == kind] == list(sg.cds)
        # phases along the transcript: first CDS part (5' end) has phase 0
        cds = [f for f in kids if f.featuretype == "CDS"]
        first = cds[0] if sg.strand > 0 else cds[-1]
        assert first.frame == "0"


def test_gene_fasta_proteins_and_coding_sequences(tmp_path):
    """Prodigal-style protein and CDS FASTA: strands, alternative starts read as M, partial
    genes in whole codons, table 4, IDs of the GFF3, Biopython reads it back."""
    from Bio import SeqIO
    from Bio.Seq import Seq

    from genoctx.io.writers import write_gene_fasta

    body = "GTG" + "AAATGGTGA" * 3 + "CCC" + "TAA"      # GTG start; TGA inside (table 4: W)
    rc = str(Seq("ATG" + "GCTCGT" * 4 + "TAG").reverse_complement())
    seq = "TT" + body + "A" * 5 + rc + "CC" + "ATGAAACGT" * 2 + "G"
    contigs = {"c": seq}
    i_rc = 2 + len(body) + 5
    genes = [GeneCall("c", 2, 2 + len(body), 1, 0.9, "GTG"),
             GeneCall("c", i_rc, i_rc + len(rc), -1, 0.8, "ATG"),
             GeneCall("c", len(seq) - 19, len(seq), 1, 0.4, "ATG", (False, True))]  # open 3' end
    fetch = lambda c, a, b: contigs[c][a:b].encode()
    for protein in (True, False):
        path = tmp_path / ("p.faa" if protein else "p.ffn")
        write_gene_fasta(path, genes, {"c": len(seq)}, fetch, protein=protein)
        recs = list(SeqIO.parse(path, "fasta"))
        assert [r.id for r in recs] == ["c_1", "c_2", "c_3"]
        got = [str(r.seq) for r in recs]
        if protein:
            assert got[0] == "M" + str(Seq(body[3:]).translate()) and got[0].endswith("*")
            assert got[0].count("*") == 4  # TGA stops in table 11
            assert got[1] == "MARARARAR*" and got[2] == "MKRMKR"
        else:
            assert got == [body, "ATG" + "GCTCGT" * 4 + "TAG", "ATGAAACGTATGAAACGT"]
        head = recs[2].description.split(" # ")
        assert head[1:4] == [str(len(seq) - 18), str(len(seq)), "1"]
        assert head[4].startswith("ID=c_3;partial=01;start_type=ATG;score=0.4000")
    coded = [dataclasses.replace(genes[0], attrs={"transl_table": 4})]
    write_gene_fasta(tmp_path / "t4.faa", coded, {"c": len(seq)}, fetch, protein=True)
    (rec,) = SeqIO.parse(tmp_path / "t4.faa", "fasta")
    assert str(rec.seq) == "MKWWKWWKWWP*"
    edge = [GeneCall("c", 0, 2 + len(body), 1, 0.9, "TTG", (True, False))]  # runs in from the edge
    write_gene_fasta(tmp_path / "e.faa", edge, {"c": len(seq)}, fetch, protein=True)
    (rec,) = SeqIO.parse(tmp_path / "e.faa", "fasta")
    assert str(rec.seq) == str(Seq(body).translate())  # no M forced; the 2 edge bases dropped
    # a contig name holding ; = % , is escaped in the ID= field, which is split on them
    odd = [dataclasses.replace(genes[0], contig="ctg=1;a%b,c")]
    write_gene_fasta(tmp_path / "o.faa", odd, {"ctg=1;a%b,c": len(seq)},
                     lambda c, a, b: contigs["c"][a:b].encode(), protein=True)
    (odd_rec,) = SeqIO.parse(tmp_path / "o.faa", "fasta")
    fields = dict(kv.split("=") for kv in odd_rec.description.split(" # ")[4].split(";"))
    assert fields["ID"] == "ctg%3D1%3Ba%25b%2Cc_1" and fields["partial"] == "00"
    assert odd_rec.id == "ctg=1;a%b,c_1"
    assert "partial=10;start_type=Edge" in rec.description


def test_gene_fasta_joins_the_exons_of_spliced_genes(tmp_path):
    from Bio import SeqIO
    from Bio.Seq import Seq

    from genoctx.heads.spliced_decoder import SplicedGene
    from genoctx.io.writers import write_gene_fasta

    exon1, intron, exon2 = "ATGGCA", "GTAAGTTTTTTTTTTTTTTCAG", "AAATGGTAA"
    fwd = "CC" + exon1 + intron + exon2 + "CC"
    seq = fwd + "GG" + str(Seq(fwd).reverse_complement())
    a, b = 2 + len(exon1), 2 + len(exon1) + len(intron)
    n = len(fwd) + 2
    plus = SplicedGene("c", 1, ((2, a), (b, b + len(exon2))), 0.7)
    minus = SplicedGene("c", -1, tuple(sorted((n + len(fwd) - e, n + len(fwd) - s)
                                              for s, e in plus.cds)), 0.6)
    write_gene_fasta(tmp_path / "s.faa", [plus, minus], {"c": len(seq)},
                     lambda c, s, e: seq[s:e], protein=True)
    recs = list(SeqIO.parse(tmp_path / "s.faa", "fasta"))
    assert [str(r.seq) for r in recs] == ["MAKW*", "MAKW*"]
    assert recs[0].description.split(" # ")[1:4] == ["3", str(b + len(exon2)), "1"]


def test_genbank_round_trips_through_biopython_and_the_annotation_reader(tmp_path):
    """Genes (partial ones with < and >), RNAs and a spliced gene written as GenBank read back
    through Biopython and genoctx's own GenBank reader with the same coordinates; a region of
    a contig becomes its own record in the region's coordinates."""
    from Bio import SeqIO

    from genoctx.heads.spliced_decoder import SplicedGene
    from genoctx.io.annotation import read_features, read_genes
    from genoctx.io.writers import write_genbank

    rng = random.Random(3)
    contigs = {"chr one": "".join(rng.choice("ACGT") for _ in range(5000)),
               "plasmid": "".join(rng.choice("ACGT") for _ in range(1200))}
    fetch = lambda c, a, b: contigs[c][a:b]
    targets = [("chr one", 0, 5000, 5000), ("plasmid", 0, 1200, 1200)]
    path = tmp_path / "a.gbk"
    write_genbank(path, _genes(), _rnas(), targets, fetch)
    recs = {r.id: r for r in SeqIO.parse(path, "genbank")}
    # whitespace cannot stand in a LOCUS line: the record is named chr_one
    assert list(recs) == ["chr_one", "plasmid"] and str(recs["plasmid"].seq) == contigs["plasmid"]
    cds = [f for f in recs["chr_one"].features if f.type == "CDS"]
    assert [f.qualifiers["locus_tag"][0] for f in cds] == ["chr one_1", "chr one_2", "chr one_3",
                                                          "chr one_4"]
    assert str(cds[0].location) == "[<0:300](+)"       # runs in from the left edge
    assert str(cds[3].location) == "[4700:>5000](-)"   # minus strand, 5' end off the right edge
    protein = str(cds[1].location.extract(recs["chr_one"].seq).translate(table=11))
    assert cds[1].qualifiers["translation"][0] == ("M" + protein[1:]).rstrip("*")
    back = sorted((g.contig, g.start, g.end, g.strand) for g in read_genes(path))
    assert back == sorted((g.contig.replace(" ", "_"), g.start, g.end, g.strand) for g in _genes())
    rna = [f for f in read_features(path)["plasmid"] if f.kind == "ncRNA"]
    assert [(f.start, f.end, f.strand) for f in rna] == [(10, 90, -1)]

    spliced = [SplicedGene("chr one", -1, ((1000, 1101), (1200, 1280)), 0.4)]
    write_genbank(tmp_path / "s.gbk", spliced, [], [("chr one", 900, 1500, 5000)], fetch)
    rec = SeqIO.read(tmp_path / "s.gbk", "genbank")
    assert rec.id == "chr_one:901-1500" and str(rec.seq) == contigs["chr one"][900:1500]
    kinds = {f.type: f for f in rec.features}
    assert set(kinds) == {"gene", "mRNA", "CDS"}
    assert [(int(p.start), int(p.end)) for p in kinds["CDS"].location.parts] == [(300, 380),
                                                                                 (100, 201)]


def test_gff3_fasta_section_is_read_back_by_gffutils_and_the_readers(tmp_path):
    """--gff3-fasta: the contigs follow a ##FASTA line (Prokka's layout); gffutils and genoctx's
    readers stop at it and the bases parse as FASTA."""
    from Bio import SeqIO

    from genoctx.io.annotation import read_genes

    rng = random.Random(5)
    contigs = {"chr one": "".join(rng.choice("ACGT") for _ in range(5000)),
               "plasmid": "".join(rng.choice("ACGT") for _ in range(1200))}
    path = tmp_path / "f.gff3"
    write_gff3(path, _genes(), _rnas(), LENGTHS, fasta=lambda c, a, b: contigs[c][a:b].encode())
    text = path.read_text()
    head, tail = text.split("##FASTA\n")
    (tmp_path / "tail.fa").write_text(tail)
    got = {r.description: str(r.seq) for r in SeqIO.parse(tmp_path / "tail.fa", "fasta")}
    # headers are the seqids as column 1 writes them (escaped alike): "chr one" → chr%20one
    assert {unquote(k): v for k, v in got.items()} == contigs
    assert set(got) == {ln.split("\t")[0] for ln in head.splitlines() if not ln.startswith("#")}
    assert all(len(x) <= 60 for x in tail.splitlines())
    assert sorted((g.start, g.end) for g in read_gff3_genes(path)) == sorted(
        (g.start, g.end) for g in _genes())
    assert len(read_genes(path)) == len(_genes())
    write_gff3(tmp_path / "plain.gff3", _genes(), _rnas(), LENGTHS)
    assert (tmp_path / "plain.gff3").read_text() == head
    gffutils = pytest.importorskip("gffutils")
    db = gffutils.create_db(str(path), ":memory:", merge_strategy="create_unique")
    assert db.count_features_of_type("CDS") == len(_genes())


def test_locus_tags_number_genes_and_rnas_across_contigs_in_every_writer(tmp_path):
    """PREFIX_00001... over both contigs (in ``lengths`` order, then position; RNA genes in the
    same series) becomes the ID in the GFF3 (with locus_tag=), the BED and the gene FASTA; the
    inputs are left as they were; prefixes that would need escaping are refused."""
    from genoctx.io.writers import assign_locus_tags, write_gene_fasta

    genes, rnas = _genes(), _rnas()
    tagged, tagged_rnas = assign_locus_tags(genes, rnas, LENGTHS, "SAMPLE_1")
    assert all("locus_tag" not in g.attrs for g in genes + rnas)  # copies were tagged
    order = {c: i for i, c in enumerate(LENGTHS)}
    series = sorted(tagged + tagged_rnas, key=lambda g: (order[g.contig], g.start))
    assert [g.attrs["locus_tag"] for g in series] == [f"SAMPLE_1_{n:05d}"
                                                      for n in range(1, len(series) + 1)]
    assert [(g.contig, g.start, g.end) for g in tagged] == [(g.contig, g.start, g.end)
                                                            for g in genes]
    write_gff3(tmp_path / "t.gff3", tagged, tagged_rnas, LENGTHS)
    _, rows = _parse(tmp_path / "t.gff3")
    gene_rows = [a for c, a in rows if c[2] == "gene"]
    assert sorted(a["ID"] for a in gene_rows) == sorted(g.attrs["locus_tag"] for g in series)
    assert all(a["locus_tag"] == a["ID"] for a in gene_rows)
    assert all(a["Parent"] == a["locus_tag"] for c, a in rows if c[2] != "gene")
    write_bed(tmp_path / "t.bed", tagged, tagged_rnas)
    names = {line.split("\t")[3] for line in (tmp_path / "t.bed").read_text().splitlines()}
    assert names == {a["ID"] for a in gene_rows}
    seqs = {c: "ACGT" * (n // 4 + 1) for c, n in LENGTHS.items()}
    write_gene_fasta(tmp_path / "t.ffn", tagged, LENGTHS, lambda c, a, b: seqs[c][a:b],
                     protein=False)
    heads = [line[1:].split(" # ")[0] for line in (tmp_path / "t.ffn").read_text().splitlines()
             if line.startswith(">")]
    assert sorted(heads) == sorted(g.attrs["locus_tag"] for g in tagged)
    from genoctx.heads.spliced_decoder import SplicedGene
    from genoctx.io.writers import write_spliced_bed, write_spliced_gff3

    spliced, _ = assign_locus_tags([SplicedGene("plasmid", 1, ((100, 160), (250, 400)), 0.7),
                                    SplicedGene("chr one", -1, ((1000, 1101), (1200, 1280)), .4)],
                                   [], LENGTHS, "EUK")
    write_spliced_gff3(tmp_path / "s.gff3", spliced, LENGTHS)
    _, rows = _parse(tmp_path / "s.gff3")
    assert [(c[0], a["ID"], a["locus_tag"]) for c, a in rows if c[2] == "gene"] == [
        ("chr%20one", "EUK_00001", "EUK_00001"), ("plasmid", "EUK_00002", "EUK_00002")]
    write_spliced_bed(tmp_path / "s.bed", spliced)
    assert [line.split("\t")[3] for line in (tmp_path / "s.bed").read_text().splitlines()] == [
        "EUK_00001", "EUK_00002"]
    for bad in ("", "1ABC", "A B", "A|B", "A-B", "A" * 33):
        with pytest.raises(InputError, match="locus tag prefix"):
            assign_locus_tags(genes, rnas, LENGTHS, bad)


def test_bigwig_without_numpy_support_in_pybigwig_writes_the_same_values(tmp_path, monkeypatch):
    pyBigWig = pytest.importorskip("pyBigWig")
    track = np.random.default_rng(5).random(700).astype(np.float32)
    track[300:400] = 0.5
    write_bigwig(tmp_path / "a.bw", [("c", 0, track)], {"c": 700})
    monkeypatch.setattr(pyBigWig, "numpy", 0)  # as a build without numpy reports itself
    write_bigwig(tmp_path / "b.bw", [("c", 0, track)], {"c": 700})
    got = []
    for name in ("a.bw", "b.bw"):
        bw = pyBigWig.open(str(tmp_path / name))
        got.append(np.array(bw.values("c", 0, 700)))
        bw.close()
    assert np.array_equal(got[0], got[1])
