"""`genoctx info`: format detected from content; FASTA stats against naive counts and pysam."""

import gzip
import json
import shutil
import subprocess

import pysam
import pytest
from Bio import SeqIO


@pytest.fixture
def run_cli(capfd):
    """Like the `cli` fixture, but captures file descriptors too (htslib writes to fd 2)."""
    from genoctx.cli.app import run

    def _run(argv):
        code = run([str(a) for a in argv])
        out, err = capfd.readouterr()
        return code, out, err

    return _run


def _naive(name: str, seq: str) -> dict:
    acgt = sum(c in "ACGTacgt" for c in seq)
    gc = sum(c in "GCgc" for c in seq)
    n = sum(c in "Nn" for c in seq)
    return {"name": name, "length": len(seq), "n_count": len(seq) - acgt,
            "iupac": len(seq) - acgt - n,
            "softmasked": sum(c.islower() for c in seq), "gc": gc / acgt if acgt else None}


def test_fasta_text_and_json_on_real_data(cli, data_root):
    path = data_root / "reads" / "celegans_chrI" / "ce.fa"
    code, out, err = cli(["info", path])
    assert code == 0, err
    assert "7 records, 1,039,800 bp" in out
    assert "CHROMOSOME_I" in out and "1,009,800" in out
    code, out, _ = cli(["info", path, "--json"])
    data = json.loads(out)
    assert data["format"] == "fasta" and data["compression"] == "none"
    with pysam.FastaFile(str(path)) as ref:
        assert [(r["name"], r["length"]) for r in data["records"]] == list(
            zip(ref.references, ref.lengths))
        chr_v = ref.fetch("CHROMOSOME_V")
    assert data["records"][4] == _naive("CHROMOSOME_V", chr_v)
    assert data["totals"]["length"] == 1_039_800 and data["totals"]["records"] == 7
    assert data["totals"]["duplicate_names"] == 0


def test_softmask_iupac_and_disguised_gzip(cli, tmp_path):
    seqs = {"s1": "ACGTacgtNNRYkmACGTacg", "s2": "nnnn", "s3": "GGCCaatt"}
    text = "".join(f">{k} desc\n{v}\n" for k, v in seqs.items())
    path = tmp_path / "looks_like.bam"  # content decides, not the name
    path.write_bytes(gzip.compress(text.encode()))
    code, out, err = cli(["info", path, "--json"])
    assert code == 0, err
    data = json.loads(out)
    assert data["format"] == "fasta" and data["compression"] == "gzip"
    assert data["records"] == [_naive(k, v) for k, v in seqs.items()]
    total = "".join(seqs.values())
    assert data["totals"]["softmasked"] == sum(c.islower() for c in total)
    code, out, _ = cli(["info", path])
    assert code == 0 and "s2" in out and "100.00" in out  # s2 is all N
    lines = out.splitlines()
    assert lines[1].split()[:5] == ["name", "length", "N", "N%", "other"]
    s1 = next(ln.split() for ln in lines if ln.startswith("s1"))
    assert s1[:5] == ["s1", "21", "2", "9.52", "4"]  # NN apart from RYkm


def test_repeated_names_are_described_and_reported(cli, data_root):
    path = data_root / "classification" / "promoters" / "Bacillus_prom.fa"
    code, out, err = cli(["info", path, "--json"])
    assert code == 0, err
    data = json.loads(out)
    names = [r.id for r in SeqIO.parse(path, "fasta")]
    assert [r["name"] for r in data["records"]] == names
    assert data["totals"]["duplicate_names"] == len(names) - len(set(names)) > 0
    code, out, _ = cli(["info", path])
    assert code == 0 and "repeat an earlier name" in out


def test_repeated_names_note_names_them_and_gives_a_fix_that_works(cli, tmp_path):
    """The note said 'fetching by name (tokenize --region) refuses this file', named no name,
    and gave no fix: tokenize, embed and annotate refuse the whole file. It now names the
    repeated names and gives a rename command, which gives a file they take."""
    path = tmp_path / "dup.fa"
    path.write_bytes(b">a one\nACGT\n>b\nGG\n>a two\nTT\n>a\tthree\nCC\n")
    code, out, err = cli(["info", path])
    assert code == 0, err
    note = out[out.index("note:"):]
    assert note.startswith("note: 2 records repeat an earlier name")
    assert "'a' (3 records)" in note and "'b'" not in note
    assert "tokenize, embed and annotate refuse this file" in note
    command = note.splitlines()[-1].strip()
    assert command.startswith("awk ") and command.endswith(" > renamed.fa")
    if shutil.which("awk"):
        subprocess.run(command, shell=True, cwd=tmp_path, check=True)
        assert [r.id for r in SeqIO.parse(tmp_path / "renamed.fa", "fasta")] == [
            "a", "b", "a_2", "a_3"]
        code, out, err = cli(["info", tmp_path / "renamed.fa"])
        assert code == 0 and "note:" not in out, err


def test_genbank(cli, example_genbank):
    code, out, err = cli(["info", example_genbank, "--json"])
    assert code == 0, err
    data = json.loads(out)
    records = list(SeqIO.parse(example_genbank, "genbank"))
    assert data["format"] == "genbank"
    assert [(r["name"], r["length"]) for r in data["records"]] == [(r.id, len(r.seq))
                                                                   for r in records]
    assert data["records"][0]["features"] == len(records[0].features)
    code, out, err = cli(["info", example_genbank])
    assert code == 0 and ", 1 record, 9,609 bp" in out.splitlines()[0]


@pytest.mark.parametrize("compress", [lambda b: __import__("lzma").compress(b),
                                      lambda b: __import__("bz2").compress(b)],
                         ids=["xz", "bzip2"])
def test_compressed_genbank(cli, example_genbank, tmp_path, compress):
    """GenBank in xz or bzip2, which info detects: it was opened as plain text (a decode
    error), and annotate found 'no genbank record with a sequence'."""
    path = tmp_path / "p.gb.x"
    path.write_bytes(compress(example_genbank.read_bytes()))
    code, out, err = cli(["info", path, "--json"])
    assert code == 0, err
    assert [(r["name"], r["length"]) for r in json.loads(out)["records"]] == [
        ("NC_005816.1", 9609)]
    code, _, err = cli(["annotate", path, "--model", "none", "--rna", "none", "--quiet",
                        "--formats", "gff3", "--out", tmp_path / "a"])
    assert code == 0, err
    assert "NC_005816.1\tgenoctx\tCDS" in (tmp_path / "a.gff3").read_text()


def test_zstd_is_named(run_cli, tmp_path):
    path = tmp_path / "x.fa.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd" + bytes(20))  # a zstd frame's magic number
    code, _, err = run_cli(["info", path])
    assert code == 2 and "zstd-compressed; decompress it (zstd -d)" in err, err


def test_bam_goes_to_bam_info(cli, data_root):
    pytest.importorskip("genoctx.io.bam")
    path = data_root / "reads" / "ex1" / "ex1.bam"
    code, out, err = cli(["info", path])
    assert code == 0, err
    assert "chr1" in out and "1,575" in out
    assert "None" not in out and "note: read counts come from the index" in out  # no index
    code, out, _ = cli(["info", path, "--json"])
    assert json.loads(out)["format"] == "bam" and json.loads(out)["mapped"] is None


def test_an_indexed_bam_shows_the_index_counts(cli, data_root, tmp_path):
    import pysam

    path = tmp_path / "ex1.bam"
    path.write_bytes((data_root / "reads" / "ex1" / "ex1.bam").read_bytes())
    pysam.index(str(path))
    with pysam.AlignmentFile(str(path)) as af:
        mapped = {c: sum(1 for r in af.fetch(c) if not r.is_unmapped) for c in af.references}
    code, out, err = cli(["info", path])
    assert code == 0, err
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()[1:] if ln.startswith("    chr")}
    assert {c: int(r[2].replace(",", "")) for c, r in rows.items()} == mapped
    assert "note:" not in out


def test_vcf_goes_to_vcf_info(cli, tmp_path):
    pytest.importorskip("genoctx.io.vcf")
    vcf = tmp_path / "calls.txt"  # no telling extension
    vcf.write_text("##fileformat=VCFv4.2\n##contig=<ID=chr1,length=1000>\n"
                   "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                   "chr1\t10\t.\tA\tG\t.\tPASS\t.\nchr1\t20\t.\tC\tT\t.\tPASS\t.\n")
    code, out, err = cli(["info", vcf, "--json"])
    assert code == 0, err
    data = json.loads(out)
    assert data["format"] == "vcf"
    assert "chr1" in json.dumps(data)


@pytest.mark.parametrize("case", ["missing", "empty", "unknown", "truncated", "fastq"])
def test_bad_input_fails_cleanly(run_cli, tmp_path, case):
    path = tmp_path / "x"
    if case == "empty":
        path.write_bytes(b"")
    elif case == "unknown":
        path.write_text("just some notes\nnothing genomic\n")
    elif case == "truncated":
        data = gzip.compress(b">a\n" + b"ACGT" * 100_000)
        path.write_bytes(data[: len(data) // 2])
    elif case == "fastq":
        path.write_text("@r1\nACGT\n+\nIIII\n")
    code, out, err = run_cli(["info", path])
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("genoctx: error:"), err
    assert "Traceback" not in out + err


def test_an_index_of_another_bam_is_one_line_not_a_crash(data_root, tmp_path):
    """ex1.bam's index (2 references) beside a copy of the C. elegans BAM (5 @SQ lines), newer
    than it: info segfaulted (exit 139, no message) in htslib's index statistics. It runs in a
    child process so that the old crash fails this test, not the test run."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import genoctx

    ex1 = tmp_path / "ex1.bam"
    ex1.write_bytes((data_root / "reads" / "ex1" / "ex1.bam").read_bytes())
    pysam.index(str(ex1))
    bam = tmp_path / "ce.bam"
    pysam.sort("-o", str(bam), str(data_root / "reads" / "celegans_chrI" / "ce#1000.sam"))
    (tmp_path / "ce.bam.bai").write_bytes((tmp_path / "ex1.bam.bai").read_bytes())
    os.utime(bam, (1_000, 1_000))
    tree = str(Path(genoctx.__file__).parents[1])  # this tree's genoctx in the child
    done = subprocess.run([sys.executable, "-m", "genoctx", "info", str(bam)],
                          check=False, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": tree})
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("genoctx: error: the index "), done.stderr
    assert f"{bam}.bai does not belong to {bam}" in lines[0] and "remove it" in lines[0]
    assert done.stdout == "" and "Traceback" not in done.stderr
