"""The annotate-and-score Snakemake workflow: its scripts on hand-made cases, then ``--lint`` and
the ``.test`` run end to end (real data from the data root) in a temporary copy.

The end-to-end run takes about 110 CPU-seconds (1.5-2.5 min wall on a busy 2-core box); its
tests are marked ``slow`` (CI runs them).
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pysam
import pytest

REPO = Path(__file__).resolve().parents[2]
PIPELINE = REPO / "pipelines" / "annotate-and-score"
SCRIPTS = PIPELINE / "workflow" / "scripts"
SAMPLES = ("pPCP1", "ex1", "BRCA1", "pPCP1cut", "pPCP1ring")
TRACKS = ("CDS_plus", "CDS_minus", "RNA")


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"wf_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _snakemake() -> list[str]:
    exe = shutil.which("snakemake", path=os.path.dirname(sys.executable)) or shutil.which("snakemake")
    if exe is None:
        pytest.skip("snakemake is not installed (pip install 'snakemake>=9,<10')")
    return [exe]


# ----------------------------------------------------------------------------- scripts


def test_plan_cuts_long_contigs_and_packs_short_ones():
    plan = _script("plan_shards").plan
    shards = plan({"a": 250, "b": 40, "c": 30, "d": 0, "e": 60}, shard_bases=100, pack_below=50,
                  overlap=10)
    spans = [[(p.contig, p.start, p.end, p.core_start, p.core_end) for p in s] for s in shards]
    assert spans == [
        [("a", 0, 93, 0, 83)],        # 250 bp -> 3 chunks: cuts 0, 83, 167, 250
        [("a", 73, 177, 83, 167)],
        [("a", 157, 250, 167, 250)],
        [("e", 0, 60, 0, 60)],        # not below pack_below: a shard of its own
        [("b", 0, 40, 0, 40), ("c", 0, 30, 0, 30)],  # packed (70 <= 100); empty d skipped
    ]


def test_plan_keeps_the_contigs_of_a_circular_sample_whole():
    plan = _script("plan_shards").plan
    shards = plan({"a": 250, "b": 40, "c": 30}, shard_bases=100, pack_below=50, overlap=10,
                  whole=True)
    spans = [[(p.contig, p.start, p.end, p.core_start, p.core_end) for p in s] for s in shards]
    assert spans == [[("a", 0, 250, 0, 250)], [("b", 0, 40, 0, 40), ("c", 0, 30, 0, 30)]]


def test_plan_keeps_only_the_declared_circles_whole():
    """circular: declared names the circles: they stay whole, the other contigs are cut."""
    plan = _script("plan_shards").plan
    shards = plan({"a": 250, "f": 250, "b": 40}, shard_bases=100, pack_below=50, overlap=10,
                  whole=frozenset({"a"}))
    spans = [[(p.contig, p.start, p.end, p.core_start, p.core_end) for p in s] for s in shards]
    assert spans == [[("a", 0, 250, 0, 250)], [("f", 0, 93, 0, 83)], [("f", 73, 177, 83, 167)],
                     [("f", 157, 250, 167, 250)], [("b", 0, 40, 0, 40)]]


def test_plan_never_packs_past_shard_bases():
    plan = _script("plan_shards").plan
    shards = plan({f"c{i}": 40 for i in range(5)}, shard_bases=100, pack_below=50, overlap=0)
    assert [[p.contig for p in s] for s in shards] == [["c0", "c1"], ["c2", "c3"], ["c4"]]


def test_merge_keeps_each_feature_once_by_its_three_prime_end():
    merge = _script("merge_annotation")
    from genoctx.heads.decoder import GeneCall

    cores = {"chr": [(0, 100)]}
    plus_in = GeneCall("chr", 50, 120, 1, 0.9, "ATG")     # 3' end 119: next shard's
    minus_in = GeneCall("chr", 90, 300, -1, 0.9, "ATG")   # 3' end 90: this shard's
    assert not merge.owned(plus_in, cores)
    assert merge.owned(minus_in, cores)
    assert merge.three_prime(plus_in) == 119 and merge.three_prime(minus_in) == 90
    # across the origin of a circle of 1,000 bp: the 3' end is past the origin
    across = GeneCall("chr", 950, 1030, 1, 0.9, "ATG")
    assert merge.three_prime(across, 1000) == 29 and merge.owned(across, cores, 1000)
    assert not merge.owned(across, cores)


def test_read_support_counts_both_pieces_of_a_gene_across_the_origin(tmp_path, data_root):
    """samtools' ex1 reads on chr1 (1,575 bp) taken as a circle: a gene across its origin gets
    the depth of its piece up to the end and of its piece from the start."""
    import numpy as np

    from genoctx.io.bam import pileup_channels
    from genoctx.io.regions import Region

    rs = _script("read_support")
    bam = tmp_path / "ex1.bam"
    shutil.copy(data_root / "reads" / "ex1" / "ex1.bam", bam)
    pysam.index(str(bam))
    gff3 = tmp_path / "g.gff3"
    gff3.write_text("##gff-version 3\n##sequence-region chr1 1 1575\n"
                    "chr1\t.\tregion\t1\t1575\t.\t+\t.\tID=chr1:1..1575;Is_circular=true\n"
                    "chr1\tgenoctx\tgene\t1501\t1675\t0.9\t+\t.\tID=g1\n"
                    "chr1\tgenoctx\tCDS\t1501\t1675\t0.9\t+\t0\tID=cds_g1;Parent=g1\n"
                    "chr1\tgenoctx\tgene\t101\t400\t0.9\t-\t.\tID=g2\n"
                    "chr1\tgenoctx\tCDS\t101\t400\t0.9\t-\t0\tID=cds_g2;Parent=g2\n")
    rows = {r["gene"]: r for r in rs.gene_depths(bam, gff3)}
    both = np.concatenate([pileup_channels(bam, Region("chr1", a, b), None)[:, 0]
                           for a, b in ((1500, 1575), (0, 100))])
    assert len(both) == 175 and (both > 0).any()
    assert rows["g1"]["mean_depth"] == f"{both.mean():.3f}"
    assert rows["g1"]["covered_fraction"] == f"{(both > 0).mean():.3f}"
    one = pileup_channels(bam, Region("chr1", 100, 400), None)[:, 0]
    assert rows["g2"]["mean_depth"] == f"{one.mean():.3f}"


def test_merge_bedgraph_clips_to_cores_and_joins_equal_runs(tmp_path):
    merge = _script("merge_annotation")
    a, b = tmp_path / "a.bedgraph", tmp_path / "b.bedgraph"
    a.write_text('track type=bedGraph name="x"\nchr\t0\t60\t0.1\nchr\t60\t120\t0.5\n')
    b.write_text('track type=bedGraph name="x"\nchr\t80\t110\t0.5\nchr\t110\t200\t0.2\n')
    out = tmp_path / "m.bedgraph"
    merge.merge_bedgraph([({"chr": [(0, 100)]}, a), ({"chr": [(100, 200)]}, b)], {"chr": 0},
                         "x", out)
    assert out.read_text().splitlines() == [
        'track type=bedGraph name="x"', "chr\t0\t60\t0.1", "chr\t60\t110\t0.5",
        "chr\t110\t200\t0.2"]


def test_merge_bedgraph_orders_contigs_and_cores_whatever_the_shard_order(tmp_path):
    """Shards given out of order, a contig whose name starts another's (chr1, chr10) and a
    shard with two cores: the lines come out in the FASTA's contig order and by position."""
    merge = _script("merge_annotation")
    a, b, c = (tmp_path / f"{n}.bedgraph" for n in "abc")
    a.write_text('track type=bedGraph name="x"\nchr10\t0\t50\t0.3\nchr1\t0\t40\t0.1\n'
                 "chr1\t40\t90\t0.2\n")
    b.write_text("chr1\t30\t100\t0.2\nchr1\t100\t150\t0.4\n")
    c.write_text("chr10\t40\t120\t0.3\n")
    out = tmp_path / "m.bedgraph"
    merge.merge_bedgraph([({"chr10": [(40, 120)]}, c),
                          ({"chr1": [(50, 150)]}, b),
                          ({"chr1": [(0, 50)], "chr10": [(0, 40)]}, a)],
                         {"chr1": 0, "chr10": 1}, "x", out)
    assert out.read_text().splitlines() == [
        'track type=bedGraph name="x"', "chr1\t0\t40\t0.1", "chr1\t40\t100\t0.2",
        "chr1\t100\t150\t0.4", "chr10\t0\t120\t0.3"]


VCF_HEAD = "##fileformat=VCFv4.2\n##contig=<ID=c1,length=1000>\n##contig=<ID=c2,length=1000>\n" \
           "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"


def test_split_vcf_chunks_in_order_and_concat_restores_them(tmp_path):
    split, concat = _script("split_vcf").split, _script("concat_vcf").concat
    records = [f"c{1 + i // 7}\t{10 + i}\t.\tA\tG\t.\t.\t.\n" for i in range(12)]
    vcf = tmp_path / "in.vcf"
    vcf.write_text(VCF_HEAD + "".join(records))
    parts = split(vcf, tmp_path / "chunks", 5)
    assert [p.name for p in parts] == ["0000.vcf", "0001.vcf", "0002.vcf"]
    assert [sum(not ln.startswith("#") for ln in p.read_text().splitlines()) for p in parts] \
        == [5, 5, 2]
    out = tmp_path / "out.vcf.gz"
    assert concat(parts, out) == 12
    with pysam.VariantFile(str(out)) as vf:
        assert [(r.chrom, r.pos) for r in vf.fetch("c2")] == [("c2", 10 + i) for i in range(7, 12)]


def test_split_and_concat_keep_latin1_bytes(tmp_path):
    """A VCF with Latin-1 bytes (not UTF-8) in its header and INFO, which score-variants keeps
    byte for byte, goes through the workflow's split and concat unchanged."""
    split, concat = _script("split_vcf").split, _script("concat_vcf").concat
    head = VCF_HEAD.replace("#CHROM", '##source=M\xfcller\n##INFO=<ID=N,Number=1,Type=String,'
                            'Description="n">\n#CHROM', 1).encode("latin-1")
    rows = [f"c1\t{10 + i}\t.\tA\tG\t.\t.\tN=Stra\xdfe{i}\n".encode("latin-1")
            for i in range(3)]
    vcf = tmp_path / "in.vcf"
    vcf.write_bytes(head + b"".join(rows))
    parts = split(vcf, tmp_path / "chunks", 2)
    out = tmp_path / "out.vcf.gz"
    assert concat(parts, out) == 3
    with gzip.open(out, "rb") as fh:
        text = fh.read()
    assert b"M\xfcller" in text and text.endswith(b"".join(rows))


def test_split_vcf_keeps_each_record_as_written(tmp_path):
    """Chunks hold the input's own lines: floats keep every digit (htslib's text rounds them
    to six), plain or bgzipped input alike."""
    split = _script("split_vcf").split
    rows = ["c1\t10\t.\tA\tG\t123.456789012\tPASS\tAF=0.123456789012\n",
            "c1\t20\trs1\tAT\tA\t.\t.\t.\n"]
    head = VCF_HEAD.replace("#CHROM", '##INFO=<ID=AF,Number=A,Type=Float,Description="af">\n'
                            "#CHROM", 1)
    vcf = tmp_path / "in.vcf"
    vcf.write_text(head + "".join(rows))
    pysam.tabix_compress(str(vcf), str(vcf) + ".gz", force=True)
    for src in (vcf, tmp_path / "in.vcf.gz"):
        (part,) = split(src, tmp_path / f"chunks_{src.suffix}", 5)
        assert [ln + "\n" for ln in part.read_text().splitlines() if not ln.startswith("#")] \
            == rows


def test_split_vcf_reads_plain_gzip(tmp_path):
    """A VCF compressed with plain gzip (not bgzip), which htslib cannot open for records
    ("seek not implemented"), is split as its decompressed text is."""
    import gzip

    split = _script("split_vcf").split
    records = [f"c1\t{10 + i}\t.\tA\tG\t.\t.\t.\n" for i in range(7)]
    vcf = tmp_path / "in.vcf.gz"
    vcf.write_bytes(gzip.compress((VCF_HEAD + "".join(records)).encode()))
    parts = split(vcf, tmp_path / "chunks", 5)
    assert [ln + "\n" for p in parts for ln in p.read_text().splitlines()
            if not ln.startswith("#")] == records
    assert len(parts) == 2 and parts[1].read_text().startswith(VCF_HEAD.splitlines()[0])


def test_read_support_reads_cram_and_sam(tmp_path, data_root):
    """samtools' ex1 reads as CRAM (decoded against ex1.fa, indexed as .crai) and as SAM (sorted
    into a BAM) give the depths of the BAM."""
    rs = _script("read_support")
    ex1 = data_root / "reads" / "ex1"
    sam, cram = tmp_path / "ex1.sam", tmp_path / "ex1.cram"
    pysam.view("-h", "-o", str(sam), str(ex1 / "ex1.bam"), catch_stdout=False)
    pysam.view("-C", "-T", str(ex1 / "ex1.fa"), "-o", str(cram), str(ex1 / "ex1.bam"),
               catch_stdout=False)
    gff3 = tmp_path / "g.gff3"
    gff3.write_text("##gff-version 3\n##sequence-region chr1 1 1575\n"
                    "chr1\tgenoctx\tgene\t101\t400\t0.9\t-\t.\tID=g1\n"
                    "chr1\tgenoctx\tCDS\t101\t400\t0.9\t-\t0\tID=cds_g1;Parent=g1\n")
    depths = {}
    for src in (ex1 / "ex1.bam", cram, sam):
        staged = rs.stage_alignment(src, tmp_path / f"staged_{src.suffix[1:]}")
        index = {".bam": ".bai", ".cram": ".crai"}[staged.suffix]
        assert Path(f"{staged}{index}").is_file()
        ref = ex1 / "ex1.fa" if staged.suffix == ".cram" else None
        depths[src.suffix] = rs.gene_depths(staged, gff3, ref)
    assert depths[".bam"][0]["mean_depth"] and float(depths[".bam"][0]["mean_depth"]) > 0
    assert depths[".cram"] == depths[".sam"] == depths[".bam"]


def test_split_vcf_refuses_unsorted_input(tmp_path):
    mod = _script("split_vcf")
    vcf = tmp_path / "in.vcf"
    vcf.write_text(VCF_HEAD + "c1\t20\t.\tA\tG\t.\t.\t.\nc1\t10\t.\tA\tG\t.\t.\t.\n")
    with pytest.raises(mod.UnsortedVCF, match="sort the VCF"):
        mod.split(vcf, tmp_path / "chunks", 5)
    vcf.write_text(VCF_HEAD + "c1\t1\t.\tA\tG\t.\t.\t.\nc2\t1\t.\tA\tG\t.\t.\t.\n"
                   "c1\t5\t.\tA\tG\t.\t.\t.\n")
    with pytest.raises(mod.UnsortedVCF, match="not contiguous"):
        mod.split(vcf, tmp_path / "chunks2", 5)


def test_positions_past_2_29_need_a_csi_index(tmp_path):
    """A .tbi holds positions up to 2^29; concat_vcf always wrote one, so a VCF of a longer
    chromosome failed after every chunk was scored. With score.index tbi, split refuses such
    a record before any scoring and names the setting; with csi the result is indexed and
    reads back by region."""
    split, concat = _script("split_vcf"), _script("concat_vcf").concat
    head = "##fileformat=VCFv4.2\n##contig=<ID=big,length=900000000>\n" \
           "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
    rows = [f"big\t{p}\t.\tA\tG\t.\t.\t.\n" for p in (1000, 536_870_912, 536_870_913, 800_000_000)]
    vcf = tmp_path / "big.vcf"
    vcf.write_text(head + "".join(rows))
    with pytest.raises(split.TooLongForTbi, match=r"big:536,870,913 lies past 536,870,912.*"
                                                  r"'index: csi' under 'score'"):
        split.split(vcf, tmp_path / "tbi", 2)
    parts = split.split(vcf, tmp_path / "csi", 2, "csi")
    out = tmp_path / "out.vcf.gz"
    assert concat(parts, out, "csi") == 4
    assert Path(f"{out}.csi").is_file() and not Path(f"{out}.tbi").exists()
    with pysam.VariantFile(str(out)) as vf:
        assert [r.pos for r in vf.fetch("big", 536_870_000, 900_000_000)] == \
            [536_870_912, 536_870_913, 800_000_000]
    with pytest.raises(ValueError, match="tbi or csi"):
        concat(parts, out, "bai")


def test_sample_domain_names_the_genome_from_its_rrna_genes(tmp_path, data_root,
                                                           example_fasta):
    """The whole genome's complete 16S/23S genes name its domain (E. coli's first 240 kb hold
    the rrnH operon); a genome without one is left to each shard ("auto")."""
    from genoctx.io.annotation import read_sequences_genbank

    (_, seq), = read_sequences_genbank(
        data_root / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz")
    fasta = tmp_path / "g.fa"  # two contigs: the operon in the second
    fasta.write_bytes(b">a\n" + seq[:200_000] + b"\n>b\n" + seq[200_000:240_000] + b"\n")
    domain = _script("sample_domain").sample_domain
    assert domain(fasta, threads=1) == "bacteria"
    assert domain(example_fasta, threads=1) == "auto"  # a plasmid: no rRNA gene


# ----------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, data_root) -> Path:
    """A copy of the workflow with the .test inputs; the BRCA1 VCF built from the SGE table."""
    root = tmp_path_factory.mktemp("wf")
    shutil.copytree(PIPELINE, root / "wf", ignore=shutil.ignore_patterns(
        "results", "logs", "resources", ".snakemake"))
    test_dir = root / "wf" / ".test"
    subprocess.run([sys.executable, str(test_dir / "make_brca1_vcf.py"), "--data-root",
                    str(data_root), "--out", str(test_dir / "resources" / "brca1_sge_subset.vcf")],
                   check=True)
    subprocess.run([sys.executable, str(test_dir / "make_cut_plasmid.py"), "--data-root",
                    str(data_root), "--out", str(test_dir / "resources" / "pPCP1_cut.fa")],
                   check=True)
    return test_dir


def _run(cmd: list[str], cwd: Path, data_root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GENOCTX_DATA_ROOT": str(data_root), "OMP_NUM_THREADS": "1"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def _score_without_annotation(test_dir: Path, data_root: Path, sample: str, sheet: str,
                              settings: str = "") -> list:
    """Run the workflow's scoring of ``sample`` (sample sheet ``config/SHEET``) with
    ``score.annotation: none`` (plus ``settings``, more ``score:`` lines) and return its
    VCF's header and records (``pysam.VariantFile`` read whole)."""
    (test_dir / "config" / "none.yaml").write_text(f"score:\n  annotation: none\n{settings}")
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "--cores", "2",
                               "--configfile", "config/config.yaml", "config/none.yaml",
                               "--config", f"samples=config/{sheet}", "--",
                               f"results/score/{sample}.vcf.gz"], test_dir, data_root)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    with pysam.VariantFile(str(test_dir / "results" / "score" / f"{sample}.vcf.gz")) as vf:
        return vf.header, list(vf)


def test_lint_is_clean(workdir, data_root):
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "--lint"], workdir,
               data_root)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Congratulations, your workflow is in a good condition!" in res.stdout + res.stderr
    assert "Lints for" not in res.stdout + res.stderr


def test_bad_sample_sheet_fails_before_running(workdir, data_root, tmp_path):
    sheet = tmp_path / "samples.tsv"
    sheet.write_text("sample\tfasta\nbad\tno/such/genome.fa\n")
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "-n", "--config",
                               f"samples={sheet}"], workdir, data_root)
    assert res.returncode != 0
    out = res.stdout + res.stderr  # snakemake prints workflow errors on stdout
    assert "sample files not found" in out and "no/such/genome.fa" in out


def test_sample_files_of_the_wrong_kind_and_a_bad_model_fail_before_running(workdir, data_root,
                                                                           tmp_path):
    (tmp_path / "notes.fa").write_text("just some notes\n")
    (tmp_path / "empty.vcf").write_bytes(b"")
    fasta = data_root / "examples" / "Yersinia_pestis_pPCP1_NC_005816.fna"
    sheet = tmp_path / "samples.tsv"
    sheet.write_text("sample\tfasta\tvcf\n"
                     f"a\t{tmp_path / 'notes.fa'}\t\nb\t{fasta}\t{tmp_path / 'empty.vcf'}\n"
                     f"c\t{tmp_path / 'notes.fa'}\t{fasta}\n")
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "-n", "--config",
                               f"samples={sheet}"], workdir, data_root)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "sample files of the wrong kind" in out
    assert "a fasta: " in out and "notes.fa is an unrecognised text file, not FASTA" in out
    assert "b vcf: " in out and "empty.vcf is empty" in out
    assert "c vcf: " in out and "is FASTA, not VCF or BCF" in out
    sheet.write_text(f"sample\tfasta\nok\t{fasta}\n")
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "-n", "--config",
                               f"samples={sheet}", f"model={tmp_path / 'nomodel'}"], workdir,
               data_root)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "model: model checkpoint" in out and "not found" in out


@pytest.mark.parametrize("setting, words", [
    # a boolean: false adds --no-orf-scorer to each shard's command
    ("orf_scorer: sometimes", ("orf_scorer", "boolean")),
    # a probability below 1 (genoctx annotate --min-score)
    ("min_score: 1.0", ("min_score",)),
    ("domain: eukaryota", ("domain", "archaea")),
])
def test_config_schema_refuses_bad_annotate_settings(setting, words, workdir, data_root,
                                                     tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"annotate:\n  {setting}\n")
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "-n", "--configfile",
                               "config/config.yaml", str(bad)], workdir, data_root)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and all(w in out for w in words), out[-2000:]


@pytest.fixture(scope="module")
def results(workdir, data_root) -> Path:
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "--cores", "2"], workdir,
               data_root)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    return workdir / "results"


def _gff3_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    lines = path.read_text().splitlines()
    return [ln for ln in lines if ln.startswith("#")], \
        [ln.split("\t") for ln in lines if ln and not ln.startswith("#")]


@pytest.mark.slow
def test_every_output_exists(results):
    for s in SAMPLES:
        for suffix in ("gff3", *(f"{t}.bedgraph" for t in TRACKS)):
            assert (results / "annotate" / f"{s}.{suffix}").stat().st_size > 0
        assert (results / "annotate" / f"{s}.bed").is_file()
        # proteins: one per merged GFF3 gene, with its ID
        genes = [r[8].split("ID=")[1].split(";")[0] for r in
                 _gff3_rows(results / "annotate" / f"{s}.gff3")[1] if r[2] == "CDS"]
        faa = (results / "annotate" / f"{s}.faa").read_text()
        assert [h[1:].split(" # ")[0] for h in faa.splitlines() if h.startswith(">")] == \
            [g.removeprefix("cds_") for g in genes]
    # ex1 is 3 kb of human chr1: no bacterial gene in it, so its BED may be empty
    assert (results / "annotate" / "pPCP1.bed").stat().st_size > 0
    assert (results / "score" / "BRCA1.vcf.gz.tbi").is_file()
    assert (results / "evaluate" / "pPCP1" / "metrics.json").is_file()
    assert (results / "evaluate" / "ex1" / "read_support.tsv").is_file()
    assert (results / "report" / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # samples without a VCF / truth / BAM get no such stage
    assert not (results / "score" / "pPCP1.vcf.gz").exists()
    assert not (results / "evaluate" / "BRCA1").exists()


@pytest.mark.slow
def test_every_shard_gets_the_domain_of_its_whole_genome(results, workdir, data_root,
                                                        tmp_path):
    """Rule sample_domain names each genome's domain once (none of these holds a 16S/23S
    gene: auto) and every shard of it reads that file; a domain set in the config goes to
    the shards as it is, with no search."""
    for s in SAMPLES:
        assert (results / "annotate" / s / "domain.txt").read_text() == "auto\n"
    base = _snakemake() + ["--snakefile", "../workflow/Snakefile", "-n", "-p", "--forcerun",
                           "annotate_shard", "--configfile", "config/config.yaml"]
    res = _run(base + ["--", "results/annotate/BRCA1.gff3"], workdir, data_root)
    shards = [ln for ln in res.stdout.splitlines() if "genoctx annotate" in ln]
    assert res.returncode == 0 and len(shards) == 2, (res.stdout + res.stderr)[-3000:]
    assert all("--domain $(cat results/annotate/BRCA1/domain.txt)" in ln for ln in shards)
    told = tmp_path / "archaea.yaml"
    told.write_text("annotate:\n  domain: archaea\n")
    res = _run(base + [str(told), "--forcerun", "sample_domain", "--",
                       "results/annotate/BRCA1.gff3"], workdir, data_root)
    shards = [ln for ln in res.stdout.splitlines() if "genoctx annotate" in ln]
    assert res.returncode == 0 and len(shards) == 2, (res.stdout + res.stderr)[-3000:]
    assert all("--domain archaea " in ln for ln in shards)
    assert "rule sample_domain" not in res.stdout


@pytest.mark.slow
@pytest.mark.parametrize("sample", SAMPLES)
def test_merged_gff3_is_valid(results, sample, data_root, workdir):
    from genoctx.io.fasta import FastaFile

    path = results / "annotate" / f"{sample}.gff3"
    headers, rows = _gff3_rows(path)
    assert headers[0] == "##gff-version 3"
    assert sum(h.startswith("##gff-version") for h in headers) == 1
    regions = {h.split()[1]: int(h.split()[3]) for h in headers if h.startswith("##sequence-region")}
    fasta = {"pPCP1": "examples/Yersinia_pestis_pPCP1_NC_005816.fna", "ex1": "reads/ex1/ex1.fa",
             "BRCA1": "variants/brca1_sge/NG_005905.2_BRCA1_RefSeqGene.fasta.gz",
             "pPCP1cut": workdir / "resources" / "pPCP1_cut.fa",
             "pPCP1ring": workdir / "resources" / "pPCP1_cut.fa"}[sample]
    with FastaFile(data_root / fasta) as fa:  # an absolute path stays as it is
        assert regions == dict(fa.lengths)  # escaping leaves these names as they are
    ids = [dict(kv.split("=", 1) for kv in r[8].split(";"))["ID"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate IDs"
    parents = {dict(kv.split("=", 1) for kv in r[8].split(";")).get("Parent") for r in rows}
    assert parents - {None} <= set(ids)
    # a circle's features may end past its length (across the origin), as GFF3 writes them
    circles = {r[0] for r in rows if r[2] == "region" and "Is_circular=true" in r[8]}
    for r in rows:
        n = regions[r[0]]
        assert len(r) == 9 and 1 <= int(r[3]) <= int(r[4])
        assert int(r[4]) <= n or (r[0] in circles and int(r[3]) <= n and int(r[4]) < 2 * n)
    # no gene kept twice from overlapping chunks: (contig, strand, 3' end) is unique
    ends = [(r[0], r[6], r[4] if r[6] == "+" else r[3]) for r in rows if r[2] == "CDS"]
    assert len(ends) == len(set(ends))


@pytest.mark.slow
def test_locus_tag_numbers_the_merged_genome_across_its_shards(results):
    """BRCA1 (locus_tag HSBRCA1, 2 chunks) gets HSBRCA1_00001... in position order over both
    shards, in the GFF3 and the proteins; pPCP1 (no tag) keeps contig-based IDs."""
    _, rows = _gff3_rows(results / "annotate" / "BRCA1.gff3")
    genes = sorted((int(r[3]), dict(kv.split("=", 1) for kv in r[8].split(";"))["ID"])
                   for r in rows if r[2] == "gene")
    assert len(genes) >= 2
    assert [g for _, g in genes] == [f"HSBRCA1_{n:05d}" for n in range(1, len(genes) + 1)]
    faa = (results / "annotate" / "BRCA1.faa").read_text()
    assert {h[1:].split(" # ")[0] for h in faa.splitlines() if h.startswith(">")} <= \
        {g for _, g in genes}
    _, rows = _gff3_rows(results / "annotate" / "pPCP1.gff3")
    assert all("locus_tag=" not in r[8] for r in rows)


@pytest.mark.parametrize(("column", "values", "messages"), [
    ("locus_tag", ("YP", "YP"), ("locus tag(s) repeated",)),  # pooled IDs would collide
    ("closed", ("maybe", "Yes"), ("maybe", "closed")),        # not yes/no/true/false
    ("circular", ("declared", "some"), ("some", "circular")),  # yes/no/true/false/declared
])
def test_bad_sample_sheet_column_fails_before_running(workdir, data_root, tmp_path, column,
                                                      values, messages):
    sheet = tmp_path / "samples.tsv"
    fasta = "examples/Yersinia_pestis_pPCP1_NC_005816.fna"
    sheet.write_text(f"sample\tfasta\t{column}\na\t{fasta}\t{values[0]}\n"
                     f"b\t{fasta}\t{values[1]}\n")
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "-n", "--config",
                               f"samples={sheet}"], workdir, data_root)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and all(m in out for m in messages)


def test_sample_names_that_would_share_output_paths_fail_before_running(workdir, data_root,
                                                                         tmp_path):
    """Sample x writes results/annotate/x.faa; sample x.faa needs that path as a folder."""
    sheet = tmp_path / "samples.tsv"
    fasta = "examples/Yersinia_pestis_pPCP1_NC_005816.fna"
    sheet.write_text(f"sample\tfasta\nx\t{fasta}\nx.faa\t{fasta}\nx.fa\t{fasta}\n")
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "-n", "--config",
                               f"samples={sheet}"], workdir, data_root)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "x and x.faa" in out and "would share output paths" in out
    assert "x and x.fa " not in out  # x.fa shares nothing with x


@pytest.mark.slow
def test_sharded_sample_keeps_each_shard_gene_from_its_own_core(results):
    """BRCA1 ran as 2 overlapping chunks: the merged genes are exactly the genes each chunk
    owns (3' end inside its core)."""
    shards = sorted((results / "annotate" / "BRCA1" / "shards").glob("*.bed"))
    assert len(shards) == 2
    owned = set()
    for bed in shards:
        *_, core = bed.read_text().split("\t")
        a, b = map(int, core.strip().removeprefix("core=").split("-"))
        _, rows = _gff3_rows(results / "annotate" / "BRCA1" / "parts" / f"{bed.stem}.gff3")
        for r in rows:
            if r[2] == "CDS":
                end = int(r[4]) - 1 if r[6] == "+" else int(r[3]) - 1
                if a <= end < b:
                    owned.add((int(r[3]), int(r[4]), r[6]))
    _, merged = _gff3_rows(results / "annotate" / "BRCA1.gff3")
    assert {(int(r[3]), int(r[4]), r[6]) for r in merged if r[2] == "CDS"} == owned


@pytest.mark.slow
def test_closed_sample_gets_no_gene_off_its_ends(results, workdir, tmp_path, cli):
    """pPCP1cut (pPCP1 opened inside a gene) is marked closed: its merged genes stay inside the
    sequence, where an open run of the same file has genes running off both ends; the other
    samples are not closed."""
    from genoctx.io.writers import read_gff3_genes

    merged = read_gff3_genes(results / "annotate" / "pPCP1cut.gff3")
    assert merged and not any(any(g.partial) for g in merged)
    fasta = workdir / "resources" / "pPCP1_cut.fa"
    code, _, err = cli(["annotate", fasta, "--model", "none", "--formats", "gff3", "--out",
                        tmp_path / "open", "--quiet"])
    assert code == 0, err
    n = int(next(ln for ln in (tmp_path / "open.gff3").read_text().splitlines()
                 if ln.startswith("##sequence-region")).split()[3])
    partial = [g for g in read_gff3_genes(tmp_path / "open.gff3") if any(g.partial)]
    assert any(g.start < 3 for g in partial) and any(g.end > n - 3 for g in partial)
    # the genes clear of the ends are the same
    inner = {(g.strand, g.start, g.end) for g in read_gff3_genes(tmp_path / "open.gff3")
             if 500 < g.start and g.end < n - 500}
    assert inner and inner <= {(g.strand, g.start, g.end) for g in merged}


@pytest.mark.slow
def test_circular_sample_calls_the_gene_across_the_origin(results):
    """pPCP1ring is the opened plasmid of pPCP1cut, whose header says circular=true, marked
    circular "declared" (genoctx annotate --circular-declared): the gene its opening cut
    (4,815-5,888 on pPCP1, minus strand) comes back whole across the origin, with the protein
    that the pPCP1 sample's merged annotation gives it."""
    from genoctx.io.writers import read_gff3_genes

    path = results / "annotate" / "pPCP1ring.gff3"
    n = int(next(ln for ln in path.read_text().splitlines()
                 if ln.startswith("##sequence-region")).split()[3])
    assert f"\tregion\t1\t{n}\t" in path.read_text()
    genes = read_gff3_genes(path)
    assert genes and not any(any(g.partial) for g in genes)
    (across,) = [g for g in genes if g.end > n]
    assert (across.start, across.end, across.strand) == (4814 - 5300 + n, 5888 - 5300 + n, -1)

    def proteins(sample):
        text = (results / "annotate" / f"{sample}.faa").read_text().split(">")[1:]
        return {tuple(r.split(" # ")[1:3]): "".join(r.splitlines()[1:]) for r in text}

    ring, plain = proteins("pPCP1ring"), proteins("pPCP1")
    assert ring[(str(across.start + 1), str(across.end))] == plain[("4815", "5888")]
    bed = [ln.split("\t") for ln in (results / "annotate" / "pPCP1ring.bed").read_text().splitlines()]
    name = next(r[3] for r in bed if int(r[2]) == n)
    assert sorted((int(r[1]), int(r[2])) for r in bed if r[3] == name) == \
        [(0, across.end - n), (across.start, n)]


@pytest.mark.slow
@pytest.mark.parametrize("track", TRACKS)
def test_merged_bedgraph_tiles_every_contig_once(results, track):
    for sample in SAMPLES:
        headers, _ = _gff3_rows(results / "annotate" / f"{sample}.gff3")
        lengths = {h.split()[1]: int(h.split()[3]) for h in headers if "sequence-region" in h}
        lines = (results / "annotate" / f"{sample}.{track}.bedgraph").read_text().splitlines()
        assert lines[0] == f'track type=bedGraph name="{track}"'
        at = {}
        for ln in lines[1:]:
            contig, s, e, v = ln.split("\t")
            assert int(s) == at.get(contig, 0) and int(e) > int(s), ln  # sorted, no gap/overlap
            assert 0.0 <= float(v) <= 1.0
            at[contig] = int(e)
        assert at == lengths


@pytest.mark.slow
def test_scored_vcf_is_indexed_and_keeps_every_input_record(results, workdir):
    with pysam.VariantFile(str(workdir / "resources" / "brca1_sge_subset.vcf")) as vf:
        expected = [(r.pos, r.ref, r.alts) for r in vf]
    with pysam.VariantFile(str(results / "score" / "BRCA1.vcf.gz")) as vf:
        for key in ("GCX_DLL", "GCX_CLASS", "GCX_CONSEQ"):
            assert key in vf.header.info
        assert "BRCA1.gff3" in str(vf.header)  # consequences from the merged annotation
        got = list(vf.fetch("NG_005905.2"))   # needs the tabix index
    assert [(r.pos, r.ref, r.alts) for r in got] == expected
    assert all(math.isfinite(r.info["GCX_DLL"][0]) for r in got)
    assert all(r.info["GCX_CONSEQ"][0] for r in got)


@pytest.mark.slow
def test_report_has_one_row_per_sample(results):
    with open(results / "report" / "samples.tsv") as fh:
        rows = {r["sample"]: r for r in csv.DictReader(fh, delimiter="\t")}
    assert list(rows) == list(SAMPLES)
    doc = json.loads((results / "evaluate" / "pPCP1" / "metrics.json").read_text())
    f1 = next(r["value"] for b in doc["benchmarks"].values() for r in b["rows"]
              if r["metric"] == "gene f1")
    assert float(rows["pPCP1"]["gene_f1"]) == pytest.approx(f1, abs=1e-4)
    assert rows["BRCA1"]["variants"] == rows["BRCA1"]["scored"] == "12"
    assert rows["BRCA1"]["shards"] == "2" and rows["ex1"]["shards"] == "2"
    assert rows["ex1"]["gene_f1"] == "" and rows["pPCP1"]["variants"] == ""
    assert {r["domain"] for r in rows.values()} == {"auto"}  # no 16S/23S gene in any
    _, genes = _gff3_rows(results / "annotate" / "ex1.gff3")
    with open(results / "evaluate" / "ex1" / "read_support.tsv") as fh:
        support = list(csv.DictReader(fh, delimiter="\t"))
    assert len(support) == sum(r[2] == "CDS" for r in genes)
    assert all(float(r["mean_depth"]) >= 0 for r in support)


@pytest.mark.slow
def test_scoring_without_an_annotation_reads_declared_circles_whole(workdir, data_root, tmp_path):
    """With ``score.annotation: none`` the workflow predicts genes for the consequences itself
    (rule score_genes): a sample whose circles are "declared" passes --circular-declared to
    that genoctx annotate, so the opened plasmid (circular=true header) is read whole, as its
    annotation is, and the gene across its origin gives the variants at both ends theirs."""
    wf = tmp_path / "wf"
    shutil.copytree(workdir.parent, wf, ignore=shutil.ignore_patterns(
        "results", "logs", ".snakemake"))
    test_dir = wf / ".test"
    fasta = test_dir / "resources" / "pPCP1_cut.fa"
    name = fasta.read_text().split()[0][1:]
    seq = "".join(ln for ln in fasta.read_text().splitlines()[1:])
    alt = {"A": "C", "C": "G", "G": "T", "T": "A"}
    rows = [f"{name}\t{p + 1}\t.\t{seq[p]}\t{alt[seq[p]]}\t.\t.\t." for p in (0, 1, len(seq) - 1)]
    (test_dir / "resources" / "ring.vcf").write_text(
        f"##fileformat=VCFv4.2\n##contig=<ID={name},length={len(seq)}>\n"
        "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n" + "\n".join(rows) + "\n")
    (test_dir / "config" / "ring.tsv").write_text(
        "sample\tfasta\tvcf\tcircular\n"
        "ring\tresources/pPCP1_cut.fa\tresources/ring.vcf\tdeclared\n")
    header, records = _score_without_annotation(test_dir, data_root, "ring", "ring.tsv")
    said = header.info["GCX_CONSEQ"].description
    got = [(r.pos, r.info["GCX_CONSEQ"]) for r in records]
    assert "from the annotation genes.gff3" in said
    genes = (test_dir / "results" / "score" / "ring" / "genes.gff3").read_text()
    assert f"\tregion\t1\t{len(seq)}\t" in genes and "Is_circular=true" in genes
    assert [p for p, _ in got] == [1, 2, len(seq)] and all(c[0] != "noncoding" for _, c in got)


def test_sample_sheet_without_samples_fails_before_running(workdir, data_root, tmp_path):
    """A sheet of only its header line would write an empty report over the last one."""
    sheet = tmp_path / "samples.tsv"
    sheet.write_text("sample\tfasta\tvcf\n")
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "-n", "--config",
                               f"samples={sheet}"], workdir, data_root)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "names no sample (only its header line)" in out, out[-2000:]


def test_embl_truth_fails_before_running(workdir, data_root, tmp_path):
    """genoctx eval does not read EMBL: an EMBL truth is refused with the sheet, not after the
    annotation."""
    from Bio import SeqIO

    sheet = tmp_path / "samples.tsv"
    embl = tmp_path / "pPCP1.embl"
    SeqIO.convert(str(data_root / "examples" / "Yersinia_pestis_pPCP1_NC_005816.gb"), "genbank",
                  str(embl), "embl")
    sheet.write_text("sample\tfasta\ttruth\n"
                     f"a\texamples/Yersinia_pestis_pPCP1_NC_005816.fna\t{embl}\n")
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "-n", "--config",
                               f"samples={sheet}"], workdir, data_root)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "sample files of the wrong kind" in out, out[-2000:]
    assert "a truth: " in out and "is EMBL, not GenBank, GFF3 or GTF; convert it" in out


def _copy_workflow(workdir: Path, tmp_path: Path) -> Path:
    """A fresh copy of the .test folder (and the workflow beside it), without results."""
    wf = tmp_path / "wf"
    shutil.copytree(workdir.parent, wf, ignore=shutil.ignore_patterns(
        "results", "logs", ".snakemake"))
    return wf / ".test"


@pytest.mark.slow
def test_cram_and_sam_reads_give_read_support(workdir, data_root, tmp_path):
    """The bam column takes CRAM (decoded against the sample's FASTA) and SAM (sorted into a
    BAM) as the README says: samtools' ex1 reads in both give the depths of the BAM."""
    test_dir = _copy_workflow(workdir, tmp_path)
    ex1 = data_root / "reads" / "ex1"
    res_dir = test_dir / "resources"
    pysam.view("-h", "-o", str(res_dir / "ex1.sam"), str(ex1 / "ex1.bam"), catch_stdout=False)
    pysam.view("-C", "-T", str(ex1 / "ex1.fa"), "-o", str(res_dir / "ex1.cram"),
               str(ex1 / "ex1.bam"), catch_stdout=False)
    (test_dir / "config" / "reads.tsv").write_text(
        "sample\tfasta\tbam\n" + "".join(f"{n}\treads/ex1/ex1.fa\t{b}\n" for n, b in (
            ("bam", "reads/ex1/ex1.bam"), ("cram", "resources/ex1.cram"),
            ("sam", "resources/ex1.sam"))))
    targets = [f"results/evaluate/{n}/read_support.tsv" for n in ("bam", "cram", "sam")]
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "--cores", "2",
                               "--config", "samples=config/reads.tsv", "model=none", "--",
                               *targets], test_dir, data_root)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    tables = [(test_dir / t).read_text() for t in targets]
    assert len(tables[0].splitlines()) > 1 and tables[1] == tables[0] and tables[2] == tables[0]


@pytest.mark.slow
def test_a_failing_shell_rule_prints_genoctx_error_on_the_console(workdir, data_root, tmp_path):
    """A shell rule's output goes to its log, but the error's line (genoctx: error: ...) reaches
    the console too, and the run fails: device cuda on a machine without CUDA."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: device cuda does not fail here")
    test_dir = _copy_workflow(workdir, tmp_path)
    (test_dir / "config" / "one.tsv").write_text(
        "sample\tfasta\npPCP1\texamples/Yersinia_pestis_pPCP1_NC_005816.fna\n")
    res = _run(_snakemake() + ["--snakefile", "../workflow/Snakefile", "--cores", "1",
                               "--config", "samples=config/one.tsv", "device=cuda", "--",
                               "results/annotate/pPCP1.gff3"], test_dir, data_root)
    assert res.returncode != 0
    line = "genoctx: error: --device cuda was asked for, but no CUDA device is available"
    assert line in res.stderr, res.stderr[-3000:]
    assert line in (test_dir / "logs" / "annotate" / "pPCP1" / "0000.log").read_text()


def test_config_decides_the_gpus_and_slurm_partition_of_a_job(workdir, data_root, tmp_path):
    """annotate.gpu / score.gpu set a GPU job's gpu resource and its slurm_partition
    (slurm.gpu_partition when it asks for GPUs, else slurm.cpu_partition); the Slurm profile
    overrides neither. Checked on the dry run's resources of annotate_shard (after its
    checkpoint), and through the profile where snakemake-executor-plugin-slurm is installed."""
    import yaml

    profile = yaml.safe_load((PIPELINE / "profiles" / "slurm" / "config.yaml").read_text())
    assert "slurm_partition" not in profile["default-resources"]
    assert not any({"gpu", "slurm_partition"} & set(r) for r in profile["set-resources"].values())
    test_dir = _copy_workflow(workdir, tmp_path)
    (test_dir / "config" / "one.tsv").write_text(
        "sample\tfasta\npPCP1\texamples/Yersinia_pestis_pPCP1_NC_005816.fna\n")
    base = _snakemake() + ["--snakefile", "../workflow/Snakefile", "--configfile",
                           "config/config.yaml", "--config", "samples=config/one.tsv"]
    res = _run(base + ["--cores", "1", "--", "results/annotate/pPCP1/shards"], test_dir,
               data_root)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
        profiles = [[], ["--profile", str(test_dir.parent / "profiles" / "slurm")]]
    except ImportError:
        profiles = [[]]
    for gpus, partition in ((0, "cpu_x"), (1, "gpu_x")):
        (test_dir / "config" / "gpu.yaml").write_text(
            f"annotate:\n  gpu: {gpus}\nslurm:\n  cpu_partition: cpu_x\n"
            "  gpu_partition: gpu_x\n")
        for extra in profiles:
            res = _run(base[:5] + ["config/gpu.yaml"] + base[5:] + extra
                       + ["-n", "--", "results/annotate/pPCP1.gff3"], test_dir, data_root)
            out = res.stdout + res.stderr
            assert res.returncode == 0, out[-3000:]
            job = out.split("rule annotate_shard:")[1].split("\n\n")[0]
            assert f"gpu={gpus}," in job and f"slurm_partition={partition}" in job, job


HINF = "genomes/bacteria/Haemophilus_influenzae_Rd_KW20.gbff.gz"
# SNVs at the first base of CDS that genoctx annotate --model none calls on the first 400 kb of
# H. influenzae Rd KW20: genes predicted around one variant (40 kb, under 150 kb: from the
# pre-trained bank) or around six (self-trained) start in different places there
HINF_SNVS = (1214, 11881, 165924, 229425, 294525, 369588)


@pytest.mark.slow
def test_scoring_without_an_annotation_is_the_same_for_every_chunking(workdir, data_root,
                                                                      tmp_path):
    """score.annotation: none predicts the genes once on the sample's whole sequence, so
    GCX_CLASS and GCX_CONSEQ do not depend on score.chunk_records (1 or 6 records a chunk)."""
    from genoctx.io.annotation import read_sequences

    test_dir = _copy_workflow(workdir, tmp_path)
    ((_, seq),) = read_sequences(data_root / HINF)
    seq = seq[:400_000].decode()
    (test_dir / "resources" / "hinf.fa").write_text(f">hinf\n{seq}\n")
    alt = {"A": "C", "C": "G", "G": "T", "T": "A"}
    (test_dir / "resources" / "hinf.vcf").write_text(
        f"##fileformat=VCFv4.2\n##contig=<ID=hinf,length={len(seq)}>\n"
        "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
        + "".join(f"hinf\t{p}\t.\t{seq[p - 1]}\t{alt[seq[p - 1]]}\t.\t.\t.\n"
                  for p in HINF_SNVS))
    (test_dir / "config" / "hinf.tsv").write_text(
        "sample\tfasta\tvcf\nhinf\tresources/hinf.fa\tresources/hinf.vcf\n")
    got = []
    for records in (1, 6):
        _, scored = _score_without_annotation(
            test_dir, data_root, "hinf", "hinf.tsv",
            f"  chunk_records: {records}\n  context: 256\n")
        got.append([(r.pos, r.info["GCX_CLASS"], r.info["GCX_CONSEQ"]) for r in scored])
        chunks = len(list((test_dir / "results" / "score" / "hinf" / "chunks").glob("*.vcf")))
        assert chunks == len(HINF_SNVS) // records
        shutil.rmtree(test_dir / "results" / "score")
    assert [p for p, *_ in got[0]] == list(HINF_SNVS)
    assert got[0] == got[1]


def test_a_failing_script_names_its_error_on_the_console_and_logs_the_traceback(tmp_path,
                                                                               capfd):
    """Snakemake's console says only "RuleException ... returned non-zero exit status": the
    error's own line is printed there too, the traceback goes to the rule's log."""
    from types import SimpleNamespace

    from genoctx.errors import InputError

    smk_mod = _script("_smk")
    log = tmp_path / "rule.log"

    def main(smk):
        raise InputError("x.fa holds no sequence to annotate")

    with pytest.raises(InputError):
        smk_mod.run_logged(main, SimpleNamespace(log=[str(log)]))
    err = capfd.readouterr().err
    assert f"genoctx: error: x.fa holds no sequence to annotate (traceback in {log})" in err
    assert "Traceback" in log.read_text() and "Traceback" not in err
