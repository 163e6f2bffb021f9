"""Every command reads its sequence inputs from a pipe (``/dev/fd/N``, as ``<(zcat ...)``
gives) or ``-`` (standard input) exactly as from the file: a pipe can be read once only, and
every reader sniffs the format first and opens the file again."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import threading

import numpy as np
import pytest

from genoctx.io.spool import is_stream, rereadable
from genoctx.io.writers import read_gff3_genes


@contextlib.contextmanager
def piped(data: bytes):
    """A pipe's path (``/dev/fd/N``) that yields ``data`` once, fed by a thread (any size)."""
    read, write = os.pipe()

    def feed():
        with os.fdopen(write, "wb") as fh:
            fh.write(data)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    try:
        yield f"/dev/fd/{read}"
    finally:
        os.close(read)
        t.join(timeout=10)


@pytest.fixture
def stdin(monkeypatch):
    def put(data: bytes):
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    return put


def test_rereadable_copies_a_pipe_and_leaves_a_file(tmp_path, example_fasta):
    data = example_fasta.read_bytes()
    assert not is_stream(example_fasta) and not is_stream(tmp_path) and is_stream("-")
    with rereadable(example_fasta) as path:
        assert path == example_fasta
    with piped(data) as fd:
        assert is_stream(fd)
        with rereadable(fd, name="x.fa") as path:
            assert path.name == "x.fa" and path.read_bytes() == data == path.read_bytes()
        assert not path.exists()  # removed afterwards


def test_info_reads_a_pipe_and_stdin(cli, example_fasta, stdin):
    def run(source):
        code, out, err = cli(["info", source, "--json"])
        assert code == 0, err
        return json.loads(out)

    want = run(example_fasta)
    gz = gzip.compress(example_fasta.read_bytes())
    with piped(gz) as fd:
        got = run(fd)
    assert got["path"] == fd and got["compression"] == "gzip"
    assert got["records"] == want["records"] and got["totals"] == want["totals"]
    stdin(example_fasta.read_bytes())
    got = run("-")
    assert got["path"] == "standard input" and got["records"] == want["records"]


def test_tokenize_reads_a_pipe_and_stdin(cli, tmp_path, example_fasta, stdin):
    def run(source, name):
        out = tmp_path / f"{name}.npz"
        code, _, err = cli(["tokenize", source, "-o", out, "--context", "4096", "-q"])
        assert code == 0, err
        return np.load(out)

    want = run(example_fasta, "file")
    with piped(example_fasta.read_bytes()) as fd:
        got = run(fd, "pipe")
    assert str(got["source"]) == fd
    np.testing.assert_array_equal(got["tokens"], want["tokens"])
    np.testing.assert_array_equal(got["starts"], want["starts"])
    stdin(gzip.compress(example_fasta.read_bytes()))
    got = run("-", "stdin")
    np.testing.assert_array_equal(got["tokens"], want["tokens"])


def test_a_piped_error_names_the_pipe(cli, tmp_path, stdin):
    stdin(b">p\nACGT\n>p\nACGT\n")  # the same name twice
    code, _, err = cli(["tokenize", "-", "-o", tmp_path / "t.npz", "-q"])
    assert code == 2 and "standard input" in err and "genoctx-input-" not in err


def test_embed_reads_a_pipe(cli, tmp_path, example_fasta, model_dir):
    def run(source, name):
        out = tmp_path / f"{name}.npy"
        code, _, err = cli(["embed", source, "-o", out, "--model", model_dir, "--device", "cpu",
                            "--pool", "mean", "-r", "gi|45478711|ref|NC_005816.1|:1-2000",
                            "-q"])
        assert code == 0, err
        return np.load(out)

    want = run(example_fasta, "file")
    with piped(example_fasta.read_bytes()) as fd:
        np.testing.assert_array_equal(run(fd, "pipe"), want)


def test_annotate_reads_a_pipe(cli, tmp_path, example_fasta, monkeypatch):
    args = ["--model", "none", "--formats", "gff3", "-q"]
    assert cli(["annotate", example_fasta, "--out", tmp_path / "file", *args])[0] == 0
    want = [(g.contig, g.strand, g.start, g.end) for g in read_gff3_genes(tmp_path / "file.gff3")]
    monkeypatch.chdir(tmp_path)
    with piped(example_fasta.read_bytes()) as fd:
        code, _, err = cli(["annotate", fd, *args])
    assert code == 0, err
    # a pipe's outputs are named as standard input's, not /dev/fd/N's "N"
    got = [(g.contig, g.strand, g.start, g.end) for g in read_gff3_genes(tmp_path / "stdin.gff3")]
    assert got == want and len(want) > 3


def test_score_variants_reads_a_piped_reference(cli, tmp_path, data_root, model_dir):
    from genoctx.io.fasta import FastaFile

    ref = data_root / "reads" / "human_mpileup" / "mpileup.ref.fa"
    seq = FastaFile(ref).fetch("17").decode()
    alt = "A" if seq[1000].upper() != "A" else "C"
    vcf = tmp_path / "in.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                   f"17\t1001\t.\t{seq[1000]}\t{alt}\t.\t.\t.\n"
                   f"17\t2001\t.\t{seq[2000]}\t{seq[2000]}GA\t.\t.\t.\n")

    def run(reference, named):
        code, out, err = cli(["score-variants", vcf, "-R", reference, "--model", model_dir,
                              "--context", "300", "--device", "cpu", "-q"])
        assert code == 0, err
        assert f"Reference={named}," in out or f"Reference={named}>" in out, out[:3000]
        return [ln for ln in out.splitlines() if not ln.startswith("##")]

    want = run(ref, ref.name)
    assert len(want) == 3 and all("GCX_DLL=" in ln for ln in want[1:])
    with piped(ref.read_bytes()) as fd:  # the header names the pipe, not the copy's name
        assert run(fd, fd) == want


def test_score_variants_reads_the_vcf_from_stdin(cli, tmp_path, example_fasta, stdin):
    from genoctx.io.fasta import FastaFile

    fa = FastaFile(example_fasta)
    contig = fa.contigs[0]
    base = fa.fetch(contig, 99, 100).decode().upper()
    text = ("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
            f"{contig}\t100\t.\t{base}\t{'A' if base != 'A' else 'C'}\t.\t.\t.\n")
    (tmp_path / "in.vcf").write_text(text)
    args = ["-R", example_fasta, "--model", "none", "-q"]
    code, want, err = cli(["score-variants", tmp_path / "in.vcf", *args])
    assert code == 0, err
    stdin(text.encode())
    code, got, err = cli(["score-variants", "-", *args])
    assert code == 0, err
    assert got == want and "GCX_CLASS=" in got
    code, _, err = cli(["score-variants", "-", "-R", "-", "--model", "none", "-q"])
    assert code == 2 and "both be standard input" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_score_variants_writes_bgzip_into_a_named_pipe_without_indexing_it(cli, tmp_path,
                                                                          example_fasta):
    import pysam

    from genoctx.io.fasta import FastaFile

    fa = FastaFile(example_fasta)
    contig = fa.contigs[0]
    base = fa.fetch(contig, 99, 100).decode().upper()
    (tmp_path / "in.vcf").write_text(
        "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
        f"{contig}\t100\t.\t{base}\t{'A' if base != 'A' else 'C'}\t.\t.\t.\n")
    pipe = tmp_path / "out.vcf.gz"
    os.mkfifo(pipe)
    got = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_bytes()), daemon=True)
    reader.start()
    code, _, err = cli(["score-variants", tmp_path / "in.vcf", "-R", example_fasta,
                        "--model", "none", "-q", "-o", pipe])
    reader.join(timeout=10)
    assert code == 0, err
    assert "pipe or device is not indexed" in err and not (tmp_path / "out.vcf.gz.tbi").exists()
    (tmp_path / "copy.vcf.gz").write_bytes(got[0])
    with pysam.VariantFile(str(tmp_path / "copy.vcf.gz")) as vf:
        assert [r.pos for r in vf] == [100] and "GCX_CLASS" in vf.header.info
    assert pipe.exists() and not pipe.is_file()


def test_eval_refuses_a_piped_input_and_leaves_no_folder(cli, tmp_path, example_fasta,
                                                        example_genbank):
    pred = tmp_path / "p"
    assert cli(["annotate", example_fasta, "--model", "none", "--formats", "gff3", "-q",
                "--out", pred])[0] == 0
    out = tmp_path / "new" / "eval"
    with piped((tmp_path / "p.gff3").read_bytes()) as fd:
        code, _, err = cli(["eval", "--predictions", fd, "--truth", example_genbank,
                            "--out", out, "-q"])
    assert code == 2 and "is a pipe" in err and "save it to a file" in err
    assert not (tmp_path / "new").exists()  # the folders the failed run made are gone
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    code, _, _ = cli(["eval", "--predictions", tmp_path / "missing.gff3", "--truth",
                      example_genbank, "--out", kept / "eval", "-q"])
    assert code == 2 and (kept / "notes.txt").read_text() == "mine"
    assert not (kept / "eval").exists()


def test_eval_refuses_a_fasta_that_names_other_sequences(cli, tmp_path, example_fasta,
                                                         example_genbank):
    pred = tmp_path / "p"
    assert cli(["annotate", example_fasta, "--model", "none", "--formats", "gff3", "-q",
                "--out", pred])[0] == 0
    renamed = tmp_path / "renamed.fa"
    renamed.write_bytes(b">pPCP1\n" + example_fasta.read_bytes().split(b"\n", 1)[1])
    # scoring predictions, and scoring the decoders on the FASTA
    for extra in (["--predictions", tmp_path / "p.gff3"], ["--model", "none"]):
        code, _, err = cli(["eval", *extra, "--truth", example_genbank, "--fasta", renamed,
                            "--out", tmp_path / "e", "-q"])
        assert code == 2 and "share no contig names" in err and "pPCP1" in err
    short = tmp_path / "short.fa"  # the right name, the wrong (shorter) sequence
    short.write_bytes(b">NC_005816.1\n" + b"ACGT" * 1000 + b"\n")
    code, _, err = cli(["eval", "--predictions", tmp_path / "p.gff3", "--truth",
                        example_genbank, "--fasta", short, "--out", tmp_path / "e", "-q"])
    assert code == 2 and "past the 4,000 bp" in err
    code, _, err = cli(["eval", "--predictions", tmp_path / "p.gff3", "--truth",
                        example_genbank, "--fasta", example_fasta, "--out", tmp_path / "e", "-q"])
    assert code == 0, err
    doc = json.loads((tmp_path / "e" / "metrics.json").read_text())
    m = next(iter(doc["benchmarks"].values()))["metrics"]
    assert m[m["method"]]["per_base_cds"]["f1"] > 0.9


def test_outputs_go_into_a_pipe_through_dev_stdout(example_fasta, tmp_path):
    """``-o /dev/stdout | cmd``: /dev/stdout links to /proc/self/fd/1, whose target (pipe:[id])
    names no file; tokenize and score-variants write into the pipe all the same."""
    import subprocess
    import sys

    if not os.path.exists("/dev/stdout"):
        pytest.skip("no /dev/stdout here")
    run = [sys.executable, "-m", "genoctx"]
    got = subprocess.run(run + ["tokenize", str(example_fasta), "--context", "4096", "-q",
                                "--out", "/dev/stdout"], capture_output=True,
                         check=False)
    assert got.returncode == 0, got.stderr.decode()
    with np.load(io.BytesIO(got.stdout)) as npz:
        assert npz["tokens"].shape[1] == 4096
    vcf = tmp_path / "v.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
    got = subprocess.run(run + ["score-variants", str(vcf), "--reference", str(example_fasta),
                                "--model", "none", "-q", "--out", "/dev/stdout"],
                         capture_output=True, check=False)
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout.startswith(b"##fileformat=VCF")
