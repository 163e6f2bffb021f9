"""Label tracks against independent readings of the same annotations (Biopython, plain parsing)."""

import gzip
from collections import defaultdict
from itertools import pairwise

import numpy as np
import pytest
from Bio import SeqIO
from Bio.Seq import Seq

from genoctx.errors import InputError
from genoctx.io.annotation import (
    CLASS_INDEX,
    CLASSES,
    Feature,
    label_tracks,
    read_features,
    read_genes,
    read_sequences_genbank,
)

CDS = CLASS_INDEX["CDS"]
STOPS = {"TAA", "TAG", "TGA"}


# ----------------------------------------------------------------------------- helpers

def _genbank_records(path):
    with gzip.open(path, "rt") if str(path).endswith(".gz") else open(path) as fh:
        return list(SeqIO.parse(fh, "genbank"))


def _is_ground_truth(f):
    """Independent statement of the rule: not pseudo, one contiguous location."""
    q = f.qualifiers
    return "pseudo" not in q and "pseudogene" not in q and len(f.location.parts) == 1


def _coding_masks(rec):
    """(+ strand mask, - strand mask, not-ground-truth mask) from Biopython CDS features."""
    n = len(rec.seq)
    plus, minus, bad = (np.zeros(n, bool) for _ in range(3))
    for f in rec.features:
        if f.type != "CDS":
            continue
        if not _is_ground_truth(f):
            for p in f.location.parts:
                bad[int(p.start):int(p.end)] = True
            continue
        (plus if f.location.strand > 0 else minus)[int(f.location.start):int(f.location.end)] = True
    return plus, minus, bad


def _codons_from_track(seq: str, track: np.ndarray, start: int, end: int, strand: int) -> str:
    """The coding sequence read off the phase track: one codon at each codon position 0."""
    firsts = np.flatnonzero(track[start:end] == 0) + start
    if strand > 0:
        return "".join(seq[p:p + 3] for p in firsts)
    return "".join(str(Seq(seq[p - 2:p + 1]).reverse_complement()) for p in firsts[::-1])


@pytest.fixture(scope="module")
def ecoli(data_root):
    path = data_root / "genomes" / "bacteria" / "Escherichia_coli_K12_MG1655.gbff.gz"
    (rec,) = _genbank_records(path)
    feats = read_features(path)
    tracks = label_tracks(feats, {rec.id: len(rec.seq)})[rec.id]
    return rec, feats, tracks


# ----------------------------------------------------------------------------- E. coli

def test_ecoli_cds_bases_exact(ecoli):
    rec, _, t = ecoli
    plus, minus, bad = _coding_masks(rec)
    assert plus.sum() > 1_500_000 and minus.sum() > 1_500_000
    np.testing.assert_array_equal(t.cds_phase_plus >= 0, plus)
    np.testing.assert_array_equal(t.cds_phase_minus >= 0, minus)
    np.testing.assert_array_equal(t.klass == CDS, plus | minus)
    assert t.ignore[bad].all()  # pseudo and joined CDS: masked, never labelled coding
    assert not ((t.cds_phase_plus >= 0) | (t.cds_phase_minus >= 0))[bad & ~plus & ~minus].any()


def test_ecoli_pseudogenes_without_cds_are_ignored(ecoli):
    rec, _, t = ecoli
    spans = [f for f in rec.features if f.type == "gene" and "pseudo" in f.qualifiers]
    assert len(spans) > 100
    for f in spans:
        for p in f.location.parts:
            assert t.ignore[int(p.start):int(p.end)].all()


def test_ecoli_rna_genes_and_strand(ecoli):
    rec, _, t = ecoli
    for f in rec.features:
        if f.type in ("tRNA", "rRNA") and _is_ground_truth(f):
            s, e = int(f.location.start), int(f.location.end)
            region = t.klass[s:e]
            # An RNA gene is its class wherever no CDS overlaps it (CDS has priority).
            own = region[region != CDS]
            assert np.all(own == CLASS_INDEX[f.type])
            assert np.all(t.rna_strand[s:e][region != CDS] == f.location.strand)
    assert not t.intron.any()
    assert set(np.unique(t.klass)) <= {CLASS_INDEX[c] for c in
                                       ("intergenic", "CDS", "tRNA", "rRNA", "ncRNA")}


def test_ecoli_phase_translates_both_strands(ecoli):
    rec, _, t = ecoli
    seq = str(rec.seq)
    checked = {1: 0, -1: 0}
    cds = [f for f in rec.features if f.type == "CDS" and _is_ground_truth(f)
           and "transl_except" not in f.qualifiers]
    for f in cds[::15]:
        s, e, strand = int(f.location.start), int(f.location.end), f.location.strand
        if t.ignore[s:e].any():  # frame overlaps with a neighbour: not labelled uniquely
            continue
        track = t.cds_phase_plus if strand > 0 else t.cds_phase_minus
        first = s if strand > 0 else e - 1
        assert track[first] == 0  # the first base of a complete CDS starts a codon
        coding = _codons_from_track(seq, track, s, e, strand)
        assert len(coding) == e - s
        protein = str(Seq(coding).translate(table=11, cds=True))
        assert protein == f.qualifiers["translation"][0]
        checked[strand] += 1
    assert checked[1] > 50 and checked[-1] > 50


def test_ecoli_read_genes(data_root, ecoli):
    rec, _, _ = ecoli
    path = data_root / "genomes" / "bacteria" / "Escherichia_coli_K12_MG1655.gbff.gz"
    genes = read_genes(path)
    truth = [f for f in rec.features if f.type == "CDS" and _is_ground_truth(f)]
    assert len(genes) == len(truth)
    seq = str(rec.seq)
    for g in genes[::50]:
        codon = seq[g.stop - 2:g.stop + 1] if g.strand > 0 else \
            str(Seq(seq[g.stop:g.stop + 3]).reverse_complement())
        assert codon in STOPS


def test_read_genes_include_flags(data_root):
    path = data_root / "genomes" / "bacteria" / \
        "Chlamydia_trachomatis_GCF_000173495.1_ASM17349v1.gbff.gz"
    (rec,) = _genbank_records(path)
    cds = [f for f in rec.features if f.type == "CDS"]
    everything = read_genes(path, include_pseudo=True, include_joined=True)
    assert len(everything) == len(cds)
    assert len(read_genes(path)) == sum(_is_ground_truth(f) for f in cds)
    pseudo = read_genes(path, include_pseudo=True)
    assert sum(g.pseudo for g in pseudo) == sum("pseudo" in f.qualifiers for f in cds) > 0
    joined = [g for g in read_genes(path, include_joined=True) if g.joined]
    # one origin-spanning CDS and one ribosomal slippage (peptide chain release factor 2)
    assert sorted(len(g.parts) for g in joined) == [2, 2]
    wrap = next(g for g in joined if g.parts[-1][0] == 0)
    assert wrap.stop == wrap.parts[-1][1] - 1 and wrap.strand == 1


# ----------------------------------------------------------------------------- other GenBank

def test_codon_start_of_partial_cds(data_root):
    path = data_root / "genomes" / "bacteria" / "Paracoccus_sp._SCN_68-21.gbff.gz"
    recs = {r.id: r for r in _genbank_records(path)}
    feats = read_features(path)
    tracks = label_tracks(feats, {k: len(r.seq) for k, r in recs.items()})
    shifted = {1: 0, -1: 0}
    for rid, rec in recs.items():
        t = tracks[rid]
        for f in rec.features:
            codon_start = int(f.qualifiers.get("codon_start", ["1"])[0])
            if f.type != "CDS" or not _is_ground_truth(f) or codon_start == 1:
                continue
            s, e, strand = int(f.location.start), int(f.location.end), f.location.strand
            along = np.arange(s, e) if strand > 0 else np.arange(e - 1, s - 1, -1)
            expected = (np.arange(e - s) - (codon_start - 1)) % 3
            track = (t.cds_phase_plus if strand > 0 else t.cds_phase_minus)[along]
            clean = ~t.ignore[along]  # a frame overlap with a neighbour is masked
            assert clean[:30].all() and np.array_equal(track[clean], expected[clean])
            # the same offset reproduces the record's own translation
            coding = str(f.location.extract(rec.seq))[codon_start - 1:]
            protein = str(Seq(coding[:len(coding) // 3 * 3]).translate(table=11)).rstrip("*")
            assert protein == f.qualifiers["translation"][0]
            shifted[strand] += 1
    assert shifted[1] >= 1 and shifted[-1] >= 1
    partial = [f for fs in feats.values() for f in fs if f.kind == "CDS" and f.partial]
    assert len(partial) >= 10


def test_origin_spanning_cds_is_joined_and_ignored(data_root):
    path = data_root / "genomes" / "bacteria" / \
        "Chlamydia_trachomatis_GCF_000092665.1_ASM9266v1.gbff.gz"
    feats = read_features(path)
    (contig,) = feats
    (length,) = [len(s) for _, s in read_sequences_genbank(path)]
    spanning = [f for f in feats[contig] if f.kind == "CDS" and f.joined]
    assert len(spanning) == 1
    (f,) = spanning
    assert f.parts == [(1042396, length), (0, 1176)]  # transcription order across the origin
    t = label_tracks(feats, {contig: length})[contig]
    assert t.ignore[1042396:].all() and t.ignore[:1176].all()
    assert (t.cds_phase_plus[:1176] == -1).all()


def test_pPCP1_end_to_end(example_genbank, example_fasta):
    (rec,) = _genbank_records(example_genbank)
    (name, seq), = read_sequences_genbank(example_genbank)
    assert name == "NC_005816.1" and seq == bytes(rec.seq)
    with open(example_fasta) as fh:
        assert seq.decode() == "".join(line.strip() for line in fh if not line.startswith(">"))
    feats = read_features(example_genbank)
    t = label_tracks(feats, {name: len(seq)})[name]
    plus, minus, _ = _coding_masks(rec)
    np.testing.assert_array_equal(t.cds_phase_plus >= 0, plus)
    np.testing.assert_array_equal(t.cds_phase_minus >= 0, minus)
    text = seq.decode()
    genes = read_genes(example_genbank)
    cds = [f for f in rec.features if f.type == "CDS"]
    assert len(genes) == len(cds) == 10
    for g, f in zip(genes, cds):
        track = t.cds_phase_plus if g.strand > 0 else t.cds_phase_minus
        clean = ~t.ignore[g.start:g.end]
        if clean.all():
            coding = _codons_from_track(text, track, g.start, g.end, g.strand)
            assert str(Seq(coding).translate(table=11, cds=True)) == f.qualifiers["translation"][0]
        assert (g.start, g.end, g.strand) == (int(f.location.start), int(f.location.end),
                                              f.location.strand)


# ----------------------------------------------------------------------------- GFF3 / GTF

def _gff_rows(path):
    with gzip.open(path, "rt") as fh:
        for line in fh:
            cols = line.rstrip("\n").split("\t")
            if len(cols) == 9 and not line.startswith("#"):
                attrs = dict(kv.split("=", 1) for kv in cols[8].strip(";").split(";") if "=" in kv)
                yield cols[0], cols[2], int(cols[3]) - 1, int(cols[4]), cols[6], cols[7], attrs


def _fasta_lengths_and_seqs(path):
    with gzip.open(path, "rt") as fh:
        return {r.id: str(r.seq) for r in SeqIO.parse(fh, "fasta")}


@pytest.mark.parametrize("species", ["A.thaliana", "D.melanogaster"])
def test_gff3_introns_between_exons(data_root, species):
    base = data_root / "genomes" / "eukaryote_chunks"
    seqs = _fasta_lengths_and_seqs(base / f"{species}.fa.gz")
    tracks = label_tracks(read_features(base / f"{species}.gff.gz"),
                          {k: len(v) for k, v in seqs.items()})
    exons, cds_utr = defaultdict(list), defaultdict(list)
    for contig, kind, s, e, _, _, attrs in _gff_rows(base / f"{species}.gff.gz"):
        if kind in ("exon", "CDS", "five_prime_UTR", "three_prime_UTR"):
            for parent in attrs["Parent"].split(","):
                (exons if kind == "exon" else cds_utr)[(contig, parent)].append((s, e))
    for key, parts in cds_utr.items():  # a model cut by the chunk end: exons = CDS + UTRs
        if key not in exons and not key[1].endswith("-Protein"):
            merged = []
            for s, e in sorted(parts):
                if merged and s <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
                else:
                    merged.append((s, e))
            exons[key] = merged
    want_intron = {c: np.zeros(len(v), bool) for c, v in seqs.items()}
    want_exon = {c: np.zeros(len(v), bool) for c, v in seqs.items()}
    n_introns = 0
    for (contig, _), parts in exons.items():
        parts.sort()
        for s, e in parts:
            want_exon[contig][s:e] = True
        for (_, a_end), (b_start, _) in pairwise(parts):
            if b_start > a_end:
                want_intron[contig][a_end:b_start] = True
                n_introns += 1
    assert n_introns > 200
    for contig, t in tracks.items():
        np.testing.assert_array_equal(t.intron, want_intron[contig])
        np.testing.assert_array_equal(t.exon, want_exon[contig])
        assert not (t.klass == CLASS_INDEX["intron"])[~t.intron].any()
        # intronic bases covered by nothing else are labelled intron
        only_intron = t.intron & ~t.exon & ~t.ignore
        assert np.all(t.klass[only_intron] == CLASS_INDEX["intron"])


@pytest.mark.parametrize("species", ["A.thaliana", "D.melanogaster"])
def test_gff3_cds_phase_translates(data_root, species):
    """Reading codons off the phase track along each transcript gives an ORF ending in a stop."""
    base = data_root / "genomes" / "eukaryote_chunks"
    seqs = _fasta_lengths_and_seqs(base / f"{species}.fa.gz")
    feats = read_features(base / f"{species}.gff.gz")
    tracks = label_tracks(feats, {k: len(v) for k, v in seqs.items()})
    checked = 0
    for contig, fs in feats.items():
        t, seq = tracks[contig], seqs[contig]
        for f in fs:
            if f.kind != "CDS" or f.phase != 0 or any(t.ignore[s:e].any() for s, e in f.parts):
                continue
            track = t.cds_phase_plus if f.strand > 0 else t.cds_phase_minus
            positions = np.concatenate([np.arange(s, e) if f.strand > 0 else np.arange(e - 1, s - 1, -1)
                                        for s, e in f.parts])
            assert np.array_equal(track[positions], np.arange(len(positions)) % 3)
            coding = "".join(seq[s:e] for s, e in sorted(f.parts))
            if f.strand < 0:
                coding = str(Seq(coding).reverse_complement())
            protein = str(Seq(coding.upper()[:len(coding) // 3 * 3]).translate())
            if protein.endswith("*"):  # complete models: one stop, at the end
                assert "*" not in protein[:-1]
                checked += 1
    assert checked > 100


def test_gtf_with_stop_codons_matches_gff3(tmp_path):
    """A GTF (CDS rows without the stop codon + stop_codon rows) labels like the GFF3."""
    gff = tmp_path / "models.gff3"
    gff.write_text(
        "##gff-version 3\n"
        "c1\t.\tgene\t101\t1000\t.\t+\t.\tID=g1\n"
        "c1\t.\tmRNA\t101\t1000\t.\t+\t.\tID=t1;Parent=g1\n"
        "c1\t.\texon\t101\t300\t.\t+\t.\tParent=t1\n"
        "c1\t.\texon\t401\t1000\t.\t+\t.\tParent=t1\n"
        "c1\t.\tCDS\t151\t300\t.\t+\t0\tParent=t1\n"
        "c1\t.\tCDS\t401\t901\t.\t+\t0\tParent=t1\n"
        "c1\t.\tgene\t1101\t1600\t.\t-\t.\tID=g2\n"
        "c1\t.\tmRNA\t1101\t1600\t.\t-\t.\tID=t2;Parent=g2\n"
        "c1\t.\texon\t1101\t1300\t.\t-\t.\tParent=t2\n"
        "c1\t.\texon\t1401\t1600\t.\t-\t.\tParent=t2\n"
        "c1\t.\tCDS\t1401\t1551\t.\t-\t0\tParent=t2\n"
        "c1\t.\tCDS\t1299\t1300\t.\t-\t2\tParent=t2\n")  # stop codon split by the intron
    gtf = tmp_path / "models.gtf"
    gtf.write_text(
        'c1\t.\texon\t101\t300\t.\t+\t.\tgene_id "g1"; transcript_id "t1";\n'
        'c1\t.\texon\t401\t1000\t.\t+\t.\tgene_id "g1"; transcript_id "t1";\n'
        'c1\t.\tCDS\t151\t300\t.\t+\t0\tgene_id "g1"; transcript_id "t1";\n'
        'c1\t.\tCDS\t401\t898\t.\t+\t0\tgene_id "g1"; transcript_id "t1";\n'
        'c1\t.\tstop_codon\t899\t901\t.\t+\t0\tgene_id "g1"; transcript_id "t1";\n'
        'c1\t.\texon\t1101\t1300\t.\t-\t.\tgene_id "g2"; transcript_id "t2";\n'
        'c1\t.\texon\t1401\t1600\t.\t-\t.\tgene_id "g2"; transcript_id "t2";\n'
        'c1\t.\tCDS\t1402\t1551\t.\t-\t0\tgene_id "g2"; transcript_id "t2";\n'
        'c1\t.\tstop_codon\t1401\t1401\t.\t-\t0\tgene_id "g2"; transcript_id "t2";\n'
        'c1\t.\tstop_codon\t1299\t1300\t.\t-\t2\tgene_id "g2"; transcript_id "t2";\n')
    a = label_tracks(read_features(gff), {"c1": 2000})["c1"]
    b = label_tracks(read_features(gtf), {"c1": 2000})["c1"]
    for name in ("cds_phase_plus", "cds_phase_minus", "klass", "rna_strand", "exon", "intron",
                 "ignore"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.klass[100:150] == CLASS_INDEX["UTR"]).all()       # 5' UTR of t1
    assert (a.klass[300:400] == CLASS_INDEX["intron"]).all()
    assert (a.klass[901:1000] == CLASS_INDEX["UTR"]).all()      # 3' UTR of t1
    assert a.cds_phase_minus[[1550, 1400, 1299, 1298]].tolist() == [0, 0, 1, 2]
    assert (a.rna_strand[1300:1400] == -1).all()
    (g1, g2) = read_genes(gtf)
    assert (g1.stop, g2.stop) == (900, 1298)


def test_gff3_pseudogene_slippage_and_circular_origin(tmp_path):
    gff = tmp_path / "prok.gff3"
    gff.write_text(
        "##gff-version 3\n"
        "##sequence-region chr 1 3000\n"
        "chr\t.\tregion\t1\t3000\t.\t+\t.\tID=chr;Is_circular=true\n"
        "chr\t.\tgene\t101\t400\t.\t+\t.\tID=gene-a\n"
        "chr\t.\tCDS\t101\t400\t.\t+\t0\tID=cds-a;Parent=gene-a\n"
        "chr\t.\tpseudogene\t401\t700\t.\t-\t.\tID=gene-p;gene_biotype=pseudogene\n"
        "chr\t.\tCDS\t401\t700\t.\t-\t0\tID=cds-p;Parent=gene-p;pseudo=true\n"
        "chr\t.\tgene\t1001\t1500\t.\t+\t.\tID=gene-s\n"
        "chr\t.\tCDS\t1001\t1075\t.\t+\t0\tID=cds-s;Parent=gene-s\n"
        "chr\t.\tCDS\t1075\t1500\t.\t+\t0\tID=cds-s;Parent=gene-s;exception=ribosomal slippage\n"
        "chr\t.\tgene\t2901\t3090\t.\t+\t.\tID=gene-o\n"
        "chr\t.\tCDS\t2901\t3090\t.\t+\t0\tID=cds-o;Parent=gene-o\n"
        "chr\t.\ttRNA\t1801\t1873\t.\t-\t.\tID=rna-t;Parent=gene-t\n"
        "chr\t.\texon\t1801\t1873\t.\t-\t.\tParent=rna-t\n")
    feats = read_features(gff)["chr"]
    cds = {f.transcript_id: f for f in feats if f.kind == "CDS"}
    assert not cds["cds-a"].joined and cds["cds-p"].pseudo
    assert cds["cds-s"].joined and cds["cds-s"].parts == [(1000, 1075), (1074, 1500)]
    assert cds["cds-o"].joined and cds["cds-o"].parts == [(2900, 3000), (0, 90)]
    t = label_tracks({"chr": feats}, {"chr": 3000})["chr"]
    assert (t.cds_phase_plus[100:400] == np.arange(300) % 3).all()
    assert t.ignore[400:700].all() and t.ignore[1000:1500].all()
    assert t.ignore[2900:].all() and t.ignore[:90].all()
    assert not t.ignore[100:400].any() and not t.ignore[1800:1873].any()
    assert (t.klass[1800:1873] == CLASS_INDEX["tRNA"]).all() and (t.rna_strand[1800:1873] == -1).all()
    assert (t.klass[400:700] != CDS).all() and (t.cds_phase_minus == -1).all()


def test_same_strand_frame_conflict_is_ignored(tmp_path):
    gff = tmp_path / "overlap.gff3"
    gff.write_text("##gff-version 3\n"
                   "c\t.\tCDS\t1\t300\t.\t+\t0\tID=a\n"
                   "c\t.\tCDS\t297\t599\t.\t+\t0\tID=b\n")  # ATGA-style 4-bp overlap
    t = label_tracks(read_features(gff), {"c": 1000})["c"]
    # a reads bases 296..299 as codon positions 2,0,1,2; b as 0,1,2,0: every one disagrees
    assert t.ignore[296:300].all() and not t.ignore[:296].any() and not t.ignore[300:].any()
    assert (t.klass[:599] == CDS).all()


@pytest.mark.filterwarnings("ignore::Bio.BiopythonParserWarning")
def test_feature_outside_contig_and_malformed_files(tmp_path):
    gff = tmp_path / "a.gff3"
    gff.write_text("##gff-version 3\nc\t.\tCDS\t1\t300\t.\t+\t0\tID=a\n")
    with pytest.raises(InputError, match="does not match the sequence"):
        label_tracks(read_features(gff), {"c": 200})
    bad = tmp_path / "b.gff3"
    bad.write_text("##gff-version 3\nc\t.\tCDS\t1\t300\t.\t+\n")
    with pytest.raises(InputError, match=r"b.gff3:2: expected 9 tab-separated columns"):
        read_features(bad)
    bad.write_text("##gff-version 3\nc\t.\tCDS\t300\t1\t.\t+\t0\tID=a\n")
    with pytest.raises(InputError, match="invalid interval"):
        read_features(bad)
    other = tmp_path / "c.txt"
    other.write_text("hello\n")
    with pytest.raises(InputError, match="not a GenBank, GFF3 or GTF"):
        read_features(other)
    with pytest.raises(InputError, match="does not exist"):
        read_features(tmp_path / "missing.gbff")
    broken = tmp_path / "d.gbk"
    broken.write_text("LOCUS       X 10 bp DNA\nFEATURES             Location/Qualifiers\n"
                      "     CDS             join(1..\n")
    with pytest.raises(InputError):
        read_features(broken)


def test_classes_and_empty_contig():
    assert CLASSES[0] == "intergenic" and len(CLASSES) == 7
    t = label_tracks({}, {"empty": 50})["empty"]
    assert (t.klass == 0).all() and (t.cds_phase_plus == -1).all() and not t.ignore.any()
    f = Feature(contig="x", start=0, end=9, strand=1, kind="CDS", parts=[(0, 9)], phase=1)
    t = label_tracks({"x": [f]}, {"x": 9})["x"]
    assert t.cds_phase_plus.tolist() == [2, 0, 1, 2, 0, 1, 2, 0, 1]


def _write_genbank(path, taxonomy):
    from Bio.SeqFeature import CompoundLocation, SeqFeature, SimpleLocation
    from Bio.SeqRecord import SeqRecord

    rec = SeqRecord(Seq("ACGT" * 150), id="X1.1", name="X1", description="test")
    rec.annotations.update(molecule_type="DNA", taxonomy=taxonomy, topology="linear")

    def joined(strand):
        return CompoundLocation([SimpleLocation(*p, strand=strand) for p in
                                 ([(0, 100), (200, 400)] if strand > 0 else
                                  [(200, 400), (0, 100)])])
    cds = CompoundLocation([SimpleLocation(50, 100, 1), SimpleLocation(200, 350, 1)])
    rec.features = [
        SeqFeature(joined(1), type="mRNA", qualifiers={"locus_tag": ["g1"]}),
        SeqFeature(cds, type="CDS", qualifiers={"locus_tag": ["g1"], "codon_start": ["1"]}),
        SeqFeature(SimpleLocation(450, 520, -1), type="tRNA", qualifiers={"locus_tag": ["t1"]}),
        SeqFeature(SimpleLocation(530, 590, 1), type="gene",
                   qualifiers={"locus_tag": ["p1"], "pseudo": [""]}),
    ]
    SeqIO.write(rec, path, "genbank")
    return path


def test_genbank_splicing_depends_on_the_organism(tmp_path):
    euk = _write_genbank(tmp_path / "euk.gbk", ["Eukaryota", "Viridiplantae"])
    t = label_tracks(read_features(euk), {"X1.1": 600})["X1.1"]
    assert (t.klass[0:50] == CLASS_INDEX["UTR"]).all() and (t.klass[350:400] == CLASS_INDEX["UTR"]).all()
    assert (t.klass[100:200] == CLASS_INDEX["intron"]).all() and t.intron[100:200].all()
    assert t.exon[0:100].all() and t.exon[200:400].all() and not t.exon[100:200].any()
    # the CDS continues its frame across the intron: 50 bases, then codon position 50 % 3 = 2
    assert t.cds_phase_plus[99] == 49 % 3 and t.cds_phase_plus[200] == 50 % 3
    assert (t.klass[450:520] == CLASS_INDEX["tRNA"]).all() and (t.rna_strand[450:520] == -1).all()
    assert t.ignore[530:590].all() and t.ignore.sum() == 60
    prok = _write_genbank(tmp_path / "prok.gbk", ["Bacteria", "Proteobacteria"])
    (cds,) = [f for f in read_features(prok)["X1.1"] if f.kind == "CDS"]
    assert cds.joined  # prokaryotes do not splice: a compound CDS is not ground truth
    t = label_tracks(read_features(prok), {"X1.1": 600})["X1.1"]
    assert t.ignore[50:100].all() and t.ignore[200:350].all() and (t.cds_phase_plus == -1).all()



def _two_part_cds(path, phases):
    path.write_text("##gff-version 3\n##sequence-region c 1 60\n"
                    "c\tx\tgene\t1\t60\t.\t+\t.\tID=g\n"
                    "c\tx\tmRNA\t1\t60\t.\t+\t.\tID=m;Parent=g\n"
                    f"c\tx\tCDS\t1\t10\t.\t+\t{phases[0]}\tID=c;Parent=m\n"
                    f"c\tx\tCDS\t41\t51\t.\t+\t{phases[1]}\tID=c;Parent=m\n")
    return path


def test_cds_phase_dot_is_counted_along_the_cds(tmp_path):
    # '.' is invalid for CDS in GFF3 but occurs (WormBase small-gene files); it must not mean 0.
    dots = _two_part_cds(tmp_path / "dots.gff3", "..")
    given = _two_part_cds(tmp_path / "given.gff3", "02")  # 10 bases, then phase 2
    a = label_tracks(read_features(dots), {"c": 60})["c"].cds_phase_plus
    b = label_tracks(read_features(given), {"c": 60})["c"].cds_phase_plus
    np.testing.assert_array_equal(a, b)
    assert a[0] == 0 and a[40] == 1


# ----------------------------------------------------------------------------- CDS grouping

def test_cds_rows_under_a_transcript_are_one_cds_whatever_their_ids(tmp_path):
    """Under an mRNA (a parent that is not a gene) the CDS rows are the exons of one CDS, with
    a shared ID, their own IDs or none; under a gene (NCBI, Prokka, Bakta, genoctx: gene → CDS)
    each CDS ID is a CDS of its own, as before."""
    rows = ["c\tx\tgene\t1\t1000\t.\t+\t.\tID=g1",
            "c\tx\tmRNA\t1\t1000\t.\t+\t.\tID=t1;Parent=g1",
            "c\tx\tCDS\t101\t200\t.\t+\t0\tID=cds1;Parent=t1",
            "c\tx\tCDS\t301\t400\t.\t+\t2\tID=cds2;Parent=t1",
            "c\tx\tCDS\t501\t600\t.\t+\t1\tParent=t1",
            "c\tx\tgene\t2001\t3000\t.\t-\t.\tID=g2",
            "c\tx\tCDS\t2001\t2300\t.\t-\t0\tID=cdsA;Parent=g2",
            "c\tx\tCDS\t2601\t3000\t.\t-\t0\tID=cdsB;Parent=g2"]
    path = tmp_path / "a.gff3"
    path.write_text("##gff-version 3\n" + "\n".join(rows) + "\n")
    cds = [f for f in read_features(path)["c"] if f.kind == "CDS"]
    spliced = [f for f in cds if f.strand > 0]
    assert len(spliced) == 1
    assert spliced[0].parts == [(100, 200), (300, 400), (500, 600)]
    assert spliced[0].part_phases == [0, 2, 1] and not spliced[0].joined
    assert spliced[0].transcript_id == "cds1"
    assert sorted((f.transcript_id, tuple(f.parts)) for f in cds if f.strand < 0) == \
        [("cdsA", ((2000, 2300),)), ("cdsB", ((2600, 3000),))]


@pytest.mark.parametrize("attrs, strand, want", [
    ("partial=true;start_range=.,101", "+", (True, False)),
    ("partial=true;end_range=400,.", "+", (False, True)),
    ("partial=true;start_range=.,101", "-", (False, True)),
    ("partial=true;end_range=400,.", "-", (True, False)),
    ("partial=10", "-", (False, True)),          # Prodigal: left, right digits
    ("partial=true", "+", (True, True)),         # no end named: either may be
    ("locus_tag=x", "+", None),
])
def test_partial_ends_of_a_gff3_cds_follow_its_strand(tmp_path, attrs, strand, want):
    path = tmp_path / "p.gff3"
    path.write_text("##gff-version 3\n"
                    f"c\tx\tgene\t101\t400\t.\t{strand}\t.\tID=g;{attrs}\n"
                    f"c\tx\tCDS\t101\t400\t.\t{strand}\t0\tID=cds;Parent=g;{attrs}\n")
    cds = next(f for f in read_features(path)["c"] if f.kind == "CDS")
    got = (cds.attributes.get("partial5"), cds.attributes.get("partial3"))
    assert got == (want or (None, None))
    if not attrs.startswith("partial=1"):  # Prodigal's digits are not read as `partial` here
        assert cds.partial == (want is not None)
