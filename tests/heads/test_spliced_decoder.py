"""Spliced gene-structure decoder: hand-built genes on both strands, splice and frame rules,
stop codons, a real C. elegans locus with oracle probabilities, the GFF3 writer, symmetry."""

import tarfile
from dataclasses import replace
from itertools import pairwise

import numpy as np
import pytest

from genoctx.errors import InputError
from genoctx.heads import spliced_decoder as sd
from genoctx.heads.classes import INDEX, NUM_CLASSES, RC_PERMUTATION
from genoctx.io.annotation import label_tracks, read_features
from genoctx.io.writers import write_spliced_gff3

COMP = str.maketrans("ACGT", "TGCA")
STOPS = {"TAA", "TAG", "TGA"}
INV_RC = np.argsort(RC_PERMUTATION)  # column j of the reverse complement's probabilities

# the hand-made genes here are short: keep the floor that lets them through (the default
# drops CDS under 150 bp)
# Decoder mechanics on oracle probabilities: the head alone (no coding model, head weight 1).
HEAD = {"head_weight": 1.0, "coding_weight": 0.0}
SHORT = sd.DecoderParams(min_cds=60, **HEAD)


def revcomp(s: str) -> str:
    return s.translate(COMP)[::-1]


def labels_for(length: int, genes: list[tuple[int, list[tuple[int, int]]]]) -> np.ndarray:
    """Head class ids for genes given as (strand, CDS exons ascending); codon positions counted
    along each gene from its first CDS base."""
    y = np.zeros(length, dtype=np.int64)
    for strand, cds in genes:
        order = cds if strand > 0 else cds[::-1]
        done = 0
        for s, e in order:
            pos = (done + np.arange(e - s)) % 3
            y[s:e] = (1 + pos if strand > 0 else 4 + pos)[:: 1 if strand > 0 else -1]
            done += e - s
        for (_, a), (b, _) in pairwise(cds):
            y[a:b] = INDEX["intron+" if strand > 0 else "intron-"]
    return y


def rc_probs(p: np.ndarray) -> np.ndarray:
    return p[::-1][:, INV_RC]


def spliced(seq: str, g: sd.SplicedGene) -> str:
    s = "".join(seq[a:b] for a, b in g.cds)
    return s if g.strand > 0 else revcomp(s)


def check_gene(seq: str, g: sd.SplicedGene, min_intron: int = 30, min_cds: int = 60) -> None:
    """Every rule the decoder promises, read along the gene's strand; a gene partial at an
    end (it runs off the sequence there) holds whole codons and lacks that end's codon."""
    cds = spliced(seq, g)
    assert len(cds) % 3 == 0 and len(cds) >= min_cds
    codons = [cds[i:i + 3] for i in range(0, len(cds), 3)]
    five, three = g.partial
    assert five or codons[0] == "ATG"
    assert (codons[-1] in STOPS) != three
    assert not STOPS & set(codons[:-1]), "in-frame stop inside the CDS"
    for a, b in g.introns:
        intron = seq[a:b] if g.strand > 0 else revcomp(seq[a:b])
        assert b - a >= min_intron and intron[:2] == "GT" and intron[-2:] == "AG"
    for (_, a), (b, _) in pairwise(g.cds):
        assert a < b


# exon 1 = ATG + 10 codons + 2 bases (a phase-2 intron), exon 2 = 1 base + 8 codons + TAA
FLANK_L = "CCTTGCACCTGACCTTGCACCTTGCAACCTTGCACCTAGCACCTTGCACC"
EXON1 = "ATG" + "GCTAAAGAACTGCCAGGTCGTATCGAAAAC" + "GC"
INTRON = "GTAAGT" + "TTCTTCTCCTTTCCTTCTTCTCCTTTCC" + "TTTCAG"
EXON2 = "C" + "GAACGTCTGAAAGCTATTGAAGAC" + "TAA"
FLANK_R = "CACCTTGCAACCTTGGACCTTGCACCTAGCACCTTCCAACCTTGCCTTGC"


def two_exon(exon1=EXON1, intron=INTRON, exon2=EXON2):
    seq = FLANK_L + exon1 + intron + exon2 + FLANK_R
    a = len(FLANK_L)
    b = a + len(exon1)
    c = b + len(intron)
    cds = [(a, b), (c, c + len(exon2))]
    return seq, cds


def test_two_exon_gene_plus_strand():
    seq, cds = two_exon()
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    genes = sd.decode(seq, p, contig="x", params=SHORT)
    assert [(g.strand, g.cds) for g in genes] == [(1, tuple(cds))]
    assert genes[0].introns == ((cds[0][1], cds[1][0]),)
    check_gene(seq, genes[0])
    assert genes[0].score == pytest.approx(0.9, abs=1e-6)


def test_two_exon_gene_minus_strand_is_the_mirror():
    seq, cds = two_exon()
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    L = len(seq)
    rseq = revcomp(seq)
    genes = sd.decode(rseq, rc_probs(p), contig="x", params=SHORT)
    mirrored = tuple(sorted((L - e, L - s) for s, e in cds))
    assert [(g.strand, g.cds) for g in genes] == [(-1, mirrored)]
    check_gene(rseq, genes[0])
    # the − strand labels built directly give the same answer
    direct = sd.oracle_probs(labels_for(L, [(-1, list(mirrored))]))
    assert [(g.strand, g.cds) for g in sd.decode(rseq, direct, params=SHORT)] == [(-1, mirrored)]


@pytest.mark.parametrize("where", ["donor", "acceptor"])
def test_no_intron_without_gt_ag(where):
    intron = ("GC" + INTRON[2:]) if where == "donor" else (INTRON[:-2] + "AC")
    seq, cds = two_exon(intron=intron)
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    genes = sd.decode(seq, p, params=SHORT)
    assert all(g.introns != ((cds[0][1], cds[1][0]),) for g in genes)
    for g in genes:
        check_gene(seq, g)
    # the same on the − strand
    rseq = revcomp(seq)
    for g in sd.decode(rseq, rc_probs(p), params=SHORT):
        check_gene(rseq, g)


def test_minimum_intron_length():
    short = "GTAAGT" + "TTCTTCTCCTTTC" + "TTTCAG"  # 25 bp
    seq, cds = two_exon(intron=short)
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    intron = ((cds[0][1], cds[1][0]),)
    assert all(g.introns != intron for g in sd.decode(seq, p, params=SHORT))
    (g,) = sd.decode(seq, p, params=sd.DecoderParams(min_intron=25, min_cds=60, **HEAD))
    assert g.introns == intron
    L = len(seq)
    (g,) = sd.decode(revcomp(seq), rc_probs(p), params=sd.DecoderParams(min_intron=25, min_cds=60, **HEAD))
    assert g.introns == ((L - intron[0][1], L - intron[0][0]),)
    assert all(len(g.introns) == 0 for g in sd.decode(revcomp(seq), rc_probs(p), params=SHORT))


def test_frame_is_kept_across_the_intron():
    # The intron has phase 2: exon 2's first base completes a codon. Read from codon position 0
    # after the intron, exon 2 hits TGA; the decoder must carry the phase to reach TAA.
    assert "TGA" in [EXON2[i:i + 3] for i in range(0, len(EXON2) - 3, 3)]
    seq, cds = two_exon()
    spliced_cds = seq[cds[0][0]:cds[0][1]] + seq[cds[1][0]:cds[1][1]]
    assert len(seq[cds[0][0]:cds[0][1]]) % 3 == 2
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    (g,) = sd.decode(seq, p, params=SHORT)
    assert spliced(seq, g) == spliced_cds
    # a phase-0 labelling of the same exons (wrong frame after the intron) is refused
    y = labels_for(len(seq), [(1, cds)])
    y[cds[1][0]:cds[1][1]] = 1 + np.arange(cds[1][1] - cds[1][0]) % 3
    for g in sd.decode(seq, sd.oracle_probs(y), params=SHORT):
        check_gene(seq, g)


def test_split_stop_codon_is_refused():
    # exon 1 ends with T as the first base of a codon and exon 2 starts with AA: the spliced
    # codon is TAA, so this structure is not a gene however the probabilities read
    exon1 = "ATG" + "GCTAAAGAACTGCCAGGTCGTATCGAAAAC" + "T"
    exon2 = "AA" + "GAACGTCTGAAAGCTATTGAAGACGGT" + "TAA"
    seq, cds = two_exon(exon1=exon1, exon2=exon2)
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    for strand_seq, probs in ((seq, p), (revcomp(seq), rc_probs(p))):
        genes = sd.decode(strand_seq, probs, params=SHORT)
        for g in genes:
            check_gene(strand_seq, g)
        assert all(len(g.cds) == 1 for g in genes)


def test_stop_codon_ends_the_cds():
    body = "ATG" + "GCTAAAGAACTGCCAGGTCGTATCGAAAACGAACGTCTGAAAGCTATTGAAGACGGTCGT" + "TAG"
    tail = "GACGCTAAAGAACTGCCAGGTCGTATCGAA"  # the labels say coding goes on past the stop
    seq = FLANK_L + body + tail + FLANK_R
    a = len(FLANK_L)
    y = labels_for(len(seq), [(1, [(a, a + len(body) + len(tail))])])
    (g,) = sd.decode(seq, sd.oracle_probs(y), params=SHORT)
    assert g.cds == ((a, a + len(body)),)
    rseq = revcomp(seq)
    L = len(seq)
    (g,) = sd.decode(rseq, rc_probs(sd.oracle_probs(y)), params=SHORT)
    assert g.strand == -1 and g.cds == ((L - a - len(body), L - a),)


def test_short_cds_is_dropped_and_params_checked():
    seq = FLANK_L + "ATGGCTAAAGAATAA" + FLANK_R
    a = len(FLANK_L)
    p = sd.oracle_probs(labels_for(len(seq), [(1, [(a, a + 15)])]))
    assert sd.decode(seq, p, params=sd.DecoderParams(**HEAD)) == []
    assert len(sd.decode(seq, p, params=sd.DecoderParams(min_cds=15, **HEAD))) == 1
    with pytest.raises(ValueError, match="min_intron"):
        sd.DecoderParams(min_intron=2)


def test_bad_inputs_raise_input_error():
    with pytest.raises(InputError, match=r"\[L, 17\]"):
        sd.decode("ACGT", np.ones((4, 3)))
    with pytest.raises(InputError, match="rows of probabilities"):
        sd.decode("ACGT", np.full((5, NUM_CLASSES), 1 / NUM_CLASSES))
    with pytest.raises(InputError, match="no probabilities"):
        sd.decode_many([("a", "ACGT")], {})
    with pytest.raises(InputError, match="finite"):
        sd.decode("ACGT", np.full((4, NUM_CLASSES), np.nan))


def test_channels_in_place_of_probabilities_give_the_same_genes(data_root):
    """What annotate keeps for eukaryote mode: the 9 channels, not the 17 classes."""
    seq, p = made_up_probs(data_root, 20_000, 1)
    genes = sd.decode(seq, p, contig="I", params=SHORT)
    assert len(genes) >= 3
    assert sd.decode(seq, sd.channel_probs(p), contig="I", params=SHORT) == genes
    bad = sd.channel_probs(p)
    bad[7, 2] = -0.1
    with pytest.raises(InputError, match="channel probabilities"):
        sd.decode(seq, bad, contig="I", params=SHORT)


def made_up_probs(data_root, start: int, seed: int):
    """12 kb of real C. elegans sequence with labels of random spliced "genes" (1-4 exons of
    60-300 bp, introns of 40-200) laid over it, softened and mixed with noise."""
    from genoctx.io.annotation import read_sequences

    (_, s), *_ = read_sequences(data_root / "genomes/eukaryote_chunks/C.elegans.fa.gz")
    seq = s[start:start + 12_000].decode().upper()
    rng = np.random.default_rng(seed)
    made_up, pos = [], 100
    while pos < len(seq) - 2000:
        exons, x = [], pos
        for _ in range(int(rng.integers(1, 5))):
            n = int(rng.integers(60, 300))
            exons.append((x, x + n))
            x += n + int(rng.integers(40, 200))
        made_up.append((int(rng.choice([-1, 1])), exons))
        pos = x + int(rng.integers(200, 800))
    y = labels_for(len(seq), made_up)
    noise = rng.dirichlet(np.full(NUM_CLASSES, 1.0), size=len(seq))
    return seq, (0.7 * sd.oracle_probs(y, 0.6) + 0.3 * noise).astype(np.float32)


def internal_exons(genes) -> list[int]:
    return [e - s for g in genes for s, e in g.cds[1:-1]]


@pytest.mark.parametrize("min_exon", [0, 25])
def test_noisy_made_up_labels_give_valid_mirrored_genes(data_root, min_exon):
    # Labels for random spliced "genes" laid over real sequence, plus noise: the decoder must
    # bend them into valid genes (ATG, stops, GT-AG, frame) on both strands, and decoding the
    # reverse complement must give the mirror image (with a floor on internal exons too).
    seq, p = made_up_probs(data_root, 20_000, 0)
    params = sd.DecoderParams(min_cds=60, min_exon=min_exon, **HEAD)
    genes = sd.decode(seq, p, contig="I", params=params)
    assert len(genes) >= 5 and {g.strand for g in genes} == {1, -1}
    assert sum(len(g.cds) > 1 for g in genes) >= 2
    for g in genes:
        check_gene(seq, g)
    assert min(internal_exons(genes)) >= min_exon
    L = len(seq)
    back = sd.decode(revcomp(seq), rc_probs(p), contig="I", params=params)
    mirror = sorted((-g.strand, tuple(sorted((L - e, L - s) for s, e in g.cds))) for g in back)
    assert mirror == sorted((g.strand, g.cds) for g in genes)


def _locus(data_root, name: str, tmp_path):
    with tarfile.open(data_root / "genomes/eukaryote_chunks/C.elegans_smallgenes.tar.gz") as tar:
        fa = tar.extractfile(f"smallgenes/{name}.fa").read().decode()
        gff = tmp_path / f"{name}.gff3"
        gff.write_bytes(tar.extractfile(f"smallgenes/{name}.gff3").read())
    seq = "".join(fa.splitlines()[1:]).upper()
    cds = [sorted(f.parts) for f in read_features(gff)[name] if f.kind == "CDS"]
    return seq, cds


@pytest.mark.parametrize("name", ["ce.2.88", "ce.1.30", "ce.3.54"])
def test_real_locus_oracle_recovers_the_intron_chain(data_root, tmp_path, name):
    seq, cds = _locus(data_root, name, tmp_path)
    true = cds[0]
    assert len(true) >= 2
    p = sd.oracle_probs(labels_for(len(seq), [(1, true)]))
    (g,) = sd.decode(seq, p, contig=name, params=SHORT)
    assert g.strand == 1 and g.cds == tuple(true)
    check_gene(seq, g)
    L = len(seq)
    (g,) = sd.decode(revcomp(seq), rc_probs(p), contig=name, params=SHORT)
    true_introns = sd.SplicedGene(name, 1, tuple(true)).introns
    assert g.strand == -1 and g.introns == tuple(sorted((L - e, L - s) for s, e in true_introns))


def test_gff3_round_trip(tmp_path):
    seq, cds = two_exon()
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    genes = sd.decode(seq, p, contig="x", params=SHORT)
    L = len(seq)
    genes += [sd.SplicedGene("x", -1, tuple(sorted((L - e, L - s) for s, e in cds)), 0.5)]
    path = tmp_path / "genes.gff3"
    write_spliced_gff3(path, genes, {"x": L})
    text = path.read_text()
    assert text.count("\tgene\t") == 2 and text.count("\tmRNA\t") == 2
    assert text.count("\tCDS\t") == 4 and text.count("\texon\t") == 4 and "Parent=mrna_x_1" in text
    feats = read_features(path)["x"]
    got = sorted((f.strand, tuple(sorted(f.parts))) for f in feats if f.kind == "CDS")
    assert got == sorted((g.strand, g.cds) for g in genes)
    # the phase column gives the same codon positions as counting along each CDS
    t = label_tracks({"x": feats}, {"x": L})["x"]
    want = labels_for(L, [(g.strand, list(g.cds)) for g in genes])
    assert np.array_equal(t.cds_phase_plus[want == 1], np.zeros((want == 1).sum()))
    assert np.array_equal(t.cds_phase_minus[want == 5], np.ones((want == 5).sum()))
    assert not t.ignore.any()
    with pytest.raises(InputError, match="no length"):
        write_spliced_gff3(tmp_path / "bad.gff3", genes, {"y": L})
    # exons are numbered in transcript order (5' → 3'), on the − strand from its right end;
    # a locus tag is on every row of its gene
    genes[1].attrs["locus_tag"] = "TAG_2"
    write_spliced_gff3(path, genes, {"x": L})
    rows = [r.split("\t") for r in path.read_text().splitlines() if not r.startswith("#")]
    for strand in "+-":
        exons = sorted((int(r[3]), r[8].split(";")[0]) for r in rows
                       if r[2] == "exon" and r[6] == strand)
        ids = [i for _, i in (exons if strand == "+" else exons[::-1])]
        assert [i.rsplit(".", 1)[1] for i in ids] == ["1", "2"]
    tagged = [r for r in rows if r[6] == "-"]
    assert len(tagged) == 6 and all("locus_tag=TAG_2" in r[8] for r in tagged)
    assert not any("locus_tag" in r[8] for r in rows if r[6] == "+")


def test_batches_give_the_same_genes_as_single_records():
    seq, cds = two_exon()
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    recs = [("a", seq), ("b", revcomp(seq)), ("c", seq[:40] + seq)]
    probs = {"a": p, "b": rc_probs(p), "c": np.concatenate([p[:40], p])}
    prior = sd.channel_probs(p).mean(0)
    # no repeat filter: its k-mers are counted over the records decoded together, and three
    # copies of one gene are a repeat
    params = replace(SHORT, max_repeat_fraction=1.0)
    together = sd.decode_many(recs, probs, prior=prior, batch_size=3, params=params)
    alone = [g for c, s in recs for g in sd.decode(s, probs[c], contig=c, prior=prior,
                                                   params=params)]
    assert together == alone and len(together) == 3


def three_exon(middle: str):
    """Exon 1 (ATG + 10 codons, a phase-0 intron), ``middle``, the last exon (phase by the
    middle's length), each intron the same 40 bp."""
    exon1 = "ATG" + "GCTAAAGAACTGCCAGGTCGTATCGAAAAC"
    exon3 = {0: "", 1: "GC", 2: "C"}[len(middle) % 3] + "GAACGTCTGAAAGCTATTGAAGAC" + "TAA"
    seq = FLANK_L + exon1 + INTRON + middle + INTRON + exon3 + FLANK_R
    a = len(FLANK_L)
    b = a + len(exon1)
    c = b + len(INTRON)
    d = c + len(middle)
    e = d + len(INTRON)
    return seq, [(a, b), (c, d), (e, e + len(exon3))]


@pytest.mark.parametrize("n", [21, 22, 23])
def test_minimum_internal_exon_length(n):
    # a middle exon of n bases (all three phases of the second intron): kept from min_exon n
    # down, never shorter than min_exon; the first and last exons are not held to it; the same
    # on the - strand
    seq, cds = three_exon("GCTAAAGAACTGCCAGGTCGTATCG"[:n])
    y = labels_for(len(seq), [(1, cds)])
    p = sd.oracle_probs(y)
    L = len(seq)
    for me, exact in ((0, True), (3, True), (n, True), (n + 1, False), (40, False)):
        params = sd.DecoderParams(min_cds=60, min_exon=me, **HEAD)
        for rc in (False, True):
            s, q = (revcomp(seq), rc_probs(p)) if rc else (seq, p)
            genes = sd.decode(s, q, contig="x", params=params)
            want = tuple(sorted((L - e, L - s) for s, e in cds)) if rc else tuple(cds)
            assert any(g.cds == want for g in genes) == exact, (me, rc)
            for g in genes:
                check_gene(s, g)
            assert all(x >= me for x in internal_exons(genes))
    with pytest.raises(ValueError, match="min_exon"):
        sd.DecoderParams(min_exon=2)


def test_exon_floor_changes_nothing_where_no_exon_is_shorter(data_root):
    # the floor only removes paths: where the best path without it already has every internal
    # exon at least that long, the floor must give the same genes (a check of the jump's scores)
    seq, p = made_up_probs(data_root, 40_000, 3)
    base = sd.decode(seq, p, params=sd.DecoderParams(min_cds=60, min_exon=0, **HEAD))
    shortest = min(internal_exons(base))
    assert sum(len(g.cds) > 2 for g in base) >= 3 and shortest >= 3
    for me in (3, shortest):
        assert sd.decode(seq, p, params=sd.DecoderParams(min_cds=60, min_exon=me,
                                                         **HEAD)) == base
    floored = sd.decode(seq, p, params=sd.DecoderParams(min_cds=60, min_exon=shortest + 1,
                                                        **HEAD))
    assert floored != base and min(internal_exons(floored)) > shortest


@pytest.mark.parametrize("window,overlap", [(3000, 1000), (2500, 600)])
def test_long_records_decoded_in_windows_give_the_genes_of_one_decode(data_root, window,
                                                                       overlap):
    """Windows bound the Viterbi's memory on a long record; a gene near a seam is decoded whole
    in the next window, so the genes equal one decode of the whole record (12 kb here: five
    windows or more)."""
    seq, p = made_up_probs(data_root, 20_000, 0)
    whole = sd.decode(seq, p, contig="I", params=replace(SHORT, window=0))
    assert len(whole) >= 5
    windowed = sd.decode(seq, p, contig="I",
                         params=replace(SHORT, window=window, window_overlap=overlap))
    assert windowed == whole
    # the first seam (window - overlap) fell inside a gene, so the seam had to move back
    assert any(g.start < window - overlap < g.end for g in whole)


def test_window_settings_are_checked():
    for window, overlap in ((1000, 500), (1000, 0), (-5, 10)):
        with pytest.raises(ValueError, match="window"):
            sd.DecoderParams(window=window, window_overlap=overlap)
    sd.DecoderParams(window=0)


def test_worker_processes_give_the_genes_of_one_process(data_root):
    """Batches and long (windowed) records decoded side by side in worker processes, with the
    coding model and its self-training round: the same genes as in one process."""
    recs, probs = [], {}
    for n, start in enumerate((20_000, 40_000, 60_000)):
        seq, p = made_up_probs(data_root, start, n)
        recs.append((f"r{n}", seq))
        probs[f"r{n}"] = p
    recs.append(("short", recs[0][1][:3000]))
    probs["short"] = probs["r0"][:3000]
    params = sd.DecoderParams(min_cds=60, window=5000, window_overlap=1000)
    one = sd.decode_many(recs, probs, params=params, batch_size=1)
    assert len(one) >= 10 and {g.contig for g in one} == {"r0", "r1", "r2", "short"}
    assert sd.decode_many(recs, probs, params=params, batch_size=1, workers=2) == one
    with pytest.raises(InputError, match="workers"):
        sd.decode_many(recs, probs, workers=0)


def test_no_exon_lies_in_an_assembly_gap_but_an_intron_may_span_one():
    # a gap (>= gap_bases unknown bases) in the intron: the gene is still found, whole
    gap = "N" * 60
    seq, cds = two_exon(intron=INTRON[:6] + gap + INTRON[6:])
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    (g,) = sd.decode(seq, p, contig="x", params=SHORT)
    assert g.cds == tuple(cds)
    # the gap in the first exon (in frame, labelled coding): the reads-through gene is refused
    # and no call has a coding base in the gap, on either strand
    seq, cds = two_exon(exon1=EXON1[:33] + gap + EXON1[33:])
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    through = sd.decode(seq, p, contig="x", params=replace(SHORT, gap_bases=0))
    assert [g.cds for g in through] == [tuple(cds)]  # what the rule prevents
    for s, q in ((seq, p), (revcomp(seq), rc_probs(p))):
        lo = s.index(gap)
        for g in sd.decode(s, q, contig="x", params=SHORT):
            assert all(e <= lo or b >= lo + len(gap) for b, e in g.cds), g
    # a shorter run of unknown bases is read through
    short = replace(SHORT, gap_bases=61)
    assert [g.cds for g in sd.decode(seq, p, contig="x", params=short)] == [tuple(cds)]
    with pytest.raises(ValueError, match="gap_bases"):
        sd.DecoderParams(gap_bases=-1)


# the two-exon gene of two_exon(): exon 1 = 50..85 (codons from 50, a phase-2 intron after it),
# intron 85..125, exon 2 = 125..153 (one base completes the split codon, codons from 126)
@pytest.mark.parametrize("cut, want", [
    (60, ((2, 25), (65, 93))),   # exon 1 cut: its first whole codon is at 62
    (70, ((1, 15), (55, 83))),   # at 71
    (90, ((36, 63),)),           # 35 bases of intron seen (>= min_intron): exon 2 after its
])                               # split codon's last base
def test_a_gene_cut_by_an_open_end_is_partial_and_its_mirror_too(cut, want):
    seq, cds = two_exon()
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    params = replace(SHORT, min_cds=27, partial_ends=True)
    s, ps = seq[cut:], p[cut:]
    (g,) = sd.decode(s, ps, params=params)
    assert (g.strand, g.cds, g.partial) == (1, want, (True, False))
    check_gene(s, g, min_cds=27)
    # the reverse complement: the same gene on the − strand, cut at its right end (its 5' end)
    L = len(s)
    (r,) = sd.decode(revcomp(s), rc_probs(ps), params=params)
    assert (r.strand, r.cds, r.partial) == (-1, tuple(sorted((L - e, L - a) for a, e in want)),
                                            (True, False))
    check_gene(revcomp(s), r, min_cds=27)
    # closed ends: no gene runs off them (what is left of this one is not a gene)
    assert all(x.partial == (False, False) for x in sd.decode(
        s, ps, params=replace(params, partial_ends=False)))
    assert sd.decode_many([("a", s)], {"a": ps}, params=params,
                          open_ends={"a": (False, True)}) == []


def test_a_gene_cut_at_its_3_end_keeps_its_whole_codons():
    seq, cds = two_exon()
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    params = replace(SHORT, min_cds=27, partial_ends=True)
    (g,) = sd.decode(seq[:140], p[:140], params=params)
    # exon 2's codons start at 126: 126..137 are whole, 138..139 are cut off
    assert (g.cds, g.partial) == (((50, 85), (125, 138)), (False, True))
    check_gene(seq[:140], g, min_cds=27)
    # a gene that ends with the sequence, its stop codon the last bases, is complete
    (g,) = sd.decode(seq[:153], p[:153], params=params)
    assert (g.cds, g.partial) == (tuple(cds), (False, False))
    (g,) = sd.decode(seq[50:], p[50:], params=params)  # and one that begins with its ATG
    assert (g.cds, g.partial) == (((0, 35), (75, 103)), (False, False))


def test_partial_genes_in_gff3_say_which_end_runs_off(tmp_path):
    seq, cds = two_exon()
    p = sd.oracle_probs(labels_for(len(seq), [(1, cds)]))
    s = seq[60:]
    params = replace(SHORT, min_cds=27, partial_ends=True)
    genes = sd.decode(s, p[60:], contig="x", params=params)
    L = len(s)
    genes += sd.decode(revcomp(s), rc_probs(p[60:]), contig="y", params=params)
    path = tmp_path / "genes.gff3"
    write_spliced_gff3(path, genes, {"x": L, "y": L})
    rows = [r.split("\t") for r in path.read_text().splitlines() if not r.startswith("#")]
    gene_rows = {r[0]: r for r in rows if r[2] == "gene"}
    assert "partial=true;start_range=.,3" in gene_rows["x"][8] and "end_range" not in gene_rows["x"][8]
    assert f"partial=true;end_range={L - 2},." in gene_rows["y"][8]
    assert all("partial=true" in r[8] for r in rows if r[2] in ("gene", "mRNA", "CDS"))
    assert {r[7] for r in rows if r[2] == "CDS"} <= {"0", "1", "2"}
    feats = read_features(path)
    for contig, g in (("x", genes[0]), ("y", genes[1])):
        (f,) = [f for f in feats[contig] if f.kind == "CDS"]
        assert tuple(sorted(f.parts)) == g.cds
        assert (f.attributes["partial5"], f.attributes["partial3"]) == (True, False)
