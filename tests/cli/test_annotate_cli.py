"""`genoctx annotate` end to end on the shipped example with the embedded model."""

import gzip
import shutil

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
])
def test_bad_input_fails_cleanly(args, message, example_fasta, tmp_path, cli):
    argv = ["annotate"] + [a.format(fa=example_fasta, tmp=tmp_path) for a in args]
    code, out, err = cli(argv + ["--out", str(tmp_path / "x"), "--quiet"])
    assert code != 0
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not list(tmp_path.glob("x*")) and not list(tmp_path.glob(".x*"))


def test_gzipped_input(example_fasta, tmp_path, cli):
    gz = tmp_path / "p.fa.gz"
    with gzip.open(gz, "wb") as fh:
        fh.write(example_fasta.read_bytes())
    code, _, _ = cli(["annotate", gz, "--out", tmp_path / "g", "--quiet", "--formats", "gff3",
                      "--model", "none"])
    assert code == 0 and "\tCDS\t" in (tmp_path / "g.gff3").read_text()
