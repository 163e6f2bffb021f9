"""``genoctx eval --predictions P --truth T``: reading any tool's annotation as the truth is read.

Each test scores a real annotation (the eukaryote chunks of the shared data, or the pPCP1
example) in a form another tool writes, and checks what a user expects: a file scored against
itself gets 1.0, and what cannot be scored is said, in the report or as one error line.
"""

import bz2
import gzip
import json
import lzma
import math

import pytest

from genoctx.eval.custom import contig_aliases
from genoctx.eval.metrics import coding_mask, gene_metrics
from genoctx.io.annotation import annotation_lengths, read_genes

CHUNKS = "genomes/eukaryote_chunks"


def _score(cli, tmp_path, pred, truth, *extra, name="o"):
    out = tmp_path / name
    code, _, err = cli(["eval", "--predictions", pred, "--truth", truth, *extra, "--out", out,
                        "-q"])
    assert code == 0, err
    doc = json.loads((out / "metrics.json").read_text())["benchmarks"]["predictions"]
    return doc["metrics"][pred.name], (out / "report.md").read_text(), doc["rows"]


def _gff3(genes, path, contig=None, header=(), extra=()):
    lines = ["##gff-version 3", *header]
    for i, g in enumerate(genes):
        lines.append(f"{contig or g.contig}\ttool\tCDS\t{g.start + 1}\t{g.end}\t.\t"
                     f"{'+-'[g.strand < 0]}\t0\tID=cds{i}")
    path.write_text("\n".join(lines + list(extra)) + "\n")
    return path


@pytest.mark.parametrize("species", ["A.thaliana", "D.melanogaster"])
def test_spliced_cds_rows_without_an_id_are_one_gene(tmp_path, cli, data_root, species):
    """TAIR10 and FlyBase write each CDS part as a row with ``Parent=`` only (TAIR10 adds the
    protein as a second Parent): the rows of one mRNA are one gene, so the file scored
    against itself is 1.0 with as many predicted genes as true ones."""
    gff = data_root / CHUNKS / f"{species}.gff.gz"
    got, _, _ = _score(cli, tmp_path, gff, gff)
    assert (got["sensitivity"], got["precision"], got["f1"]) == (1.0, 1.0, 1.0)
    assert got["n_pred"] == got["n_true"] > 50


def test_cds_rows_with_an_id_each_under_one_mrna_are_one_gene(tmp_path, cli, data_root):
    """WormBase's CDS rows share an ID; written with one ID per row under their transcript
    rows, they are still one gene each, as the truth reader takes them: scored against the
    original file, 1.0 with as many predicted genes as true ones. (Rows whose transcript has no
    row in the chunk keep their ID: under a parent of unknown type both readers group by ID.)"""
    import re

    gff = data_root / CHUNKS / "C.elegans.gff.gz"
    lines = gzip.decompress(gff.read_bytes()).decode().splitlines()
    ids = set(re.findall(r"\tID=([^;\n]+)", "\n".join(lines)))
    rows, changed = [], 0
    for n, line in enumerate(lines):
        parents = re.search(r"Parent=([^;]+)", line)
        if "\tCDS\t" in line and parents and set(parents[1].split(",")) <= ids:
            line, changed = line.replace("ID=CDS:", f"ID=row{n}_CDS:", 1), changed + 1
        rows.append(line)
    assert changed > 500
    own = tmp_path / "own_ids.gff3"
    own.write_text("\n".join(rows) + "\n")
    got, _, _ = _score(cli, tmp_path, own, gff)
    assert (got["sensitivity"], got["precision"], got["f1"]) == (1.0, 1.0, 1.0)
    assert got["n_pred"] == got["n_true"] > 50


def test_genoctx_gff3_reads_back_one_call_per_gene(tmp_path):
    """genoctx's own GFF3, gene → CDS and gene → mRNA → exon + CDS, reads back as written."""
    from genoctx.heads.decoder import GeneCall
    from genoctx.heads.spliced_decoder import SplicedGene
    from genoctx.io.writers import read_gff3_genes, write_gff3, write_spliced_gff3

    spliced = [SplicedGene("c", 1, ((100, 190), (300, 400), (500, 602)), 0.9),
               SplicedGene("c", -1, ((1000, 1100), (1200, 1301)), 0.8)]
    write_spliced_gff3(tmp_path / "s.gff3", spliced, {"c": 5000})
    back = read_gff3_genes(tmp_path / "s.gff3")
    assert [(g.strand, g.attrs["parts"]) for g in back] == [(1, list(s.cds)) for s in
                                                             spliced[:1]] + [(-1, list(spliced[1].cds))]
    calls = [GeneCall("c", 10, 310, 1, 0.9, "ATG"), GeneCall("c", 400, 700, -1, 0.7, "GTG")]
    write_gff3(tmp_path / "p.gff3", calls, [], {"c": 5000})
    assert [(g.start, g.end, g.strand, g.start_codon) for g in read_gff3_genes(tmp_path / "p.gff3")
            ] == [(10, 310, 1, "ATG"), (400, 700, -1, "GTG")]


def test_per_base_scores_leave_introns_out(tmp_path, cli, data_root):
    """Per-base CDS scores paint a spliced prediction's CDS parts, not its introns: the
    C. elegans chunk against itself is 1.0, read from GFF3 and from genoctx's GenBank (joins)."""
    from genoctx.heads.spliced_decoder import SplicedGene
    from genoctx.io.fasta import FastaFile
    from genoctx.io.writers import write_genbank

    gff = data_root / CHUNKS / "C.elegans.gff.gz"
    fa = data_root / CHUNKS / "C.elegans.fa.gz"
    got, _, _ = _score(cli, tmp_path, gff, gff, "--fasta", fa, name="gff")
    assert got["per_base_cds"]["f1"] == 1.0 and got["per_base_cds"]["mcc"] == 1.0
    # the same genes as genoctx --mode eukaryote writes them to GenBank: CDS join(...)
    genes = read_genes(gff)
    assert sum(len(g.parts) > 1 for g in genes) > 50
    spliced = [SplicedGene(g.contig, g.strand, tuple(sorted(g.parts))) for g in genes]
    fasta = FastaFile(fa)
    targets = [(c, 0, n, n) for c, n in fasta.lengths.items()]
    gbk = tmp_path / "ce.gbk"
    write_genbank(gbk, spliced, [], targets, fasta.fetch, translation_table=1)
    got, _, _ = _score(cli, tmp_path, gbk, gff, "--fasta", fa, name="gbk")
    assert got["f1"] == 1.0 and got["per_base_cds"]["f1"] == 1.0
    # and the mask itself
    g = genes[[len(g.parts) for g in genes].index(max(len(g.parts) for g in genes))]
    mask = coding_mask([g], g.contig, g.end + 10)
    assert mask.sum() == sum(e - s for s, e in g.parts) < g.end - g.start


def _gtf(genes, path):
    """GeneMark/AUGUSTUS-style GTF: CDS rows without the stop codon, then a stop_codon row."""
    lines = []
    for i, g in enumerate(genes):
        cds = (g.start + 1, g.end - 3) if g.strand > 0 else (g.start + 4, g.end)
        stop = (g.end - 2, g.end) if g.strand > 0 else (g.start + 1, g.start + 3)
        ids = f'gene_id "{i}_g"; transcript_id "{i}_t";'
        s = "+-"[g.strand < 0]
        lines += [f"{g.contig}\tGeneMark.hmm2\tCDS\t{cds[0]}\t{cds[1]}\t.\t{s}\t0\t{ids}",
                  f"{g.contig}\tGeneMark.hmm2\tstop_codon\t{stop[0]}\t{stop[1]}\t.\t{s}\t0\t{ids}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_gtf_predictions_are_read_as_the_truth_reads_gtf(tmp_path, cli, example_genbank):
    """A GTF of predictions (GeneMark, AUGUSTUS) is read by transcript_id with the stop_codon
    row added to the CDS, as a GTF truth is: the truth's genes written so score 1.0."""
    truth = read_genes(example_genbank)
    pred = _gtf(truth, tmp_path / "genemark.gtf")
    got, _, _ = _score(cli, tmp_path, pred, example_genbank)
    assert (got["n_pred"], got["sensitivity"], got["precision"]) == (len(truth), 1.0, 1.0)


def test_contig_aliases_never_merge_two_names_of_one_file():
    # a shared sample prefix is not a shared sequence
    assert contig_aliases(["S1|plasmidA", "S1|plasmidB"], {"S1|plasmidA"}) == {}
    assert contig_aliases(["BM|chr2"], {"BM|chr1"}) == {}
    # two names of one file that would map onto one truth name: neither is mapped
    assert contig_aliases(["NC_000913", "NC_000913.3"], {"NC_000913.3"}) == {}
    assert contig_aliases(["NC_000913", "gi|1|ref|NC_000913.2|"], {"NC_000913.3"}) == {}
    # decoration alone still matches, either way
    assert contig_aliases(["chr1"], {"BM|chr1"}) == {"chr1": "BM|chr1"}
    assert contig_aliases(["gi|45478711|ref|NC_005816.1|"], {"NC_005816"}) == {
        "gi|45478711|ref|NC_005816.1|": "NC_005816"}


def test_predicted_contigs_missing_from_the_truth_are_noted(tmp_path, cli, example_genbank,
                                                            example_fasta, capsys):
    """Predictions on two plasmids of one sample, a truth that annotates one: the calls on the
    other are not merged onto it (a shared 'S1|' prefix), count as false positives, and a
    note (report, metrics.json and stderr) says how many contigs and calls have no truth."""
    truth = read_genes(example_genbank)
    n = annotation_lengths(example_genbank)[truth[0].contig]
    t = _gff3(truth, tmp_path / "truth.gff3", contig="S1|pPCP1",
              header=[f"##sequence-region S1|pPCP1 1 {n}"])
    pred = _gff3(truth + truth, tmp_path / "pred.gff3")
    text = pred.read_text().splitlines()
    half = 1 + len(truth)
    text = [text[0]] + [r.replace(truth[0].contig, "S1|pPCP1") for r in text[1:half]] + \
        [r.replace(truth[0].contig, "S1|pPCP2") for r in text[half:]]
    pred.write_text("\n".join(text) + "\n")
    code, _, err = cli(["eval", "--predictions", pred, "--truth", t, "--out", tmp_path / "o"])
    assert code == 0, err
    assert "note: 1 predicted contig(s) (10 call(s)) have no sequence" in err
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())
    got = m["benchmarks"]["predictions"]["metrics"]["pred.gff3"]
    assert (got["n_pred"], got["tp"], got["precision"]) == (2 * len(truth), len(truth), 0.5)
    assert got["contigs_not_in_truth"] == {"contigs": 1, "calls": len(truth),
                                           "names": ["S1|pPCP2"]}
    assert "have no sequence of that name in truth.gff3 (e.g. S1|pPCP2)" in \
        (tmp_path / "o" / "report.md").read_text()


def test_a_call_past_the_end_of_a_linear_contig_is_refused(tmp_path, cli, example_genbank):
    """Past the end of a circular contig a call crosses the origin (left out, counted); past
    the end of a linear one it is bad input: one error line. A spliced gene whose parts reach
    both ends of a linear contig is an ordinary gene, scored."""
    truth = read_genes(example_genbank)
    c = truth[0].contig
    n = annotation_lengths(example_genbank)[c]
    linear = tmp_path / "linear.gb"
    linear.write_text(example_genbank.read_text().replace(" circular ", " linear   ", 1))
    past = _gff3(truth, tmp_path / "past.gff3",
                 extra=[f"{c}\ttool\tCDS\t{n - 98}\t{n + 100}\t.\t+\t0\tID=ring"])
    code, _, err = cli(["eval", "--predictions", past, "--truth", linear, "--out", tmp_path / "a"])
    assert code == 2 and "past the 9,609 bp of that sequence" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    ends = _gff3(truth, tmp_path / "ends.gff3",
                 extra=[f"{c}\ttool\tCDS\t1\t99\t.\t+\t0\tID=ends",
                        f"{c}\ttool\tCDS\t{n - 200}\t{n}\t.\t+\t0\tID=ends"])
    got, report, _ = _score(cli, tmp_path, ends, linear, name="b")
    assert got["n_pred"] == len(truth) + 1 and got["across_origin_left_out"] == 0
    assert "across a contig's origin" not in report


@pytest.mark.parametrize("how", ["biotype", "type"])
def test_a_pseudogene_parent_makes_its_cds_pseudo(tmp_path, cli, example_genbank, how):
    """NCBI GFF3: a CDS under ``gene ... biotype=pseudogene`` (or a ``pseudogene`` row) is
    pseudo in the predictions as in the truth, so the file scored against itself is 1.0."""
    truth = read_genes(example_genbank)
    lines = ["##gff-version 3"]
    for i, g in enumerate(truth + [truth[0].__class__(**{**truth[0].__dict__, "start": 2000,
                                                          "end": 2300, "strand": 1})]):
        kind, extra = ("gene", "")
        if i == len(truth):
            kind, extra = ("gene", ";biotype=pseudogene") if how == "biotype" else (
                "pseudogene", ";gene_biotype=pseudogene")
        s = "+-"[g.strand < 0]
        span = f"{g.contig}\tRefSeq\t{{}}\t{g.start + 1}\t{g.end}\t.\t{s}"
        lines += [span.format(kind) + f"\t.\tID=gene-{i}{extra}",
                  span.format("CDS") + f"\t0\tID=cds-{i};Parent=gene-{i}"]
    gff = tmp_path / f"pseudo_{how}.gff3"
    gff.write_text("\n".join(lines) + "\n")
    assert len(read_genes(gff)) == len(truth)
    got, _, _ = _score(cli, tmp_path, gff, gff)
    assert (got["n_pred"], got["precision"], got["f1"]) == (len(truth), 1.0, 1.0)


def test_start_agreement_is_null_when_nothing_matched(tmp_path, cli, example_genbank, capsys):
    truth = read_genes(example_genbank)
    assert math.isnan(gene_metrics([], truth).start_agreement)  # formats and averages as NaN
    assert gene_metrics([], truth).as_dict()["start_agreement"] is None
    moved = [g.__class__(**{**g.__dict__, "start": g.start + 30, "end": g.end + 30})
             for g in truth]
    pred = _gff3(moved, tmp_path / "moved.gff3")
    got, report, rows = _score(cli, tmp_path, pred, example_genbank)
    assert got["tp"] == 0 and got["start_agreement"] is None
    (row,) = [r for r in rows if r["metric"] == "gene start_agreement"]
    assert row["value"] is None
    assert "| gene start_agreement | n/a |" in report
    code, out, _ = cli(["eval", "--predictions", pred, "--truth", example_genbank,
                        "--out", tmp_path / "t"])
    assert code == 0 and "gene start_agreement\tn/a" in out


def test_a_genbank_truth_without_bases_is_scored(tmp_path, cli, example_genbank):
    """A GenBank truth with a CONTIG line where ORIGIN would hold the bases (NCBI's 'GenBank'
    download without sequence): gene scores need no bases, and per-base scores need only the
    length, which the LOCUS line gives."""
    text = example_genbank.read_text()
    head = text[:text.index("\nORIGIN")]
    n = annotation_lengths(example_genbank)[read_genes(example_genbank)[0].contig]
    no_bases = tmp_path / "contig.gb"
    no_bases.write_text(f"{head}\nCONTIG      join(NC_005816.1:1..{n})\n//\n")
    pred = _gff3(read_genes(example_genbank), tmp_path / "p.gff3")
    got, _, _ = _score(cli, tmp_path, pred, no_bases)
    assert (got["f1"], got["per_base_cds"]["f1"]) == (1.0, 1.0)


@pytest.mark.parametrize("ext,compress", [("xz", lzma.compress), ("bz2", bz2.compress),
                                          ("gz", gzip.compress)])
def test_compressed_gff3_predictions_are_read(tmp_path, cli, example_genbank, ext, compress):
    plain = _gff3(read_genes(example_genbank), tmp_path / "p.gff3")
    pred = tmp_path / f"p.gff3.{ext}"
    pred.write_bytes(compress(plain.read_bytes()))
    got, _, _ = _score(cli, tmp_path, pred, example_genbank)
    assert (got["sensitivity"], got["precision"]) == (1.0, 1.0)


def test_a_genbank_prediction_across_the_origin_is_counted(tmp_path, cli, example_genbank):
    """GenBank writes a CDS across a circular record's origin as join(end piece, start piece):
    left out as the truth leaves it out, and counted in the report as GFF3's are."""
    text = example_genbank.read_text()
    n = annotation_lengths(example_genbank)[read_genes(example_genbank)[0].contig]
    feature = (f"     CDS             join({n - 98}..{n},1..102)\n"
               '                     /locus_tag="ring"\n'
               '                     /codon_start=1\n')
    at = text.index("\n", text.index("\nFEATURES") + 1) + 1
    pred = tmp_path / "ring.gb"
    pred.write_text(text[:at] + feature + text[at:])
    got, report, _ = _score(cli, tmp_path, pred, example_genbank)
    assert (got["sensitivity"], got["precision"]) == (1.0, 1.0)
    assert got["across_origin_left_out"] == 1
    assert "1 predicted gene(s) across a contig's origin left out" in report
