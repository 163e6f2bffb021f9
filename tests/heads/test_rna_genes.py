"""RNA genes from the sequence (ARAGORN tRNA/tmRNA, barrnap rRNA) against the GenBank annotation."""

from pathlib import Path

import pytest
from Bio import SeqIO

from genoctx.errors import InputError
from genoctx.heads import rna_genes
from genoctx.heads.decoder import GeneCall, RNACall

pytest.importorskip("pyaragorn")
pytest.importorskip("pybarrnap")

ECOLI = "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"
SLICE = 300_000  # holds the rrnH operon (16S, tRNA-Ile, tRNA-Ala, 23S, 5S) and three more tRNAs


def _revcomp(s: bytes) -> bytes:
    return s[::-1].translate(bytes.maketrans(b"ACGTN", b"TGCAN"))


@pytest.fixture(scope="module")
def ecoli_slice(data_root):
    from genoctx.io.annotation import read_features, read_sequences_genbank

    (contig, seq), = list(read_sequences_genbank(data_root / ECOLI))
    truth = sorted((f.kind, f.start, f.end, f.strand) for f in read_features(data_root / ECOLI)[contig]
                   if f.kind in ("tRNA", "rRNA", "tmRNA") and f.end <= SLICE)
    return contig, seq[:SLICE], truth


def test_trna_and_rrna_match_the_genbank_annotation(ecoli_slice):
    contig, seq, truth = ecoli_slice
    found = rna_genes.find_rna_genes([(contig, seq)])
    assert [t[0] for t in truth].count("tRNA") == 5 and [t[0] for t in truth].count("rRNA") == 3
    assert len(found) == len(truth)
    for (kind, lo, hi, strand), r in zip(truth, sorted(found, key=lambda r: (r.kind, r.start))):
        assert (r.kind, r.strand, r.contig) == (kind, strand, contig)
        slack = 0 if kind == "tRNA" else 10  # profile ends of rRNA differ by a few bases
        assert abs(r.start - lo) <= slack and abs(r.end - hi) <= slack, (r, lo, hi)
        assert r.attrs["inference"].startswith("ARAGORN" if kind == "tRNA" else "barrnap")
    products = {r.attrs["product"] for r in found}
    assert {"16S ribosomal RNA", "23S ribosomal RNA", "5S ribosomal RNA",
            "tRNA-Ile(gat)", "tRNA-Ala(tgc)"} <= products


def test_reverse_complement_gives_the_mirrored_genes(ecoli_slice):
    _, seq, _ = ecoli_slice
    part = seq[220_000:240_000]
    fwd = rna_genes.find_rna_genes([("x", part)])
    rev = rna_genes.find_rna_genes([("x", _revcomp(part))])
    n = len(part)
    mirrored = sorted((r.kind, n - r.end, n - r.start, -r.strand) for r in rev)
    got = sorted((r.kind, r.start, r.end, r.strand) for r in fwd)
    assert len(got) == len(mirrored) == 7  # 3 rRNAs, 4 tRNAs
    for a, b in zip(got, mirrored):
        assert a[0] == b[0] and a[3] == b[3] and abs(a[1] - b[1]) <= 3 and abs(a[2] - b[2]) <= 3


def test_trna_cut_by_a_contig_end_is_kept_inside_it_and_marked_partial(ecoli_slice, tmp_path,
                                                                       cli):
    """ARAGORN reports a tRNA that a linear contig cuts by one base whole, starting before the
    contig (tRNA-Ala of rrnH at 225,499-225,575); it comes out clipped and partial, and
    `genoctx annotate` writes it (it used to stop with "interval -1-75 lies outside contig")."""
    _, seq, _ = ecoli_slice
    part = seq[225_500:226_000]
    (trna,) = rna_genes.find_trna([("c", part)])
    assert (trna.start, trna.end, trna.strand) == (0, 75, 1)
    assert trna.attrs["partial"] == "true" and trna.attrs["product"] == "tRNA-Ala(tgc)"
    whole = rna_genes.find_trna([("c", seq[225_000:226_000])])
    assert next(r for r in whole if r.attrs["product"] == "tRNA-Ala(tgc)").end - 500 == 75
    fasta = tmp_path / "cut.fa"
    fasta.write_bytes(b">c\n" + part + b"\n")
    code, _, err = cli(["annotate", fasta, "--model", "none", "--formats", "gff3", "--out",
                        tmp_path / "cut", "--quiet"])
    assert code == 0, err
    rows = [ln.split("\t") for ln in (tmp_path / "cut.gff3").read_text().splitlines()
            if "\ttRNA\t" in ln]
    assert [(r[3], r[4]) for r in rows] == [("1", "75")] and "partial=true" in rows[0][8]
    # the cut end is named as for partial CDS (NCBI's start_range), on the gene row too
    assert trna.attrs["cut"] == (True, False)
    gene = [ln for ln in (tmp_path / "cut.gff3").read_text().splitlines()
            if "\tgene\t" in ln and "gene_biotype=tRNA" in ln]
    for row in (rows[0][8], gene[0].split("\t")[8]):
        assert "start_range=.,1" in row and "end_range" not in row
    code, _, err = cli(["annotate", fasta, "--model", "none", "--formats", "gbk", "--out",
                        tmp_path / "cut", "--quiet"])
    assert code == 0, err
    rec = SeqIO.read(tmp_path / "cut.gbk", "genbank")
    (feat,) = [f for f in rec.features if f.type == "tRNA"]
    assert str(feat.location) == "[<0:75](+)"


def test_several_records_with_any_names_and_empty_ones(ecoli_slice):
    _, seq, _ = ecoli_slice
    recs = [("a b|c", seq[223_000:230_000]), ("empty", b""), ("a b|c2", seq[236_000:238_000])]
    found = rna_genes.find_rna_genes(recs)
    assert {r.contig for r in found} == {"a b|c", "a b|c2"}
    assert sum(r.contig == "a b|c2" for r in found) == 1


def _rrna_key(calls):
    return [(r.contig, r.start, r.end, r.strand, r.attrs["product"], r.attrs.get("partial"))
            for r in calls]


def test_prefilter_finds_the_rrna_genes_of_a_search_over_every_base(ecoli_slice):
    """Barrnap over the prefilter's stretches (E-value cutoff scaled to the whole input) makes
    the calls of barrnap over every base: on the slice, and on it cut into 5-kb contigs, where
    contig ends cut the operon's genes into partial ones."""
    contig, seq, _ = ecoli_slice
    cut = [(f"c{a}", seq[a:a + 5000]) for a in range(0, len(seq), 5000)]
    for recs in ([(contig, seq)], cut):
        quick = rna_genes.find_rrna(recs)
        full = rna_genes.find_rrna(recs, prefilter=False)
        assert _rrna_key(quick) == _rrna_key(full) and len(full) >= 3
    assert any(r.attrs.get("partial") for r in rna_genes.find_rrna(cut))
    spans = rna_genes.rrna_regions([(contig, rna_genes.finder_sequence(seq))])
    searched = sum(hi - lo for _, lo, hi in spans)
    assert spans and searched < len(seq) / 4  # the operon and its flanks, not the slice


def test_rrna_searches_side_by_side_are_barrnaps_single_call(ecoli_slice):
    """One nhmmer search per (profile, stretch), threads at a time, each with its share of the
    E-value cutoff, gives the genes (and E-values) of ``pybarrnap.Barrnap`` over the same
    stretches in one call, whatever the number of threads; the cut contigs give partial genes."""
    import pybarrnap
    from Bio.Seq import Seq
    from Bio.SeqRecord import SeqRecord

    contig, seq, _ = ecoli_slice
    recs = [(f"c{a}", rna_genes.finder_sequence(seq[a:a + 5000]))
            for a in range(215_000, 240_000, 5000)] + [(contig, seq[223_000:230_000])]
    spans = [(i, 0, len(s)) for i, (_, s) in enumerate(recs)]
    seqs = [SeqRecord(Seq(recs[i][1][lo:hi].decode()), id=f"r{i}_{lo}", name=f"r{i}_{lo}")
            for i, lo, hi in spans]
    gff = pybarrnap.Barrnap(seqs, kingdom="bac", threads=1, quiet=True,
                            evalue=1e-6).run().get_gff_text()
    want = [ln.split("\t") for ln in gff.splitlines() if ln and not ln.startswith("#")]
    assert len(want) >= 6 and any("Note=aligned only" in r[8] for r in want)
    for threads in (1, 3):
        got = rna_genes._barrnap_hits(recs, spans, "bac", 1e-6, threads)
        rows = [rec.to_gff_line(rna_genes.RRNA_LENCUTOFF).split("\t") for rec, _ in got]
        assert sorted(r[:5] + r[6:] for r in rows) == sorted(r[:5] + r[6:] for r in want)
        for a, b in zip(sorted(rows), sorted(want)):  # E-values, as barrnap prints them
            assert float(a[5]) == pytest.approx(float(b[5]), rel=0.051)
    assert _rrna_key(rna_genes.find_rrna(recs, prefilter=False, threads=1)) == _rrna_key(
        rna_genes.find_rrna(recs, prefilter=False, threads=4))


def test_rrna_searches_side_by_side_are_as_many_as_the_memory_holds(ecoli_slice, monkeypatch):
    """A search holds up to RRNA_THREAD_BYTES: on a machine of many cores and little memory
    (or a cgroup's cap) fewer run at once; the cap once was a fixed 4 whatever the machine."""
    import concurrent.futures

    from genoctx.model import device

    have = device.available_memory()
    if Path("/proc/meminfo").exists():
        total = next(int(ln.split()[1]) * 1024
                     for ln in Path("/proc/meminfo").read_text().splitlines()
                     if ln.startswith("MemTotal:"))
        assert have is not None and 0 < have <= total
    monkeypatch.setattr(device, "available_memory", lambda: 3 * rna_genes.RRNA_THREAD_BYTES + 1)
    assert rna_genes.rrna_thread_cap() == 3
    monkeypatch.setattr(device, "available_memory", lambda: 1)
    assert rna_genes.rrna_thread_cap() == 1
    monkeypatch.setattr(device, "available_memory", lambda: None)
    assert rna_genes.rrna_thread_cap() == rna_genes.RRNA_MAX_THREADS

    contig, seq, _ = ecoli_slice
    recs = [(contig, rna_genes.finder_sequence(seq[215_000:225_000]))]
    spans = [(0, 0, 10_000)]
    want = rna_genes._barrnap_hits(recs, spans, "bac", 1e-6, 1)
    assert want

    def no_pool(*args, **kwargs):
        raise AssertionError("searches ran side by side beyond the memory's cap")

    monkeypatch.setattr(device, "available_memory", lambda: rna_genes.RRNA_THREAD_BYTES)
    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", no_pool)
    got = rna_genes._barrnap_hits(recs, spans, "bac", 1e-6, 8)
    assert [(r.query_name, r.start, r.end) for r, _ in got] == [
        (r.query_name, r.start, r.end) for r, _ in want]


def test_prefilter_regions_hold_the_genes_and_skip_sequence_without_them(ecoli_slice):
    """A stretch opens around each 16S/23S seed cluster and 5S hit, widened by the flank and
    clipped to the record; a record of coding sequence only gets none (and no calls)."""
    _, seq, _ = ecoli_slice
    operon = seq[223_000:230_000]
    recs = [("plain", seq[:20_000]), ("operon", operon), ("rc", _revcomp(operon))]
    spans = rna_genes.rrna_regions([(c, rna_genes.finder_sequence(s)) for c, s in recs])
    assert [(i, lo, hi) for i, lo, hi in spans] == [(1, 0, len(operon)), (2, 0, len(operon))]
    assert rna_genes.find_rrna([("plain", seq[:20_000])]) == []


def test_cds_calls_inside_rna_genes_are_dropped():
    rnas = [RNACall("c", 1000, 2500, 1, "rRNA", float("nan"))]
    genes = [GeneCall("c", 900, 1029, -1, 0.5, "ATG"),     # 29 bp overlap: kept
             GeneCall("c", 900, 1030, 1, 0.5, "ATG"),      # 30 bp: dropped
             GeneCall("c", 1500, 1800, -1, 0.5, "ATG"),    # inside: dropped
             GeneCall("d", 1500, 1800, 1, 0.5, "ATG")]     # other contig: kept
    kept = rna_genes.drop_cds_in_rna(genes, rnas)
    assert kept == [genes[0], genes[3]]


def test_cds_calls_overlapping_rna_genes_are_those_of_a_comparison_with_every_gene():
    """Only the RNA genes near a call are compared with it (by start, back to the longest RNA
    gene's length): a long gene that starts far before a call still drops it, and on random
    sets the calls kept are those of comparing every pair."""
    import random

    rnas = [RNACall("c", 0, 4000, 1, "rRNA", float("nan")),
            RNACall("c", 5000, 5080, -1, "tRNA", float("nan"))]
    genes = [GeneCall("c", 3900, 4500, 1, 0.5, "ATG"),    # 100 bp into the long gene
             GeneCall("c", 4100, 4990, 1, 0.5, "ATG"),    # between them: kept
             GeneCall("c", 5040, 6000, -1, 0.5, "ATG")]   # 40 bp into the tRNA
    assert rna_genes.drop_cds_in_rna(genes, rnas) == [genes[1]]
    rng = random.Random(7)
    for _ in range(50):
        rnas = [RNACall("c", s, s + rng.randint(70, 3000), 1, "rRNA", float("nan"))
                for s in (rng.randint(0, 20_000) for _ in range(rng.randint(1, 6)))]
        genes = [GeneCall("c", s, s + rng.randint(90, 2000), rng.choice((1, -1)), 0.5, "ATG")
                 for s in (rng.randint(0, 22_000) for _ in range(40))]
        for least in (30, 1, 0):
            every = [g for g in genes if not any(
                min(g.end, r.end) - max(g.start, r.start) >= least for r in rnas)]
            assert rna_genes.drop_cds_in_rna(genes, rnas, least) == every


def test_missing_package_is_a_clear_error(monkeypatch):
    import importlib

    real = importlib.import_module

    def fake(name, *a, **k):
        if name == "pyaragorn":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(InputError, match="pip install pyaragorn"):
        rna_genes.find_trna([("x", b"ACGT" * 100)])


def test_letters_the_finders_cannot_read_are_given_as_n(ecoli_slice):
    """ARAGORN never returns on letters such as X, E or '-' (masked, aligned or mistyped FASTA).
    The finders get them as N: the tRNAs of a stretch are still found, with a gap and strays
    in it; run in a child process so that a hang fails the test instead of stalling the suite."""
    import subprocess
    import sys

    assert rna_genes.finder_sequence(b"ACGTUacgtuNnXx-*.EqRy") == b"ACGTTacgttNNNNNNNNNNN"
    _, seq, _ = ecoli_slice
    part = seq[225_000:229_000] + b"X" * 50 + b"--EFQ*" + seq[229_000:236_000]
    code = ("import sys; from genoctx.heads.rna_genes import find_trna\n"
            "seq = sys.stdin.buffer.read()\n"
            "print(sorted((r.start, r.end, r.strand) for r in find_trna([('x', seq)])))")
    done = subprocess.run([sys.executable, "-c", code], input=part, capture_output=True, check=False,
                          timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    clean = seq[225_000:229_000] + b"N" * 56 + seq[229_000:236_000]
    want = sorted((r.start, r.end, r.strand) for r in rna_genes.find_trna([("x", clean)]))
    assert want and done.stdout.decode().strip() == str(want)


def test_finders_in_their_own_process_give_the_same_annotation(ecoli_slice):
    """call_bacterial with workers > 1 runs the RNA finders in a spawned process while genes
    are decoded: same genes, same RNA genes, same order."""
    from genoctx.heads.annotate import call_bacterial

    contig, seq, _ = ecoli_slice
    recs = [(contig, seq[200_000:260_000]), ("empty", b""), ("b", seq[:20_000])]
    one = call_bacterial(recs, procedure="single", workers=1)
    two = call_bacterial(recs, procedure="single", workers=2)
    assert one[1] and one[0]
    assert repr(two) == repr(one)  # RNA scores are NaN, which == never matches


def test_finders_run_in_turn_where_processes_cannot_be_pooled(ecoli_slice, monkeypatch):
    import concurrent.futures

    from genoctx.heads.annotate import call_bacterial

    contig, seq, _ = ecoli_slice
    recs = [(contig, seq[220_000:240_000])]
    want = call_bacterial(recs, procedure="single")

    def refuse(*args, **kwargs):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", refuse)
    assert repr(call_bacterial(recs, procedure="single", workers=2)) == repr(want)


@pytest.mark.parametrize("side", ["left", "right"])
def test_rrna_cut_by_a_sequence_end_is_marked_cut_though_its_hit_stops_short(ecoli_slice, side):
    """nhmmer's alignment of a cut gene stops short of the end that cuts it (6 and 30 bp for
    these 23S pieces); it was marked partial but not cut, so GFF3 had no start_range/end_range
    and GenBank no '<'/'>' (benchmarks/rna_edges.py measures the gaps)."""
    _, seq, _ = ecoli_slice
    piece = seq[226_500:230_000] if side == "left" else seq[222_000:227_500]
    hits = [r for r in rna_genes.find_rrna([("c", piece)])
            if r.attrs["product"].startswith("23S")]
    (hit,) = hits
    gap = hit.start if side == "left" else len(piece) - hit.end
    assert 0 < gap <= rna_genes.RRNA_EDGE_SLACK and hit.attrs["partial"] == "true"
    assert hit.attrs["cut"] == ((True, False) if side == "left" else (False, True))


def test_rrna_genes_name_the_bacterial_domain(ecoli_slice):
    """find_rrna scores a complete 16S gene (else a 23S) of each sequence with barrnap's
    archaeal and bacterial profiles of its kind: E. coli's scores about twice the bits with
    the bacterial one."""
    contig, seq, _ = ecoli_slice
    found = rna_genes.find_rrna([(contig, seq)])
    assert sorted(r.attrs["product"] for r in found) == [
        "16S ribosomal RNA", "23S ribosomal RNA", "5S ribosomal RNA"]
    scored = [r for r in found if "domain" in r.attrs]
    assert [r.attrs["product"] for r in scored] == ["16S ribosomal RNA"]
    only_23s = rna_genes.find_rrna([(contig, seq[:223_000]), ("b", seq[225_000:])])
    assert [(r.contig, r.attrs["product"]) for r in only_23s if "domain" in r.attrs] == [
        ("b", "23S ribosomal RNA")]  # "b" starts inside the 16S gene: its 23S is scored
    assert all("domain" not in r.attrs for r in found if r.attrs["product"].startswith("5S"))
    for r in scored:
        arc, bac = r.attrs["domain_bits"]
        assert r.attrs["domain"] == "bacteria" and bac > 1.5 * arc > 0, r
    assert rna_genes.rrna_domain(found) == "bacteria"
    plain = rna_genes.find_rrna([(contig, seq)], domains=False)  # where nothing reads it
    assert not any("domain" in r.attrs for r in plain)
    for r in found:
        r.attrs.pop("domain", None), r.attrs.pop("domain_bits", None)
    assert repr(plain) == repr(found)


def test_auto_profiles_are_the_bacterial_ones_for_a_bacterium_and_archaeal_for_an_archaeon(
        ecoli_slice, monkeypatch):
    """kingdom="auto" returns the bacterial profiles' genes where the rRNA genes name bacteria,
    and the archaeal profiles' (barrnap --kingdom arc) where they name archaea, keeping the
    domain on the gene that was named so that the decoder still reads it."""
    contig, seq, _ = ecoli_slice
    recs = [(contig, seq)]
    bac = rna_genes.find_rrna(recs, kingdom="bac")
    assert repr(rna_genes.find_rrna(recs, kingdom="auto")) == repr(bac)
    arc = rna_genes.find_rrna(recs, kingdom="arc")
    assert len(arc) == len(bac) and [r.start for r in arc] != [r.start for r in bac]
    assert not any("domain" in r.attrs for r in arc)
    monkeypatch.setattr(rna_genes, "rrna_domain",
                        lambda rnas: "archaea" if any("domain" in r.attrs for r in rnas)
                        else None)
    told = rna_genes.find_rrna(recs, kingdom="auto")
    assert [(r.start, r.end, r.strand) for r in told] == [(r.start, r.end, r.strand) for r in arc]
    (named,) = [r for r in told if "domain" in r.attrs]
    assert named.attrs["product"] == "16S ribosomal RNA"
    with pytest.raises(InputError, match="kingdom must be one of"):
        rna_genes.find_rrna(recs, kingdom="euk")


def test_the_domain_is_named_only_where_it_is_read(ecoli_slice, monkeypatch):
    """call_bacterial scores the rRNA genes' domain under domain="auto" (it chooses the ORF
    scorer and barrnap's profiles); a given domain leaves the search out."""
    from genoctx.heads import annotate
    from genoctx.heads.decoder import DecoderParams

    contig, seq, _ = ecoli_slice
    recs = [(contig, seq[220_000:232_000])]  # the rrnH operon
    marked = []  # complete 16S/23S genes handed to _mark_domains per call
    real = rna_genes._mark_domains
    monkeypatch.setattr(rna_genes, "_mark_domains", lambda w: marked.append(len(w)) or real(w))
    for kwargs, searched in (({}, [2]), ({"domain": "bacteria"}, []),
                             ({"domain": "archaea"}, []),
                             ({"params": DecoderParams(orf_scorer=False)}, [2])):
        marked.clear()
        annotate.call_bacterial(recs, procedure="single", workers=1, **kwargs)
        assert marked == searched, kwargs


def test_barrnaps_archaea_example_is_a_bacterium():
    """pybarrnap's example_data/archaea.fna holds Thermodesulfatator indicus (CP002683.1), a
    bacterium of the Thermodesulfobacteriota: its rRNA genes say so."""
    import pybarrnap

    from genoctx.io.fasta import iter_records

    path = Path(pybarrnap.__file__).parent / "example_data" / "archaea.fna"
    records = list(iter_records(path))
    assert "Thermodesulfatator indicus" in path.read_text()[:200]
    found = rna_genes.find_rrna(records)
    assert sum("domain" in r.attrs for r in found) == 1
    assert rna_genes.rrna_domain(found) == "bacteria"


@pytest.mark.parametrize("kingdom, domain", [("arc", "archaea"), ("bac", "bacteria")])
def test_each_domains_consensus_rrna_is_named_its_domain(kingdom, domain):
    """The consensus of each domain's 16S and 23S profile (barrnap's, built from Rfam's
    alignments of real genes) is named that domain."""
    for name in rna_genes.DOMAIN_PROFILES:
        bases = rna_genes._profiles(kingdom)[name].consensus.upper().replace("U", "T").encode()
        attrs = {}
        rna_genes._mark_domains([(attrs, name, bases, 0)])
        assert attrs["domain"] == domain, (name, attrs)


def test_domain_of_mixed_or_missing_rrna_is_none():
    def call(domain=None):
        return RNACall("c", 0, 1500, 1, "rRNA", float("nan"),
                       {"domain": domain} if domain else {})

    assert rna_genes.rrna_domain([]) is None
    assert rna_genes.rrna_domain([call()]) is None  # a 5S or a partial gene: not scored
    assert rna_genes.rrna_domain([call("archaea"), call("bacteria")]) is None
    assert rna_genes.rrna_domain([call("archaea"), call("archaea"), call()]) == "archaea"


@pytest.mark.parametrize("workers", [1, 2])
def test_an_archaeon_is_decoded_without_the_orf_scorer(ecoli_slice, monkeypatch, workers):
    """rRNA genes that name archaea turn off the ORF scorer (fitted on bacteria), whether the
    finders ran before the decoder or beside it; --no-orf-scorer stays as it is."""
    from genoctx.heads import annotate
    from genoctx.heads.decoder import DecoderParams, call_genes_multi

    contig, seq, _ = ecoli_slice
    recs = [(contig, seq[200_000:260_000])]
    bacterial, found = annotate.call_bacterial(recs, procedure="single", workers=workers)
    no_scorer = DecoderParams(orf_scorer=False)
    without = rna_genes.drop_cds_in_rna(call_genes_multi(recs, params=no_scorer,
                                                         procedure="single"), found)
    assert repr(without) != repr(bacterial)  # the scorer changes calls here
    monkeypatch.setattr(rna_genes, "rrna_domain", lambda rnas: "archaea")
    archaeal, _ = annotate.call_bacterial(recs, procedure="single", workers=workers)
    assert repr(archaeal) == repr(without)
    decoded = []
    real = annotate.call_genes_multi
    monkeypatch.setattr(annotate, "call_genes_multi",
                        lambda *a, **k: decoded.append(k["params"]) or real(*a, **k))
    annotate.call_bacterial(recs, procedure="single", params=no_scorer, workers=workers)
    assert decoded == [no_scorer]  # decoded once, as asked


def test_a_given_domain_overrides_the_rrna_genes(ecoli_slice, monkeypatch, workers=2):
    """domain="archaea" decodes once without the ORF scorer whatever the rRNA genes say;
    domain="bacteria" keeps the scorer even where they name archaea (a shard of a genome
    whose domain was named from its other contigs). The RNA finders run in a process beside
    the decoder (workers=2); test_the_domain_is_named_only_where_it_is_read runs them in turn."""
    from genoctx.heads import annotate
    from genoctx.heads.decoder import DecoderParams

    contig, seq, _ = ecoli_slice
    recs = [(contig, seq[200_000:260_000])]
    bacterial, _ = annotate.call_bacterial(recs, procedure="single", workers=workers)
    without, _ = annotate.call_bacterial(recs, procedure="single", workers=workers,
                                         params=DecoderParams(orf_scorer=False))
    assert repr(without) != repr(bacterial)
    decoded = []
    real = annotate.call_genes_multi
    monkeypatch.setattr(annotate, "call_genes_multi",
                        lambda *a, **k: decoded.append(k["params"].orf_scorer) or real(*a, **k))
    archaeal, _ = annotate.call_bacterial(recs, procedure="single", workers=workers,
                                          domain="archaea")  # its rRNA genes: bacterial
    assert repr(archaeal) == repr(without) and decoded == [False]
    monkeypatch.setattr(rna_genes, "rrna_domain", lambda rnas: "archaea")
    decoded.clear()
    told, _ = annotate.call_bacterial(recs, procedure="single", workers=workers,
                                      domain="bacteria")
    assert repr(told) == repr(bacterial) and decoded == [True]
    with pytest.raises(InputError, match="domain must be one of"):
        annotate.call_bacterial(recs, domain="eukaryota")


def test_annotate_says_when_it_leaves_the_scorer_out(ecoli_slice, monkeypatch, tmp_path):
    from genoctx.heads.annotate import annotate_fasta

    contig, seq, _ = ecoli_slice
    fasta = tmp_path / "g.fa"
    fasta.write_bytes(b">" + contig.encode() + b"\n" + seq[200_000:250_000] + b"\n")
    notes = []
    annotate_fasta(fasta, model=None, note=notes.append, procedure="single")
    assert not any("archaeal" in n for n in notes)
    monkeypatch.setattr(rna_genes, "rrna_domain", lambda rnas: "archaea")
    annotate_fasta(fasta, model=None, note=notes.append, procedure="single")
    assert any("rRNA genes are archaeal" in n and "without the ORF scorer" in n for n in notes)
    notes.clear()
    annotate_fasta(fasta, model=None, note=notes.append, procedure="single", orf_scorer=False)
    assert not any("archaeal" in n for n in notes)  # asked for: nothing to say
    annotate_fasta(fasta, model=None, note=notes.append, procedure="single", domain="archaea")
    assert not any("archaeal" in n for n in notes)  # told: nothing to say
