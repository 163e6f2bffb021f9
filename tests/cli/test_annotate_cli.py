"""`genoctx annotate` end to end on the shipped example with the embedded model."""

import gzip
import json
import re
import shutil
from itertools import pairwise
from pathlib import Path

import numpy as np
import pysam
import pytest

from genoctx.eval.metrics import gene_metrics
from genoctx.io.annotation import read_genes
from genoctx.io.writers import read_gff3_genes


@pytest.fixture(scope="module")
def annotated(tmp_path_factory, example_fasta):
    from genoctx.cli.app import run

    out = tmp_path_factory.mktemp("ann")
    assert run(["annotate", str(example_fasta), "--out", str(out / "p"), "--quiet"]) == 0
    return out


def test_gff3_is_valid_and_matches_the_genbank_genes(annotated, example_genbank):
    text = (annotated / "p.gff3").read_text()
    lines = text.splitlines()
    assert lines[0] == "##gff-version 3"
    assert any(line.startswith("##sequence-region ") and line.endswith(" 1 9609") for line in lines)
    rows = [line.split("\t") for line in lines if not line.startswith("#")]
    assert all(len(r) == 9 and r[1] == "genoctx" for r in rows)
    ids = {a.split("=", 1)[1] for r in rows for a in r[8].split(";") if a.startswith("ID=")}
    parents = [a.split("=", 1)[1] for r in rows if r[2] == "CDS"
               for a in r[8].split(";") if a.startswith("Parent=")]
    assert parents and all(p in ids for p in parents)
    assert all(0.0 <= float(r[5]) <= 1.0 for r in rows)
    calls = read_gff3_genes(annotated / "p.gff3")
    truth = read_genes(example_genbank)
    contig = truth[0].contig
    m = gene_metrics([c.__class__(**{**c.__dict__, "contig": contig}) for c in calls], truth)
    assert m.sensitivity >= 0.8 and m.precision >= 0.8, m


def test_bed_and_bedgraph_are_readable(annotated, tmp_path):
    bed = tmp_path / "p.bed"
    shutil.copy(annotated / "p.bed", bed)
    pysam.tabix_index(str(bed), preset="bed", force=True)
    with pysam.TabixFile(str(bed) + ".gz") as tbx:
        contig = tbx.contigs[0]
        assert len(list(tbx.fetch(contig))) >= 5
    for name in ("CDS_plus", "CDS_minus", "RNA"):
        lines = (annotated / f"p.{name}.bedgraph").read_text().splitlines()
        assert lines[0].startswith("track type=bedGraph")
        prev_end = 0
        for line in lines[1:]:
            c, s, e, v = line.split("\t")
            assert int(s) == prev_end and int(e) > int(s) and 0.0 <= float(v) <= 1.0
            prev_end = int(e)
        assert prev_end == 9609


def test_bigwig_tracks_hold_the_bedgraph_values(annotated, example_fasta, tmp_path, cli):
    pyBigWig = pytest.importorskip("pyBigWig")
    code, _, _ = cli(["annotate", example_fasta, "--out", tmp_path / "b", "--quiet",
                      "--formats", "bigwig"])
    assert code == 0 and not list(tmp_path.glob("b.*.bedgraph"))
    for name in ("CDS_plus", "CDS_minus", "RNA"):
        rows = [line.split("\t") for line in
                (annotated / f"p.{name}.bedgraph").read_text().splitlines()[1:]]
        bw = pyBigWig.open(str(tmp_path / f"b.{name}.bw"))
        (contig, length), = bw.chroms().items()
        assert length == 9609 and contig == rows[0][0]
        got = np.array(bw.values(contig, 0, length), dtype=np.float64)
        bw.close()
        want = np.full(length, np.nan)
        for r in rows:
            want[int(r[1]):int(r[2])] = float(r[3])
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert np.allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=0, atol=1e-6)


def test_same_bytes_on_every_run(annotated, example_fasta, tmp_path, cli):
    code, _, _ = cli(["annotate", example_fasta, "--out", tmp_path / "q", "--quiet",
                      "--formats", "gff3,bed"])
    assert code == 0
    for ext in ("gff3", "bed"):
        assert (tmp_path / f"q.{ext}").read_bytes() == (annotated / f"p.{ext}").read_bytes()


def test_region_coordinates_stay_on_the_contig(example_fasta, tmp_path, cli):
    code, _, _ = cli(["annotate", example_fasta, "--region", "gi|45478711|ref|NC_005816.1|:2,001-9,609",
                      "--out", tmp_path / "r", "--quiet", "--formats", "gff3", "--model", "none"])
    assert code == 0
    calls = read_gff3_genes(tmp_path / "r.gff3")
    assert calls and all(c.start >= 2000 and c.end <= 9609 for c in calls)


@pytest.mark.parametrize("args, message", [
    (["missing.fa"], "missing.fa"),
    (["{fa}", "--formats", "gtf"], "unknown format"),
    (["{fa}", "--region", "nope:1-10"], "nope"),
    (["{fa}", "--model", "{tmp}/no_such_model"], "not found"),
    (["{fa}", "--context", "100"], "--context must be at least 256"),
    (["{fa}", "--context", "4194304"], "at most 1,048,576"),
    (["{fa}", "--context", "1024", "--overlap", "1023"], "context - 1"),
    (["{fa}", "--context", "256", "--overlap", "200"], "more than half"),
    (["{fa}", "--batch-size", "0"], "--batch-size must be at least 1"),
    (["{fa}", "--mode", "eukaryote", "-g", "4"], "--translation-table is for prokaryote"),
    (["{fa}", "-r", "{ctg}:1-5000", "-r", "{ctg}:4001-9000"], "overlap"),
    (["{fa}", "-r", "{ctg}:1-5000", "-r", "{ctg}:1-5000"], "overlap"),
])
def test_bad_input_fails_cleanly(args, message, example_fasta, tmp_path, cli):
    argv = ["annotate"] + [a.format(fa=example_fasta, tmp=tmp_path, ctg=CONTIG) for a in args]
    code, out, err = cli(argv + ["--out", str(tmp_path / "x"), "--quiet"])
    assert code != 0
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not list(tmp_path.glob("x*")) and not list(tmp_path.glob(".x*"))


CONTIG = "gi|45478711|ref|NC_005816.1|"


def test_output_prefix_keeps_accession_dots_and_goes_inside_folders(example_fasta, tmp_path,
                                                                    cli, monkeypatch):
    """The default prefix drops the sequence extension only (NCBI names hold dots: two
    assembly versions must not overwrite each other), and a folder given as --out (or '.')
    gets the files inside it under that name."""
    monkeypatch.chdir(tmp_path)
    for version in ("2", "3"):
        fa = tmp_path / f"GCF_000005845.{version}_ASM584v{version}_genomic.fna.gz"
        with gzip.open(fa, "wb") as fh:
            fh.write(example_fasta.read_bytes())
        code, _, err = cli(["annotate", fa.name, "--model", "none", "--formats", "gff3", "-q"])
        assert code == 0, err
        assert (tmp_path / f"GCF_000005845.{version}_ASM584v{version}_genomic.gff3").exists()
    (tmp_path / "results").mkdir()
    for out, where in (("results", tmp_path / "results"), (".", tmp_path)):
        code, _, err = cli(["annotate", example_fasta, "--model", "none", "--formats", "bed",
                            "-q", "--out", out])
        assert code == 0, err
        assert (where / "Yersinia_pestis_pPCP1_NC_005816.bed").exists()


def test_output_prefix_that_cannot_be_written_fails_before_any_work(example_fasta, tmp_path, cli,
                                                                    monkeypatch):
    from genoctx.heads import annotate

    def never(*args, **kwargs):
        raise AssertionError("annotated before the output prefix was checked")

    monkeypatch.setattr(annotate, "annotate_fasta", never)
    (tmp_path / "afile").write_text("not a folder")
    code, _, err = cli(["annotate", example_fasta, "--model", "none", "-q",
                        "--out", tmp_path / "afile" / "sub" / "x"])
    assert code == 2 and "is a file, not a folder" in err and "Traceback" not in err


def test_an_output_name_taken_by_a_folder_fails_before_any_work(example_fasta, tmp_path, cli,
                                                                 monkeypatch):
    from genoctx.heads import annotate

    def never(*args, **kwargs):
        raise AssertionError("annotated before the output names were checked")

    monkeypatch.setattr(annotate, "annotate_fasta", never)
    (tmp_path / "x.CDS_minus.bedgraph").mkdir()
    code, _, err = cli(["annotate", example_fasta, "-q", "--out", tmp_path / "x"])
    assert code == 2 and "x.CDS_minus.bedgraph: it is a folder" in err
    assert "Traceback" not in err


def test_a_run_that_fails_while_writing_leaves_the_earlier_outputs_whole(example_fasta, tmp_path,
                                                                        cli, monkeypatch):
    """All of PREFIX.* is replaced together: a run that fails after writing its GFF3 (here the
    BED writer fails, as a full disk would) leaves the earlier run's GFF3 and BED as they were,
    and no temporary files."""
    import errno

    from genoctx.io import writers

    argv = ["annotate", example_fasta, "--model", "none", "-q", "--formats", "gff3,bed",
            "--out", tmp_path / "x"]
    code, _, err = cli(argv)
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert sorted(before) == ["x.bed", "x.gff3"]

    def full(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(writers, "write_bed", full)
    code, _, err = cli(argv + ["--locus-tag", "NEW"])  # a run whose GFF3 would differ
    assert code == 2 and "No space left on device" in err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_checkpoint_without_decoder_json_calls_genes_from_the_sequence(example_fasta,
                                                                         tmp_path, cli):
    """A `genoctx train` export has no decoder.json: its genes are the sequence statistics'
    (neural weights 0, as the shipped checkpoint chose), not none at all."""
    import shutil

    from genoctx.heads.annotate import decoder_params
    from genoctx.heads.decoder import FEATURES, START_PARTS
    from genoctx.model.checkpoint import embedded_dir

    export = tmp_path / "export"
    shutil.copytree(embedded_dir(), export, ignore=shutil.ignore_patterns("decoder.json"))
    params = decoder_params(export)
    assert params.gene_weights[FEATURES.index("neural_per_codon")] == 0.0
    assert params.start_weights[START_PARTS.index("neural")] == 0.0
    genes = {}
    for name, model in (("mine", export), ("shipped", "embedded")):
        code, _, err = cli(["annotate", example_fasta, "--model", model, "--formats", "bed",
                            "-q", "--out", tmp_path / name])
        assert code == 0, err
        genes[name] = (tmp_path / f"{name}.bed").read_text()
    assert genes["mine"] == genes["shipped"] and genes["mine"].count("\n") >= 5


def test_ctrl_c_says_interrupted_and_exits_130(example_fasta, tmp_path, cli, monkeypatch):
    from genoctx.heads import annotate

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(annotate, "annotate_fasta", interrupted)
    code, _, err = cli(["annotate", example_fasta, "-q", "--out", tmp_path / "x"])
    assert code == 130 and err.strip() == "genoctx: interrupted"
    assert not list(tmp_path.iterdir())


def test_os_errors_while_writing_are_one_line_not_a_traceback(example_fasta, tmp_path, cli,
                                                              monkeypatch):
    import errno

    from genoctx.heads import annotate

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x.gff3"))

    monkeypatch.setattr(annotate, "write_annotation", full)
    code, _, err = cli(["annotate", example_fasta, "--model", "none", "-q", "--out",
                        tmp_path / "x"])
    assert code == 2 and "Traceback" not in err
    assert err.strip() == f"genoctx: error: No space left on device: {tmp_path / 'x.gff3'}"


def test_regions_in_any_order_give_sorted_outputs(example_fasta, tmp_path, cli):
    """Regions given out of order are annotated and written in sequence order: the same bytes
    as in order, so the bedGraph stays sorted (bedGraphToBigWig and tabix need it)."""
    runs = {}
    for name, regions in (("in", ["1-3000", "6001-9000"]), ("out", ["6001-9000", "1-3000"])):
        argv = ["annotate", example_fasta, "-q", "--formats", "gff3,bedgraph", "--out",
                tmp_path / name]
        for r in regions:
            argv += ["-r", f"{CONTIG}:{r}"]
        code, _, err = cli(argv)
        assert code == 0, err
        runs[name] = {p.name.split(".", 1)[1]: p.read_bytes()
                      for p in sorted(tmp_path.glob(f"{name}.*"))}
    assert runs["in"] == runs["out"] and len(runs["in"]) > 2
    starts = [int(ln.split()[1]) for ln in runs["out"]["CDS_plus.bedgraph"].decode().splitlines()
              if not ln.startswith("track")]
    assert starts == sorted(starts)


def test_genes_cut_by_a_region_edge_name_no_start_codon(example_fasta, tmp_path, cli):
    code, _, err = cli(["annotate", example_fasta, "--model", "none", "-q", "--formats", "gff3",
                        "-r", f"{CONTIG}:1000-5000", "--out", tmp_path / "p"])
    assert code == 0, err
    cds = [ln.split("\t") for ln in (tmp_path / "p.gff3").read_text().splitlines()
           if "\tCDS\t" in ln]
    cut5 = [r for r in cds if ("start_range" if r[6] == "+" else "end_range") in r[8]]
    whole = [r for r in cds if "partial" not in r[8]]
    assert cut5 and whole
    assert all("start_codon=" not in r[8] for r in cut5)
    assert all(re.search(r"start_codon=[ACGT]TG(;|$)", r[8]) for r in whole)


def test_gzipped_input(example_fasta, tmp_path, cli):
    gz = tmp_path / "p.fa.gz"
    with gzip.open(gz, "wb") as fh:
        fh.write(example_fasta.read_bytes())
    code, _, _ = cli(["annotate", gz, "--out", tmp_path / "g", "--quiet", "--formats", "gff3",
                      "--model", "none"])
    assert code == 0 and "\tCDS\t" in (tmp_path / "g.gff3").read_text()


# ------------------------------------------------------------------ eukaryote mode (spliced genes)

STOPS = {"TAA", "TAG", "TGA"}


def _revcomp(s: str) -> str:
    return s[::-1].translate(str.maketrans("ACGTN", "TGCAN"))


def _gff_genes(path):
    """{gene ID: (strand, [(start0, end) CDS parts], [(start0, end) exons], [phases])} from an
    independent reading of the GFF3 rows (gene → mRNA → exon/CDS)."""
    rows = [line.split("\t") for line in path.read_text().splitlines() if not line.startswith("#")]
    attrs = [dict(kv.split("=", 1) for kv in r[8].split(";")) for r in rows]
    mrna_of = {a["ID"]: a["Parent"] for r, a in zip(rows, attrs) if r[2] == "mRNA"}
    genes = {a["ID"]: (r[6], [], [], []) for r, a in zip(rows, attrs) if r[2] == "gene"}
    for r, a in zip(rows, attrs):
        if r[2] in ("CDS", "exon"):
            g = genes[mrna_of[a["Parent"]]]
            assert r[6] == g[0]
            part = (int(r[3]) - 1, int(r[4]))
            if r[2] == "CDS":
                g[1].append(part)
                g[3].append(int(r[7]))
            else:
                g[2].append(part)
    return genes


@pytest.fixture(scope="module")
def worm(data_root, tmp_path_factory):
    """The first 30 kb of the C. elegans chunk (validation role: scored here, never trained on)."""
    from genoctx.io.fasta import iter_records

    name, seq = next(iter_records(data_root / "genomes/eukaryote_chunks/C.elegans.fa.gz"))
    d = tmp_path_factory.mktemp("worm")
    fa = d / "worm.fa"
    fa.write_text(f">{name}\n{seq[:30_000].decode()}\n")
    return fa, name, seq[:30_000].decode().upper()


def _gff_partial(path) -> dict[str, tuple[bool, bool]]:
    """{gene ID: (5', 3') partial} from the gene rows' NCBI ranges."""
    out = {}
    for line in path.read_text().splitlines():
        r = line.split("\t")
        if line.startswith("#") or r[2] != "gene":
            continue
        a = dict(kv.split("=", 1) for kv in r[8].split(";"))
        left, right = "start_range" in a, "end_range" in a
        assert (left or right) == (a.get("partial") == "true")
        out[a["ID"]] = (left, right) if r[6] == "+" else (right, left)
    return out


def test_eukaryote_mode_writes_valid_spliced_genes(worm, tmp_path, cli):
    fa, name, seq = worm
    code, _, _ = cli(["annotate", fa, "--mode", "eukaryote", "--out", tmp_path / "w", "--quiet"])
    assert code == 0
    genes = _gff_genes(tmp_path / "w.gff3")
    partial = _gff_partial(tmp_path / "w.gff3")
    assert genes, "no gene decoded on 30 kb of C. elegans"
    spliced = 0
    for gid, (strand, cds, exons, phases) in genes.items():
        assert cds == exons  # no UTRs are decoded: each exon is its CDS part
        assert all(a < b for a, b in cds) and all(x[1] < y[0] for x, y in pairwise(cds))
        mrna = "".join(seq[a:b] for a, b in cds)
        introns = [seq[x[1]:y[0]] for x, y in pairwise(cds)]
        if strand == "-":
            mrna, introns = _revcomp(mrna), [_revcomp(i) for i in introns]
        # a gene running off the record's end (partial there) holds whole codons only
        p5, p3 = partial[gid]
        assert len(mrna) % 3 == 0 and (p5 or mrna[:3] == "ATG") and (p3 != (mrna[-3:] in STOPS))
        assert not STOPS & {mrna[i:i + 3] for i in range(0, len(mrna) - 3, 3)}
        assert all(i[:2] == "GT" and i[-2:] == "AG" for i in introns)
        spliced += len(introns) > 0
        # GFF3 phase: bases to skip at each part's 5' end, counted along the transcript
        order = list(range(len(cds))) if strand == "+" else list(range(len(cds)))[::-1]
        done = 0
        for i in order:
            assert phases[i] == (3 - done % 3) % 3
            done += cds[i][1] - cds[i][0]
    assert spliced > 0
    # BED12 holds the same genes: blocks = CDS parts; tabix can index it
    bed = tmp_path / "w.bed"
    got = []
    for line in bed.read_text().splitlines():
        c, s, e, _gid, score, st, ts, te, _rgb, n, sizes, starts = line.split("\t")
        assert c == name and (ts, te) == (s, e) and 0 <= int(score) <= 1000
        sz = [int(x) for x in sizes.rstrip(",").split(",")]
        of = [int(x) for x in starts.rstrip(",").split(",")]
        assert len(sz) == int(n) and of[0] == 0 and int(s) + of[-1] + sz[-1] == int(e)
        got.append((st, [(int(s) + o, int(s) + o + z) for o, z in zip(of, sz)]))
    assert sorted(got) == sorted((g[0], g[1]) for g in genes.values())
    pysam.tabix_index(str(bed), preset="bed", force=True)
    assert (tmp_path / "w.intron.bedgraph").read_text().startswith("track type=bedGraph")
    # GenBank: nuclear genes in the standard code (it said 11, the bacterial one, on every CDS)
    from Bio import SeqIO

    assert cli(["annotate", fa, "--mode", "eukaryote", "--out", tmp_path / "g", "--quiet",
                "--formats", "gbk"])[0] == 0
    cds = [f for f in SeqIO.read(tmp_path / "g.gbk", "genbank").features if f.type == "CDS"]
    assert len(cds) == len(genes) and {f.qualifiers["transl_table"][0] for f in cds} == {"1"}
    # genes lie whole inside the record unless --open-ends; the record is the first 30 kb of a
    # chromosome, and with open ends a gene runs off its end, kept partial
    assert not any(p5 or p3 for p5, p3 in partial.values())
    assert cli(["annotate", fa, "--mode", "eukaryote", "--out", tmp_path / "o", "--quiet",
                "--formats", "gff3", "--open-ends"])[0] == 0
    opened = _gff_partial(tmp_path / "o.gff3")
    assert any(p5 or p3 for p5, p3 in opened.values())
    for gid, (strand, cds, _, _) in _gff_genes(tmp_path / "o.gff3").items():
        mrna = "".join(seq[a:b] for a, b in cds)
        mrna = _revcomp(mrna) if strand == "-" else mrna
        p5, p3 = opened[gid]
        assert len(mrna) % 3 == 0 and (p5 or mrna[:3] == "ATG") and (p3 != (mrna[-3:] in STOPS))


def test_eukaryote_region_gives_the_whole_sequence_genes_inside_it(worm, tmp_path, cli):
    """A region is decoded with up to 20 kb of its record on each side (here: all 30 kb), so
    its genes are the whole record's genes inside it, on the contig's coordinates; a gene
    across its edge is left out with a note. Decoded alone, the spliced decoder refitted such
    genes inside the region (made-up complete genes: an 8-bp first exon at its edge)."""
    fa, name, _ = worm
    code, _, err = cli(["annotate", fa, "--mode", "eukaryote", "--region",
                        f"{name}:10,001-20,000", "--out", tmp_path / "r", "--formats", "gff3"])
    assert code == 0, err
    assert cli(["annotate", fa, "--mode", "eukaryote", "--out", tmp_path / "w", "--quiet",
                "--formats", "gff3"])[0] == 0
    region = sorted((g[0], g[1]) for g in _gff_genes(tmp_path / "r.gff3").values())
    whole = sorted((g[0], g[1]) for g in _gff_genes(tmp_path / "w.gff3").values())
    inside = [g for g in whole if 10_000 <= g[1][0][0] and g[1][-1][1] <= 20_000]
    across = [g for g in whole if g not in inside and g[1][0][0] < 20_000
              and 10_000 < g[1][-1][1]]
    assert region == inside and len(inside) >= 3
    assert across and f"note: {len(across)} gene(s) cross the edge of a region" in err


@pytest.mark.parametrize("args, message", [
    (["--mode", "eukaryote", "--model", "none"], "needs a model"),
    (["--mode", "archaea"], "mode must be one of"),
    (["--rna", "model", "--model", "none"], "needs a model"),
    (["--rna", "infernal"], "rna must be one of"),
    (["--domain", "eukaryota"], "domain must be one of"),
    (["--mode", "eukaryote", "--domain", "archaea"], "--domain is for prokaryote mode"),
    (["--procedure", "metagenome"], "procedure must be one of"),
    (["--translation-table", "5"], "translation table must be one of"),
    (["--threads", "-1"], "--threads must be 0"),
    (["--formats", "bed", "--gff3-fasta"], "add gff3 to --formats"),
    (["--mode", "eukaryote", "--no-orf-scorer"], "--no-orf-scorer is for prokaryote mode"),
    (["--min-score", "1"], "--min-score is a probability in [0, 1)"),
    (["--min-score=-0.1"], "--min-score is a probability in [0, 1)"),
    (["--mode", "eukaryote", "--min-score", "0.5"], "--min-score is for prokaryote mode"),
    (["--mode", "eukaryote", "--circular-declared"], "--circular-declared are for bacterial"),
    (["--mode", "eukaryote", "--closed", "-p", "meta"], "--procedure: for prokaryote"),
    (["--open-ends"], "--open-ends is for eukaryote mode"),
    (["--mode", "eukaryote", "--open-ends", "--closed"], "not with --closed"),
    (["--mode", "eukaryote", "--rna", "tools"], "--rna tools: for prokaryote mode"),
])
def test_mode_and_rna_option_errors(args, message, example_fasta, tmp_path, cli):
    code, _, err = cli(["annotate", example_fasta, *args, "--out", tmp_path / "x", "--quiet"])
    assert code != 0 and message in err and "Traceback" not in err
    assert not list(tmp_path.glob("x*"))


def test_procedure_names_the_bank_model_or_self_trains(annotated, example_fasta, tmp_path, cli):
    """A 9.6-kb plasmid alone is under the auto limit: its genes come from a bank model, named
    on every CDS row; --procedure single self-trains on it and names none."""
    from genoctx.heads.meta_models import default_bank

    names = {m.name for m in default_bank()}
    rows = [r.split("\t") for r in (annotated / "p.gff3").read_text().splitlines()
            if r and not r.startswith("#")]
    cds = [dict(a.split("=", 1) for a in r[8].split(";")) for r in rows if r[2] == "CDS"]
    assert cds and all(a.get("bank_model") in names for a in cds)
    code, _, err = cli(["annotate", example_fasta, "--model", "none", "--procedure", "single",
                        "--formats", "gff3", "--out", tmp_path / "s", "--quiet"])
    assert code == 0, err
    text = (tmp_path / "s.gff3").read_text()
    assert "\tCDS\t" in text and "bank_model=" not in text
    code, _, err = cli(["annotate", example_fasta, "--model", "none", "--formats", "gff3",
                        "--out", tmp_path / "m"])
    assert code == 0 and "pre-trained decoder model(s) " in err, err


def test_no_orf_scorer_decodes_from_the_genome_alone(annotated, example_fasta, tmp_path, cli):
    """--no-orf-scorer writes the calls of the decoder without the cross-genome ORF scorer; on
    pPCP1 the scorer takes out one of them, so the two runs differ by that gene."""
    from genoctx.heads.annotate import call_bacterial
    from genoctx.heads.decoder import DecoderParams
    from genoctx.io.fasta import iter_records

    def stops(gff3):
        rows = [r.split("\t") for r in gff3.read_text().splitlines()
                if r and not r.startswith("#")]
        return {(r[0], r[6], int(r[4]) if r[6] == "+" else int(r[3]) - 1)
                for r in rows if r[2] == "CDS"}

    code, _, err = cli(["annotate", example_fasta, "--model", "none", "--no-orf-scorer",
                        "--formats", "gff3", "--out", tmp_path / "n", "--quiet"])
    assert code == 0, err
    genes, _ = call_bacterial(list(iter_records(example_fasta)),
                              params=DecoderParams(orf_scorer=False))
    want = {(g.contig, "+" if g.strand == 1 else "-", g.end if g.strand == 1 else g.start)
            for g in genes}
    got = stops(tmp_path / "n.gff3")
    assert got == want
    assert len(got - stops(annotated / "p.gff3")) == 1


def test_min_score_leaves_out_the_weaker_calls(example_fasta, tmp_path, cli):
    """--min-score P writes the calls of probability >= P (the GFF3 score) and nothing else
    changes: the same genes, RNA genes and IDs' order as without it, less the weak ones."""
    def rows(gff3):
        return [r.split("\t") for r in gff3.read_text().splitlines()
                if r and not r.startswith("#")]

    code, _, err = cli(["annotate", example_fasta, "--model", "none", "--formats", "gff3",
                        "--out", tmp_path / "all", "--quiet"])
    assert code == 0, err
    everything = rows(tmp_path / "all.gff3")
    scores = sorted(float(r[5]) for r in everything if r[2] == "CDS")
    cut = round((scores[0] + scores[1]) / 2, 6)  # between the two weakest (as written, rounded)
    assert scores[0] < cut < scores[1]
    code, _, err = cli(["annotate", example_fasta, "--model", "none", "--formats", "gff3",
                        "--out", tmp_path / "some", "--quiet", "--min-score", str(cut)])
    assert code == 0, err
    kept = rows(tmp_path / "some.gff3")
    cds = [r for r in kept if r[2] == "CDS"]
    assert cds and all(float(r[5]) >= cut for r in cds)
    # the rows less their attributes (IDs are renumbered)
    want = [r[:8] for r in everything if r[2] not in ("gene", "CDS") or float(r[5]) >= cut]
    assert [r[:8] for r in kept] == want
    assert len(cds) == sum(s >= cut for s in scores) < len(scores)


# ------------------------------------------------------------------ RNA genes (--rna)

@pytest.fixture(scope="module")
def ecoli_rrnh(data_root, tmp_path_factory):
    """E. coli K-12 220-240 kb (train genome): the rrnH operon and four tRNAs."""
    from genoctx.io.annotation import read_sequences_genbank

    (contig, seq), = list(read_sequences_genbank(
        data_root / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"))
    fa = tmp_path_factory.mktemp("rrnh") / "rrnh.fa"
    fa.write_text(f">{contig}\n{seq[220_000:240_000].decode()}\n")
    return fa


def test_rna_genes_from_the_sequence_finders(ecoli_rrnh, tmp_path, cli):
    pytest.importorskip("pyaragorn")
    pytest.importorskip("pybarrnap")
    code, _, _ = cli(["annotate", ecoli_rrnh, "--model", "none", "--rna", "tools",
                      "--out", tmp_path / "t", "--quiet", "--formats", "gff3,bed,gbk,faa"])
    assert code == 0
    rows = [line.split("\t") for line in (tmp_path / "t.gff3").read_text().splitlines()
            if not line.startswith("#")]
    rna = [r for r in rows if r[2] in ("tRNA", "rRNA", "tmRNA")]
    assert sorted(r[2] for r in rna) == ["rRNA"] * 3 + ["tRNA"] * 4
    assert all("product=" in r[8] and "inference=" in r[8] for r in rna)
    assert any("product=16S%20ribosomal%20RNA" in r[8] or "product=16S ribosomal RNA" in r[8]
               for r in rna)
    spans = [(int(r[3]) - 1, int(r[4])) for r in rna]
    for r in rows:
        if r[2] == "CDS":
            lo, hi = int(r[3]) - 1, int(r[4])
            assert all(min(hi, e) - max(lo, s) < 30 for s, e in spans), r
    assert len((tmp_path / "t.bed").read_text().splitlines()) == len(rna) + sum(
        r[2] == "CDS" for r in rows)
    # the GenBank file holds the same features (and the proteins of the .faa), and genoctx's
    # own annotation reader takes it as truth
    from Bio import SeqIO

    from genoctx.io.annotation import read_features

    rec = SeqIO.read(tmp_path / "t.gbk", "genbank")
    assert str(rec.seq) == "".join(ecoli_rrnh.read_text().split("\n")[1:])
    gb = sorted((f.type, int(f.location.start), int(f.location.end)) for f in rec.features
                if f.type != "gene")
    assert gb == sorted((r[2], int(r[3]) - 1, int(r[4])) for r in rows if r[2] != "gene")
    faa = {r.id: str(r.seq).rstrip("*") for r in SeqIO.parse(tmp_path / "t.faa", "fasta")}
    assert {f.qualifiers["locus_tag"][0]: f.qualifiers["translation"][0] for f in rec.features
            if f.type == "CDS"} == faa
    (feats,) = read_features(tmp_path / "t.gbk").values()
    assert sorted(f.kind for f in feats if f.kind in ("tRNA", "rRNA")) == sorted(r[2] for r in rna)
    # none: no RNA rows, and the CDS calls the finders removed are back
    assert cli(["annotate", ecoli_rrnh, "--model", "none", "--rna", "none", "--out",
                tmp_path / "n", "--quiet", "--formats", "gff3"])[0] == 0
    text = (tmp_path / "n.gff3").read_text()
    assert "\ttRNA\t" not in text and "\trRNA\t" not in text
    assert text.count("\tCDS\t") >= sum(r[2] == "CDS" for r in rows)


def test_messy_fasta_soft_masking_n_runs_iupac_tiny_and_empty_records(example_fasta, tmp_path, cli):
    """Real sequence (pPCP1) written the way assemblies arrive: CRLF line ends, a soft-masked
    stretch, N runs, IUPAC codes, a 50-bp contig, an all-N contig and an empty record."""
    seq = "".join(example_fasta.read_text().splitlines()[1:])
    messy = seq[:3000].lower() + "N" * 200 + seq[3000:6000] + "RYKMSWBDHV" + seq[6000:]
    records = [("plasmid soft-masked", messy), ("tiny", seq[:50]), ("empty", ""),
               ("gap", "N" * 500), ("clean", seq)]
    fa = tmp_path / "messy.fa"
    with open(fa, "w", newline="\r\n") as fh:
        fh.writelines(f">{name}\n" + "".join(s[i:i + 70] + "\n" for i in range(0, len(s), 70))
                      for name, s in records)
    code, _, err = cli(["annotate", fa, "--out", tmp_path / "m", "--quiet",
                        "--formats", "gff3,bed,bedgraph,bigwig"])
    assert code == 0, err
    text = (tmp_path / "m.gff3").read_text()
    regions = [line.split() for line in text.splitlines() if line.startswith("##sequence-region")]
    assert [r[1] for r in regions] == ["plasmid", "tiny", "gap", "clean"]  # no 1..0 range
    assert all(int(r[2]) <= int(r[3]) for r in regions)
    calls = read_gff3_genes(tmp_path / "m.gff3")
    by = {c: sorted((g.strand, g.stop) for g in calls if g.contig == c) for c in ("plasmid", "clean")}
    assert len(by["clean"]) >= 8 and not {g.contig for g in calls} - {"plasmid", "clean"}
    # genes of the clean copy clear of the edits (soft-masking is not an edit) are on the messy
    # copy too, 210 bases further on (200 N + 10 IUPAC inserted before them)
    clear = [g for g in calls if g.contig == "clean" and g.start > 6100]
    assert clear
    messy_keys = set(by["plasmid"])
    assert all((g.strand, g.stop + 210) in messy_keys for g in clear), (clear, messy_keys)
    early = [g for g in calls if g.contig == "clean" and g.end < 2900]  # inside the lower-case part
    assert early and all((g.strand, g.stop) in messy_keys for g in early)
    bg = (tmp_path / "m.CDS_plus.bedgraph").read_text().splitlines()
    assert {line.split("\t")[0] for line in bg[1:]} == {"plasmid", "tiny", "gap", "clean"}


def test_protein_fasta_is_refused_and_stray_letters_are_read_as_n(example_fasta, tmp_path, cli):
    """A protein FASTA given by mistake gets one clear line and no output; DNA with an X-masked
    run, alignment gaps and a stop symbol is annotated like DNA with Ns there."""
    prot = tmp_path / "prot.fa"
    prot.write_text(">sp|P0A7V8|RS4_ECOLI\nMARYLGPKLKLSRREGTDLFLKSGVRAIDTKCKIEQAPGQHGARKPRLSDYGVQLREKQKVRR\n")
    code, _, err = cli(["annotate", prot, "--out", tmp_path / "p", "--quiet"])
    assert code == 2 and "looks like a protein sequence" in err and "Traceback" not in err
    assert not list(tmp_path.glob("p.*")) and not list(tmp_path.glob(".p*"))

    seq = "".join(example_fasta.read_text().splitlines()[1:])
    edits = {"x": seq[:3000] + "X" * 300 + "---*" + seq[3000:], "n": seq[:3000] + "N" * 304 + seq[3000:]}
    for name, s in edits.items():
        (tmp_path / f"{name}.fa").write_text(f">c\n{s}\n")
        code, _, err = cli(["annotate", tmp_path / f"{name}.fa", "--out", tmp_path / name,
                            "--formats", "gff3", "--model", "none", "--quiet"])
        assert code == 0, err
    genes = {k: sorted((g.strand, g.start, g.end) for g in read_gff3_genes(tmp_path / f"{k}.gff3"))
             for k in edits}
    assert len(genes["x"]) >= 8 and genes["x"] == genes["n"]


def test_protein_and_cds_fasta_match_the_genbank_translations(example_fasta, example_genbank,
                                                              tmp_path, cli):
    """--formats faa,ffn: every gene whose coordinates agree with the GenBank record has the
    record's /translation; the CDS FASTA translates to the proteins; IDs are the GFF3's."""
    from Bio import SeqIO

    code, _, err = cli(["annotate", example_fasta, "--formats", "gff3,faa,ffn", "--model", "none",
                        "--out", tmp_path / "p", "--quiet"])
    assert code == 0, err
    want = {}
    for f in SeqIO.read(example_genbank, "genbank").features:
        if f.type == "CDS" and "translation" in f.qualifiers:
            want[(int(f.location.start), int(f.location.end), f.location.strand)] = \
                f.qualifiers["translation"][0]
    proteins = list(SeqIO.parse(tmp_path / "p.faa", "fasta"))
    cds = {r.id: r.seq for r in SeqIO.parse(tmp_path / "p.ffn", "fasta")}
    gff_ids = [line.split("ID=")[1].split(";")[0] for line in
               (tmp_path / "p.gff3").read_text().splitlines() if "\tgene\t" in line]
    assert [r.id for r in proteins] == gff_ids == list(cds)
    same = 0
    for r in proteins:
        _, lo, hi, strand, _ = (x.strip() for x in r.description.split(" # "))
        key = (int(lo) - 1, int(hi), int(strand))
        assert str(r.seq)[1:] == str(cds[r.id].translate(table=11))[1:]
        if key in want:
            same += 1
            assert str(r.seq) == want[key] + "*"
    assert same >= 4


def test_locus_tag_names_every_output_alike(example_fasta, tmp_path, cli):
    """--locus-tag: GFF3, BED, proteins and GenBank carry the same PREFIX_00001... IDs, in
    position order; a prefix that needs escaping is refused before any work, writing nothing."""
    from Bio import SeqIO

    code, _, err = cli(["annotate", example_fasta, "--formats", "gff3,bed,faa,gbk", "--model",
                        "none", "--locus-tag", "YPPCP1", "--out", tmp_path / "p", "--quiet"])
    assert code == 0, err
    genes = [line.split("\t") for line in (tmp_path / "p.gff3").read_text().splitlines()
             if "\tgene\t" in line]
    ids = [row[8].split("ID=")[1].split(";")[0] for row in genes]
    assert ids == [f"YPPCP1_{n:05d}" for n in range(1, len(ids) + 1)] and len(ids) >= 8
    assert all(f"locus_tag={i}" in row[8] for i, row in zip(ids, genes))
    bed = [line.split("\t")[3] for line in (tmp_path / "p.bed").read_text().splitlines()]
    assert sorted(bed) == ids
    cds_ids = [i for i, row in zip(ids, genes) if "gene_biotype" not in row[8]]
    assert [r.id for r in SeqIO.parse(tmp_path / "p.faa", "fasta")] == cds_ids
    record = SeqIO.read(tmp_path / "p.gbk", "genbank")
    tags = [f.qualifiers["locus_tag"][0] for f in record.features if f.type == "gene"]
    assert tags == ids
    code, _, err = cli(["annotate", example_fasta, "--model", "none", "--locus-tag", "x|y",
                        "--out", tmp_path / "bad", "--quiet"])
    assert code == 2 and "locus tag prefix" in err
    assert not list(tmp_path.glob("bad*"))


@pytest.fixture
def rotated_fasta(example_fasta, tmp_path) -> Path:
    """pPCP1 is circular: cut open inside a gene (4815-5888, - strand), that gene runs off both
    ends of the sequence."""
    name, seq = example_fasta.read_text().split("\n", 1)
    seq = seq.replace("\n", "")
    path = tmp_path / "rotated.fa"
    path.write_text(f"{name}\n{seq[5300:]}{seq[:5300]}\n")
    return path


def _genes(cli, fasta, out, *args):
    code, _, err = cli(["annotate", fasta, "--formats", "gff3", "--model", "none", "--out", out,
                        "--quiet", *args])
    assert code == 0, err
    return [(g.strand, g.start, g.end, g.partial)
            for g in read_gff3_genes(Path(out).with_suffix(".gff3"))]


def test_closed_sequences_get_no_partial_genes(rotated_fasta, tmp_path, cli):
    """--closed (Prodigal's -c): no gene runs off a sequence's ends, where the open run has
    partial genes; calls clear of the ends are kept."""
    n = len(rotated_fasta.read_text().split("\n")[1])
    open_ = _genes(cli, rotated_fasta, tmp_path / "o")
    closed = _genes(cli, rotated_fasta, tmp_path / "c", "--closed")
    assert any(any(g[3]) for g in open_)
    assert closed and not any(any(g[3]) for g in closed)
    inner = {g for g in open_ if 1000 < g[1] and g[2] < n - 1000}
    assert inner and inner <= set(closed)


def test_closed_keeps_region_edges_inside_a_sequence_open(example_fasta, rotated_fasta,
                                                          tmp_path, cli):
    """With --region, --closed closes only the sequence's own ends: a region inside the contig
    gets the same calls as without it (partial genes at its edges included), and a region from
    the contig's first base is closed there and stays open at its other edge."""
    contig = example_fasta.read_text().split()[0][1:]
    inner = _genes(cli, example_fasta, tmp_path / "i", "--region", f"{contig}:1500-8000")
    assert any(any(g[3]) for g in inner)
    assert _genes(cli, example_fasta, tmp_path / "ic", "--region", f"{contig}:1500-8000",
                  "--closed") == inner
    head = ["--region", f"{contig}:1-6000"]
    head_open = _genes(cli, rotated_fasta, tmp_path / "h", *head)
    head_closed = _genes(cli, rotated_fasta, tmp_path / "hc", *head, "--closed")
    assert any(g[1] < 3 and any(g[3]) for g in head_open)  # open: a gene runs in from base 1
    assert any(g[2] > 6000 - 3 and any(g[3]) for g in head_open)
    assert head_closed and not any(g[1] < 3 for g in head_closed)
    assert [g for g in head_closed if any(g[3])] == [g for g in head_open if g[2] > 6000 - 3]


def test_genbank_and_embl_input_give_the_fasta_genes(example_fasta, example_genbank, tmp_path,
                                                     cli, monkeypatch):
    """GenBank and EMBL flat files are read as Prodigal reads them (here the example's own
    GenBank record, converted to EMBL by Biopython, and gzipped GenBank from a pipe): the same
    genes as from the FASTA, on the record's accession.version."""
    import io

    from Bio import SeqIO

    args = ["--formats", "gff3,faa", "--model", "none", "--quiet"]
    assert cli(["annotate", example_fasta, "--out", tmp_path / "fa", *args])[0] == 0
    want = [(g.strand, g.start, g.end) for g in read_gff3_genes(tmp_path / "fa.gff3")]
    embl = tmp_path / "p.embl"
    SeqIO.convert(example_genbank, "genbank", embl, "embl")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(
        gzip.compress(example_genbank.read_bytes()))))
    for name, source in (("gb", example_genbank), ("embl", embl), ("pipe", "-")):
        code, _, err = cli(["annotate", source, "--out", tmp_path / name, *args])
        assert code == 0, err
        genes = read_gff3_genes(tmp_path / f"{name}.gff3")
        assert [(g.strand, g.start, g.end) for g in genes] == want
        assert {g.contig for g in genes} == {"NC_005816.1"}
        proteins = [str(r.seq) for r in SeqIO.parse(tmp_path / f"{name}.faa", "fasta")]
        assert proteins == [str(r.seq) for r in SeqIO.parse(tmp_path / "fa.faa", "fasta")]
    # a GenBank record without its sequence: one line naming the file, nothing written
    bare = tmp_path / "bare.gb"
    text = example_genbank.read_text()
    bare.write_text(text[:text.index("ORIGIN")] + "//\n")
    code, _, err = cli(["annotate", bare, "--out", tmp_path / "bare", *args])
    assert code == 2 and str(bare) in err and "Traceback" not in err
    assert not (tmp_path / "bare.gff3").exists() and not (tmp_path / "bare.faa").exists()


def test_circular_flat_file_records_are_pointed_out(example_fasta, example_genbank, tmp_path,
                                                   cli):
    """pPCP1's GenBank record says it is circular (LOCUS line): genoctx reads it as Prodigal does
    (a line), and says that --circular would decode it as a circle."""
    from Bio import SeqIO

    from genoctx.io.annotation import flatfile_topologies

    embl = tmp_path / "p.embl"
    SeqIO.convert(example_genbank, "genbank", embl, "embl")
    assert flatfile_topologies(example_genbank) == flatfile_topologies(embl) == [True]
    linear = tmp_path / "linear.gb"
    linear.write_text(example_genbank.read_text().replace(" circular ", " linear   ", 1))
    assert flatfile_topologies(linear) == [False]
    args = ["--formats", "gff3", "--model", "none"]
    for source, hint in ((example_genbank, True), (embl, True), (linear, False),
                         (example_fasta, False)):
        code, _, err = cli(["annotate", source, "--out", tmp_path / "o", *args])
        assert code == 0, err
        assert ("add --circular" in err) == hint, (source, err)
        assert ("(NC_005816.1)" in err) == hint
    code, _, err = cli(["annotate", example_genbank, "--circular", "--out", tmp_path / "c", *args])
    assert code == 0 and "add --circular" not in err
    assert "Is_circular=true" in (tmp_path / "c.gff3").read_text()


def test_circular_fasta_headers_are_pointed_out(example_fasta, tmp_path, cli):
    """Unicycler writes `circular=true` in its FASTA headers and NCBI's submission FASTA
    `[topology=circular]` (Bakta reads both); genoctx points to --circular for such records,
    whatever the compression and however the file is read in blocks."""
    from genoctx.io.fasta import circular_headers

    body = b"".join(example_fasta.read_bytes().splitlines(keepends=True)[1:])
    text = (b">pPCP1 length=9609 depth=1.00x circular=true\n" + body
            + b">p2 [topology=circular] [completeness=complete]\nACGTACGTAC\n"
            + b">p3 circular=false\nACGTACGTAC\n>p4\nACGT\n")
    plain, packed = tmp_path / "u.fa", tmp_path / "u.fa.gz"
    plain.write_bytes(text)
    packed.write_bytes(gzip.compress(text))
    for path in (plain, packed):
        for block in (7, 64, 1 << 22):  # headers across block ends
            assert circular_headers(path, block=block) == ["pPCP1", "p2"]
    assert circular_headers(example_fasta) == []
    args = ["--formats", "gff3", "--model", "none", "--out", tmp_path / "o"]
    code, _, err = cli(["annotate", plain, *args])
    assert code == 0 and "2 record(s) of the input are circular (pPCP1, ...)" in err
    code, _, err = cli(["annotate", plain, "--circular", *args])
    assert code == 0 and "add --circular" not in err


def test_circular_declared_makes_only_the_declared_records_circles(example_fasta,
                                                                  example_genbank, tmp_path, cli):
    """An assembly of a circle (Unicycler: circular=true) and a linear fragment: with
    --circular-declared the first is decoded as with --circular, the second as a line, each as
    when it is annotated alone; a GenBank record's circular LOCUS line counts the same."""
    from genoctx.heads.decoder import call_genes_multi

    body = b"".join(example_fasta.read_bytes().splitlines()[1:])
    g = max(call_genes_multi([("p", body)], closed=True), key=lambda g: g.end - g.start)
    cut = (g.start + g.end) // 2  # pPCP1 turned: its origin falls inside its longest gene
    ring_fa, frag_fa, both = tmp_path / "ring.fa", tmp_path / "frag.fa", tmp_path / "both.fa"
    ring_fa.write_bytes(b">ring length=9610 circular=true\n" + body[cut:] + body[:cut] + b"\n")
    frag_fa.write_bytes(b">frag\n" + body[:6000] + b"\n")
    both.write_bytes(ring_fa.read_bytes() + frag_fa.read_bytes())
    args = ["--formats", "gff3", "--model", "none", "--quiet"]

    def rows(prefix, contig):
        return [r for r in (tmp_path / f"{prefix}.gff3").read_text().splitlines()
                if r.startswith(contig + "\t")]

    for prefix, source, flags in (("both", both, ["--circular-declared"]),
                                  ("ring", ring_fa, ["--circular"]), ("frag", frag_fa, [])):
        code, _, err = cli(["annotate", source, "--out", tmp_path / prefix, *args, *flags])
        assert code == 0, err
    assert rows("both", "ring") == rows("ring", "ring")
    assert rows("both", "frag") == rows("frag", "frag")
    assert any("Is_circular=true" in r for r in rows("both", "ring"))
    assert not any("Is_circular" in r for r in rows("both", "frag"))
    # genes across the turned origin: the circle gives pPCP1's genes, the line would not
    n = len(body)
    assert any(int(r.split("\t")[4]) > n for r in rows("ring", "ring") if "\tgene\t" in r)
    code, _, err = cli(["annotate", example_genbank, "--circular-declared", "--out",
                        tmp_path / "gb", *args])
    assert code == 0 and "Is_circular=true" in (tmp_path / "gb.gff3").read_text()
    code, _, err = cli(["annotate", frag_fa, "--circular-declared", "--out", tmp_path / "x",
                        "--formats", "gff3", "--model", "none"])
    assert code == 0 and "no record of the input says it is circular" in err
    code, _, err = cli(["annotate", both, "--circular", "--circular-declared", "--out",
                        tmp_path / "x", *args])
    assert code == 2 and "give one of them" in err
    code, out, _ = cli(["annotate", "--help"])
    assert code == 0 and "[topology=circular]" in out  # not eaten as a rich markup tag


def test_standard_input_gives_the_same_output(example_fasta, tmp_path, cli, monkeypatch):
    """`genoctx annotate -` reads FASTA (plain or gzip) from a pipe; errors name standard input."""
    import io

    args = ["--formats", "gff3,faa", "--model", "none", "--quiet"]
    assert cli(["annotate", example_fasta, "--out", tmp_path / "file", *args])[0] == 0
    for name, data in (("plain", example_fasta.read_bytes()),
                       ("gz", gzip.compress(example_fasta.read_bytes()))):
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
        code, _, err = cli(["annotate", "-", "--out", tmp_path / name, *args])
        assert code == 0, err
        for ext in ("gff3", "faa"):
            assert (tmp_path / f"{name}.{ext}").read_bytes() == (tmp_path / f"file.{ext}").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b">p\nMKLLLEEFFQQ\n")))
    code, _, err = cli(["annotate", "-", "--out", tmp_path / "x", "--quiet"])
    assert code == 2 and err.startswith("genoctx: error: standard input: record 'p' looks like")


def _checkpoint_with_decoder(tmp_path, gene_weight: float, start_weight: float) -> Path:
    """A copy of the embedded checkpoint whose decoder.json sets the head's weights."""
    from genoctx.model import checkpoint

    dest = tmp_path / f"ckpt_{gene_weight}_{start_weight}"
    shutil.copytree(checkpoint.embedded_dir(), dest)
    (dest / "decoder.json").write_text(json.dumps(
        {"neural_gene_weight": gene_weight, "neural_start_weight": start_weight}))
    return dest


def test_probabilities_reach_the_decoder_only_when_it_weighs_them(example_fasta, tmp_path,
                                                                   monkeypatch):
    """The tracks need 3 summed columns; the [L, 17] probabilities are handed to the gene
    decoder only when its weights read them (else they are not kept: memory)."""
    pytest.importorskip("pyaragorn")
    pytest.importorskip("pybarrnap")
    from genoctx.heads import annotate as ann

    seen = []
    real = ann.call_bacterial

    def spy(records, probs=None, **kwargs):
        seen.append(probs)
        return real(records, probs, **kwargs)

    monkeypatch.setattr(ann, "call_bacterial", spy)
    for weight in (0.0, 0.25):
        result = ann.annotate_fasta(example_fasta, model=_checkpoint_with_decoder(tmp_path, weight, 0.0),
                                    quiet=True, need_tracks=True)
        assert set(result.tracks[0]) == set(ann.TRACKS) and result.genes
    assert seen[0] is None
    (name,) = seen[1]
    assert seen[1][name].shape == (len(example_fasta.read_text().split("\n", 1)[1].replace("\n", "")), 17)


def test_model_runs_only_when_its_output_is_used(example_fasta, tmp_path, monkeypatch):
    """With decoder weights that ignore the head and RNA genes from the sequence finders, genes
    do not need the model: without tracks it is not run, and the genes are the same. With weight
    on the head, or tracks, head RNA classes or eukaryote mode, it is run."""
    pytest.importorskip("pyaragorn")
    pytest.importorskip("pybarrnap")
    from genoctx.heads import annotation
    from genoctx.heads.annotate import annotate_fasta, write_annotation

    blind = _checkpoint_with_decoder(tmp_path, 0.0, 0.0)
    with_model = annotate_fasta(example_fasta, model=blind, quiet=True, need_tracks=True)
    (want,) = write_annotation(tmp_path / "with_model", with_model, ("gff3",))

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(annotation, "load_annotation_model", refuse)
    result = annotate_fasta(example_fasta, model=blind, quiet=True, need_tracks=False)
    assert not result.tracks and result.model_sha256
    (path,) = write_annotation(tmp_path / "no_model", result, ("gff3",))
    assert path.read_bytes() == want.read_bytes()
    trusting = _checkpoint_with_decoder(tmp_path, 0.25, 0.0)
    for ckpt, kwargs in ((blind, {"need_tracks": True}),
                         (blind, {"need_tracks": False, "rna": "model"}),
                         (blind, {"need_tracks": False, "mode": "eukaryote"}),
                         (trusting, {"need_tracks": False})):
        with pytest.raises(AssertionError, match="model was loaded"):
            annotate_fasta(example_fasta, model=ckpt, quiet=True, **kwargs)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("circular", [False, True])
def test_genes_decoded_beside_the_model_are_the_same(example_fasta, tmp_path, monkeypatch,
                                                     circular):
    """With gene calls that do not read the probabilities, background_genes decodes them in a
    spawned process while the model computes the tracks: the same files, tracks included."""
    pytest.importorskip("pyaragorn")
    pytest.importorskip("pybarrnap")
    from genoctx.heads import annotate as ann

    blind = _checkpoint_with_decoder(tmp_path, 0.0, 0.0)
    kw = dict(model=blind, quiet=True, workers=2, circular=circular)
    inline = ann.annotate_fasta(example_fasta, background_genes=False, **kw)
    started = []
    real = ann._genes_in_background

    def spy(stack, records, **kwargs):
        started.append(kwargs)
        return real(stack, records, **kwargs)

    monkeypatch.setattr(ann, "_genes_in_background", spy)
    beside = ann.annotate_fasta(example_fasta, background_genes=True, **kw)
    assert len(started) == 1 and started[0]["workers"] == 1
    assert bool(started[0]["circular"]) == circular
    formats = ("gff3", "bed", "bedgraph")
    want = ann.write_annotation(tmp_path / "inline", inline, formats)
    got = ann.write_annotation(tmp_path / "beside", beside, formats)
    assert len(want) == len(got) >= 3
    for a, b in zip(want, got):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert inline.genes and beside.genes == inline.genes and beside.rnas == inline.rnas
    # on the CPU the default decodes in turn (the model's threads hold the cores)
    ann.annotate_fasta(example_fasta, **kw)
    assert len(started) == 1


def test_track_files_written_by_worker_processes_are_the_same(example_fasta, tmp_path,
                                                              monkeypatch):
    """write_annotation(workers=2) hands the track files (bedGraph, bigWig) to spawned
    processes while it writes the rest: the same files, byte for byte, in the same order."""
    from genoctx.heads import annotate as ann

    result = ann.annotate_fasta(example_fasta, quiet=True)
    formats = ("gff3", "bed", "bedgraph") + (("bigwig",) if _has("pyBigWig") else ())
    one = ann.write_annotation(tmp_path / "one", result, formats)
    started = []
    real = ann._track_jobs_in_background

    def spy(stack, jobs, workers):
        started.append((len(jobs), workers))
        return real(stack, jobs, workers)

    monkeypatch.setattr(ann, "_track_jobs_in_background", spy)
    monkeypatch.setattr(ann, "TRACK_POOL_MIN_BASES", 0)  # pPCP1 is under the threshold
    two = ann.write_annotation(tmp_path / "two", result, formats, workers=2)
    assert started == [(len(ann.TRACKS) * (len(formats) - 2), 2)]
    assert [p.name.replace("two", "one") for p in two] == [p.name for p in one]
    for a, b in zip(one, two):
        assert a.read_bytes() == b.read_bytes(), a.name
    monkeypatch.setattr(ann, "TRACK_POOL_MIN_BASES", 10**9)  # big inputs only
    ann.write_annotation(tmp_path / "three", result, formats, workers=2)
    assert len(started) == 1

def test_annotate_without_the_model_does_not_load_torch(example_fasta, tmp_path):
    """Gene and RNA calls alone (--model none, or formats that need no track) never import
    torch, which alone takes seconds to load."""
    import subprocess
    import sys

    code = ("import sys; from genoctx.cli.app import run; "
            f"c1 = run(['annotate', {str(example_fasta)!r}, '--model', 'none', '--formats', "
            f"'gff3', '--out', {str(tmp_path / 'a')!r}, '--quiet']); "
            f"c2 = run(['annotate', {str(example_fasta)!r}, '--formats', 'gff3,bed,faa', "
            f"'--out', {str(tmp_path / 'b')!r}, '--quiet']); "
            "print(c1, c2, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert done.stdout.split() == ["0", "0", "False"], done.stderr[-2000:]
    assert (tmp_path / "a.gff3").read_text().count("\tCDS\t") >= 8
    assert (tmp_path / "b.faa").read_text().count(">") >= 8


def test_device_names_are_checked_before_any_work(cli, example_fasta, tmp_path):
    code, _, err = cli(["annotate", example_fasta, "--device", "gpu", "--out", tmp_path / "x"])
    assert code != 0 and "--device must be auto, cpu or cuda" in err
    assert not list(tmp_path.iterdir())


def test_cuda_asked_for_without_one_is_a_clear_error_when_the_model_runs(cli, example_fasta,
                                                                         tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    code, _, err = cli(["annotate", example_fasta, "--device", "cuda", "--out", tmp_path / "x"])
    assert code != 0 and "no CUDA device is available" in err
    # without the model the device is not used, so nothing stands in the way
    code, _, err = cli(["annotate", example_fasta, "--device", "cuda", "--model", "none",
                        "--formats", "gff3", "--out", tmp_path / "y"])
    assert code == 0, err


def test_a_large_input_hears_that_the_model_runs_for_the_tracks_alone(example_fasta, tmp_path,
                                                                      cli, monkeypatch):
    """On the CPU, when the model runs only for the probability tracks of a large input, a note
    before it runs names the faster formats; not with --quiet, not when the decoder or the
    RNA genes read the model, not under the size."""
    pytest.importorskip("pyaragorn")
    pytest.importorskip("pybarrnap")
    from genoctx.heads import annotate as ann

    monkeypatch.setattr(ann, "TRACKS_NOTE_BP", 5_000)  # pPCP1 (9.6 kb) counts as large
    said = "--formats gff3,bed (or --model none) writes the same genes"
    code, _, err = cli(["annotate", example_fasta, "--device", "cpu", "--formats", "gff3,bedgraph",
                        "--out", tmp_path / "a"])
    assert code == 0 and said in err
    for extra in (["--quiet"], ["--rna", "model"]):
        code, _, err = cli(["annotate", example_fasta, "--device", "cpu", "--formats",
                            "gff3,bedgraph", "--out", tmp_path / "b", *extra])
        assert code == 0 and said not in err
    monkeypatch.setattr(ann, "TRACKS_NOTE_BP", 50_000)
    code, _, err = cli(["annotate", example_fasta, "--device", "cpu", "--out", tmp_path / "c"])
    assert code == 0 and said not in err


def test_tracks_without_a_model_are_refused(cli, tmp_path, example_fasta):
    """The tracks are the model's probabilities: --model none writes GFF3 and BED by default
    and refuses a request for tracks instead of exiting 0 having written nothing."""
    for formats in ("bigwig", "gff3,bedgraph"):
        code, _, err = cli(["annotate", example_fasta, "--model", "none", "--formats", formats,
                            "--out", tmp_path / formats.replace(",", "_"), "-q"])
        assert code == 2 and "--model none runs no model" in err
    assert not list(tmp_path.iterdir())
    code, _, err = cli(["annotate", example_fasta, "--model", "none", "--out", tmp_path / "d"])
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.bed", "d.gff3"]
    assert f"wrote {tmp_path / 'd.gff3'}, {tmp_path / 'd.bed'}" in err


def test_out_ending_in_a_slash_is_a_folder_made_for_the_outputs(example_fasta, tmp_path, cli):
    code, _, err = cli(["annotate", example_fasta, "--model", "NONE", "--formats", "gff3", "-q",
                        "--out", f"{tmp_path / 'new'}/"])
    assert code == 0, err  # --model is read in any case, as --procedure and --formats are
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["Yersinia_pestis_pPCP1_NC_005816.gff3"]
    assert not (tmp_path / "new.gff3").exists()
    code, _, err = cli(["annotate", example_fasta, "--model", "none", "-q", "--out", "-"])
    assert code == 2 and "not standard output" in err


def test_a_damaged_head_config_is_one_error_line(tmp_path, cli, example_fasta):
    """A hand-edited or truncated head.json of a checkpoint: an error naming it, no traceback."""
    from genoctx.model.checkpoint import embedded_dir

    src = embedded_dir()
    if not (src / "head.safetensors").is_file():
        pytest.skip("no embedded weights in this build")
    ck = tmp_path / "ck"
    ck.mkdir()
    for name in ("model.safetensors", "model.safetensors.sha256", "config.json", "head.json",
                 "head.safetensors", "head.safetensors.sha256"):
        shutil.copy(src / name, ck / name)
    for text in ("[", "{}"):
        (ck / "head.json").write_text(text)
        code, _, err = cli(["annotate", example_fasta, "--model", ck, "-q",
                            "--out", tmp_path / "x"])
        assert code == 2 and "Traceback" not in err
        assert "cannot load the annotation head" in err and len(err.strip().splitlines()) == 1


def test_a_eukaryote_decoded_as_a_bacterium_gets_a_hint(data_root, tmp_path, cli):
    """Genes of prokaryote mode cover 86-92% of the train bacteria and about half of the
    eukaryote chunks: under 60% over 100 kb or more, a note names --mode eukaryote."""
    from genoctx.io.annotation import read_sequences_genbank
    from genoctx.io.fasta import iter_records

    name, worm = next(iter_records(data_root / "genomes/eukaryote_chunks/C.elegans.fa.gz"))
    cid, coli = next(read_sequences_genbank(
        data_root / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"))
    for label, header, seq, hinted in (("worm", name, worm, True), ("coli", cid, coli, False)):
        fa = tmp_path / f"{label}.fa"
        fa.write_text(f">{header}\n{seq[:150_000].decode()}\n")
        code, _, err = cli(["annotate", fa, "--model", "none", "--formats", "gff3",
                            "--out", tmp_path / label])
        assert code == 0, err
        assert ("--mode eukaryote decodes spliced genes" in err) == hinted, err


def test_a_bacterium_decoded_as_a_eukaryote_gets_a_hint(data_root, worm, tmp_path, cli,
                                                       monkeypatch):
    """The other way round: spliced genes whose CDS cover 70% of the bases or more (E. coli:
    0.87 here, 0.81 over 300 kb; the eukaryote chunks 0.13-0.38) get a note naming prokaryote
    mode. The note's 100-kb floor is lowered to these 30 kb to keep the test short."""
    from genoctx.heads import annotate
    from genoctx.io.annotation import read_sequences_genbank

    monkeypatch.setattr(annotate, "EUKARYOTE_HINT_BP", 30_000)
    cid, coli = next(read_sequences_genbank(
        data_root / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"))
    fa = tmp_path / "coli.fa"
    fa.write_text(f">{cid}\n{coli[1_000_000:1_030_000].decode()}\n")
    for path, hinted in ((fa, True), (worm[0], False)):
        code, _, err = cli(["annotate", path, "--mode", "eukaryote", "--formats", "gff3",
                            "--out", tmp_path / path.stem])
        assert code == 0, err
        assert ("leave out --mode eukaryote" in err) == hinted, err
