"""`genoctx tokenize` end to end on real data, and every bad input it must refuse cleanly."""

import gzip
from pathlib import Path

import numpy as np
import pysam
import pytest

from genoctx.errors import GenoctxError
from genoctx.tokenize import nucleotide as nt
from genoctx.tokenize.kmer import KmerTokenizer


@pytest.fixture(scope="module")
def ce_fa(data_root) -> Path:
    return data_root / "reads" / "celegans_chrI" / "ce.fa"


@pytest.fixture(scope="module")
def ce_ref(ce_fa):
    with pysam.FastaFile(str(ce_fa)) as fa:
        yield fa


@pytest.fixture
def run_cli(capfd):
    """Like the `cli` fixture, but captures file descriptors too (htslib writes to fd 2)."""
    from genoctx.cli.app import run

    def _run(argv):
        code = run([str(a) for a in argv])
        out, err = capfd.readouterr()
        return code, out, err

    return _run


def _load(path: Path) -> dict:
    with np.load(path) as npz:
        return {k: npz[k] for k in npz.files}


def _windows_to_sequence(d: dict, contig: str) -> str:
    rows = np.flatnonzero(d["contigs"] == contig)
    return "".join(nt.decode(d["tokens"][w, :d["lengths"][w]]) for w in rows)


def ref_upper(ref, contig, start=0, end=None):
    return ref.fetch(contig, start, end).upper()


def test_chromosome_region_one_token_per_base(cli, ce_fa, ce_ref, tmp_path):
    out = tmp_path / "ce.npz"
    code, _, err = cli(["tokenize", ce_fa, "--region", "CHROMOSOME_I", "--context", 131072,
                        "--quiet", "--out", out])
    assert code == 0, err
    d = _load(out)
    assert d["tokens"].shape == (8, 131072) and d["tokens"].dtype == np.uint8
    assert d["starts"].tolist() == [131072 * i for i in range(8)]
    assert d["lengths"].tolist() == [131072] * 7 + [1_009_800 - 7 * 131072]
    assert (d["ends"] - d["starts"]).tolist() == d["lengths"].tolist()
    assert set(d["contigs"]) == {"CHROMOSOME_I"}
    assert _windows_to_sequence(d, "CHROMOSOME_I") == ref_upper(ce_ref, "CHROMOSOME_I")
    assert (d["tokens"][-1, d["lengths"][-1]:] == nt.PAD).all()
    assert d["softmask"].shape == d["tokens"].shape and not d["softmask"].any()
    assert str(d["kind"]) == "nucleotide" and int(d["vocab_size"]) == nt.VOCAB_SIZE
    assert list(tmp_path.iterdir()) == [out]


def test_gzip_and_bgzip_copies_give_identical_tokens(cli, ce_fa, ce_ref, tmp_path):
    gz, bgz = tmp_path / "ce.fa.gz", tmp_path / "ce.bgz.fa.gz"
    gz.write_bytes(gzip.compress(ce_fa.read_bytes(), compresslevel=1))
    pysam.tabix_compress(str(ce_fa), str(bgz))
    results = []
    for src in (ce_fa, gz, bgz):
        out = tmp_path / f"{src.name}.npz"
        code, _, err = cli(["tokenize", src, "--context", 65536, "-q", "--out", out])
        assert code == 0, err
        results.append(_load(out))
    for d in results[1:]:
        for key in ("tokens", "starts", "ends", "contigs", "lengths", "softmask"):
            assert np.array_equal(d[key], results[0][key]), key
    d = results[0]
    assert list(dict.fromkeys(d["contigs"])) == list(ce_ref.references)  # whole file, in order
    for contig in ce_ref.references:
        assert _windows_to_sequence(d, contig) == ref_upper(ce_ref, contig)


def test_overlap_and_bed_regions(cli, ce_fa, ce_ref, tmp_path):
    bed = tmp_path / "r.bed"
    bed.write_text("track name=t\nCHROMOSOME_X\t0\t5000\nCHROMOSOME_I\t1000\t3500\tx\n")
    out = tmp_path / "o.npz"
    code, _, err = cli(["tokenize", ce_fa, "--regions", bed, "--context", 1000, "--overlap",
                        100, "-q", "--out", out])
    assert code == 0, err
    d = _load(out)
    x = d["contigs"] == "CHROMOSOME_X"
    assert d["starts"][x].tolist() == [0, 900, 1800, 2700, 3600, 4500]
    assert d["ends"][x].tolist() == [1000, 1900, 2800, 3700, 4600, 5000]
    i = d["contigs"] == "CHROMOSOME_I"
    assert d["starts"][i].tolist() == [1000, 1900, 2800] and d["ends"][i][-1] == 3500
    for w in range(len(d["tokens"])):
        contig, s, e = str(d["contigs"][w]), int(d["starts"][w]), int(d["ends"][w])
        assert nt.decode(d["tokens"][w, :d["lengths"][w]]) == ref_upper(ce_ref, contig, s, e)


def test_softmask_and_iupac(cli, tmp_path):
    fa = tmp_path / "soft.fa"
    fa.write_bytes(b">s1\nACGTacgtNNRYkmACGT\nacg\n>s2\nttttAAAA\n")
    out = tmp_path / "soft.npz"
    code, _, err = cli(["tokenize", fa, "--region", "s1:3-20", "--context", 8, "-q",
                        "--out", out])
    assert code == 0, err
    d = _load(out)
    seq = "ACGTacgtNNRYkmACGTacg"[2:20]
    flat = np.concatenate([d["tokens"][w, :n] for w, n in enumerate(d["lengths"])])
    mask = np.concatenate([d["softmask"][w, :n] for w, n in enumerate(d["lengths"])])
    assert nt.decode(flat) == "".join(c.upper() if c in "ACGTacgt" else "N" for c in seq)
    assert mask.tolist() == [c.islower() for c in seq]
    assert not d["softmask"][-1, d["lengths"][-1]:].any()


def test_kmer_windows(cli, ce_fa, ce_ref, tmp_path):
    out = tmp_path / "k.npz"
    code, _, err = cli(["tokenize", ce_fa, "--region", "CHROMOSOME_I:1,001-20,004", "--kind",
                        "kmer", "--k", 6, "--context", 1000, "-q", "--out", out])
    assert code == 0, err
    d = _load(out)
    tok = KmerTokenizer(6)
    assert d["tokens"].dtype == np.int32 and int(d["vocab_size"]) == tok.vocab_size
    assert int(d["k"]) == 6 and "softmask" not in d
    n_tokens = tok.num_tokens(19_004)
    assert d["lengths"].sum() == n_tokens == 19_004 // 6 + 19_004 % 6
    assert d["starts"].tolist() == [1000 + 6000 * w for w in range(len(d["starts"]))]
    assert d["ends"][-1] == 20_004
    decoded = "".join(tok.decode(d["tokens"][w, :n]) for w, n in enumerate(d["lengths"]))
    assert decoded == ref_upper(ce_ref, "CHROMOSOME_I", 1000, 20_004)


def test_pileup_windows(cli, data_root, ce_fa, tmp_path):
    pileup = pytest.importorskip("genoctx.tokenize.pileup")
    from genoctx.io.regions import Region
    from genoctx.tokenize.windows import window_tokens

    bam = tmp_path / "ce.bam"
    pysam.sort("-o", str(bam), str(data_root / "reads" / "celegans_chrI" / "ce#1000.sam"))
    pysam.index(str(bam))
    out = tmp_path / "p.npz"
    code, _, err = cli(["tokenize", bam, "--kind", "pileup", "--reference", ce_fa, "--region",
                        "CHROMOSOME_I:1-30,000", "--context", 8192, "-q", "--out", out])
    assert code == 0, err
    d = _load(out)
    ids, channels, names = pileup.tokenize_pileup(str(bam), str(ce_fa),
                                                  Region("CHROMOSOME_I", 0, 30_000))
    tokens, starts = window_tokens(ids, 8192)
    assert np.array_equal(d["tokens"], tokens) and d["starts"].tolist() == starts.tolist()
    assert d["channels"].dtype == np.float16
    assert d["channels"].shape == (len(tokens), 8192, channels.shape[1])
    assert d["channel_names"].tolist() == list(names)
    assert int(d["vocab_size"]) == pileup.PILEUP_VOCAB_SIZE > int(d["tokens"].max())
    expected, _ = window_tokens(channels.astype(np.float16), 8192, pad_id=0)
    assert np.array_equal(d["channels"], expected)


def test_reads_without_base_qualities_are_named_and_min_baseq_0_counts_them(cli, data_root,
                                                                             tmp_path):
    """ex1.bam with QUAL '*' on every read: at the default --min-baseq 13 their bases are not
    counted (as pysam's count_coverage), which a note now says; --min-baseq 0 counts them."""
    src = data_root / "reads" / "ex1"
    bam = tmp_path / "noqual.bam"
    with pysam.AlignmentFile(str(src / "ex1.bam")) as inp, \
            pysam.AlignmentFile(str(bam), "wb", template=inp) as out:
        for read in inp:
            read.query_qualities = None
            out.write(read)
    pysam.index(str(bam))
    runs = {}
    for q in (None, 0):
        npz = tmp_path / f"p{q}.npz"
        argv = ["tokenize", bam, "--kind", "pileup", "--reference", src / "ex1.fa", "-r", "chr1",
                "--context", 2000, "-q", "--out", npz] + ([] if q is None else ["--min-baseq", q])
        code, _, err = cli(argv)
        assert code == 0, err
        runs[q] = (err, _load(npz))
    err, d = runs[None]
    assert "have no base qualities" in err and "--min-baseq 0" in err
    err0, d0 = runs[0]
    assert "no base qualities" not in err0
    covered = np.isin(d0["channels"][..., 0], 0, invert=True)  # log1p(depth) > 0
    assert covered.sum() > 1000 and covered.sum() > np.isin(d["channels"][..., 0], 0,
                                                            invert=True).sum()
    code, _, err = cli(["tokenize", src / "ex1.fa", "--min-mapq", 20, "--out", tmp_path / "n.npz"])
    assert code == 2 and "--kind pileup" in err


def test_pileup_of_a_whole_reference_takes_the_contigs_the_reads_have(cli, data_root, ce_fa,
                                                                       tmp_path):
    """ce.fa also holds X and MtDNA, which the reads' header lacks: without --region those are
    left out with a note (it failed on the first of them)."""
    bam = tmp_path / "ce.bam"
    pysam.sort("-o", str(bam), str(data_root / "reads" / "celegans_chrI" / "ce#1000.sam"))
    out = tmp_path / "all.npz"
    code, _, err = cli(["tokenize", bam, "--kind", "pileup", "--reference", ce_fa,
                        "--context", 100_000, "--out", out])
    assert code == 0, err
    with pysam.AlignmentFile(str(bam)) as af:
        header = list(af.references)
    with pysam.FastaFile(str(ce_fa)) as fa:
        extra = [c for c in fa.references if c not in header]
    assert extra and all(c in err for c in extra) and "left out" in err
    assert sorted(set(_load(out)["contigs"].tolist())) == sorted(header)


# --------------------------------------------------------------------------- bad input

def _bad_inputs(tmp: Path, data_root: Path, example_genbank: Path) -> dict[str, list]:
    ce = data_root / "reads" / "celegans_chrI" / "ce.fa"
    gz = gzip.compress(ce.read_bytes(), compresslevel=1)
    (tmp / "trunc.fa.gz").write_bytes(gz[: len(gz) // 3])
    (tmp / "empty.fa").write_bytes(b"")
    (tmp / "dup.fa").write_bytes(b">a\nACGT\n>b\nAC\n>a\nGG\n")
    (tmp / "bad.bed").write_text("CHROMOSOME_I\t100\n")
    (tmp / "ok.fa").write_bytes(b">a\nACGT\n")
    (tmp / "prot.fa").write_bytes(b">p\nMKVLAAGIVGLLLAQW\n")
    return {
        "missing": [tmp / "nope.fa"],
        "truncated gzip": [tmp / "trunc.fa.gz"],
        "bam as fasta": [data_root / "reads" / "ex1" / "ex1.bam"],
        "genbank as fasta": [example_genbank],
        "empty": [tmp / "empty.fa"],
        "duplicate names": [tmp / "dup.fa"],
        "unknown contig": [ce, "--region", "chrZ:1-100"],
        "off the end": [ce, "--region", "CHROMOSOME_X:4,000-5,001"],
        "malformed region": [ce, "--region", "CHROMOSOME_X:ten-20"],
        "bad bed": [ce, "--regions", tmp / "bad.bed"],
        "context 0": [ce, "--context", 0],
        "overlap >= context": [ce, "--context", 100, "--overlap", 100],
        "region and regions": [ce, "--region", "CHROMOSOME_X", "--regions", tmp / "bad.bed"],
        "pileup without reference": [data_root / "reads" / "ex1" / "ex1.bam", "--kind",
                                     "pileup"],
        "reference without pileup": [ce, "--reference", ce],
        "bad k": [ce, "--kind", "kmer", "--k", 0],
        "k without kmer": [ce, "--k", 3],
        "context too long": [ce, "--context", 3_000_000_000],
        "protein": [tmp / "prot.fa"],
    }


CASES = ["missing", "truncated gzip", "bam as fasta", "genbank as fasta", "empty",
         "duplicate names", "unknown contig", "off the end", "malformed region", "bad bed",
         "context 0", "overlap >= context", "region and regions", "pileup without reference",
         "reference without pileup", "bad k", "k without kmer", "context too long", "protein"]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_fails_cleanly(run_cli, data_root, example_genbank, tmp_path, case):
    inputs = tmp_path / "in"
    inputs.mkdir()
    args = _bad_inputs(inputs, data_root, example_genbank)[case]
    outdir = tmp_path / "out"
    code, out, err = run_cli(["tokenize", *args, "--out", outdir / "t.npz"])
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("genoctx: error:"), err
    assert "Traceback" not in err + out
    assert not outdir.exists() or list(outdir.iterdir()) == []


@pytest.mark.parametrize("args, message", [
    (["{bam}"], "ex1.bam is BAM: aligned reads are tokenized with --kind pileup"),
    (["{bam}", "--reference", "{fa}"], "ex1.bam is BAM: aligned reads are tokenized with"),
    (["{fa}", "--kind", "pileup"], "is FASTA: give the reads as INPUT and this file as "
                                   "--reference"),
])
def test_reads_and_reference_mixed_up_are_named(run_cli, data_root, ce_fa, tmp_path, args,
                                                message):
    bam = data_root / "reads" / "ex1" / "ex1.bam"
    argv = ["tokenize"] + [a.format(bam=bam, fa=ce_fa) for a in args]
    code, _, err = run_cli(argv + ["--out", tmp_path / "t.npz"])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_out_is_a_directory(run_cli, ce_fa, tmp_path):
    code, _, err = run_cli(["tokenize", ce_fa, "--out", tmp_path])
    assert code != 0 and "directory" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name, message", [("t.npy", "ending .npz"), ("t.tsv", "ending .npz"),
                                           ("-", "/dev/stdout")])
def test_out_must_name_an_npz(run_cli, ce_fa, tmp_path, name, message):
    """A .npz archive under another name (or a file called -) would mislead: refused."""
    code, _, err = run_cli(["tokenize", ce_fa, "--out", tmp_path / name if name != "-" else "-"])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_failure_while_writing_leaves_nothing(run_cli, ce_fa, tmp_path, monkeypatch):
    import genoctx.cli.tokenize as mod

    def broken(fh, **arrays):
        fh.write(b"PK\x03\x04 partial")
        raise GenoctxError("disk full")

    monkeypatch.setattr(mod.np, "savez_compressed", broken)
    outdir = tmp_path / "out"
    code, _, err = run_cli(["tokenize", ce_fa, "--region", "CHROMOSOME_X", "--context", 1000,
                            "-q", "--out", outdir / "t.npz"])
    assert code != 0 and "disk full" in err
    assert not outdir.exists()  # the folder made for the output is removed with it


def test_read_only_input_folder_is_not_written(cli, ce_fa, tmp_path):
    """The data folder is read-only: tokenizing from it must not try to write an index."""
    before = sorted(p.name for p in ce_fa.parent.iterdir())
    code, _, err = cli(["tokenize", ce_fa, "--region", "CHROMOSOME_V", "--context", 2048, "-q",
                        "--out", tmp_path / "v.npz"])
    assert code == 0, err
    assert sorted(p.name for p in ce_fa.parent.iterdir()) == before


def test_help_shows_an_example(cli):
    code, out, _ = cli(["tokenize", "--help"])
    assert code == 0 and "genoctx tokenize" in out and "--context" in out



def test_windows_that_would_not_fit_in_memory_are_refused_first(run_cli, tmp_path, monkeypatch):
    """Every window is padded to --context: many short records at a long context would need
    more memory than the machine has; that is a one-line error before any allocation."""
    import os

    real = os.sysconf
    monkeypatch.setattr(os, "sysconf", lambda name: 4 if name == "SC_PHYS_PAGES" else real(name))
    fa = tmp_path / "many.fa"
    fa.write_text("".join(f">r{i}\nACGTACGTAC\n" for i in range(4)))
    code, _, err = run_cli(["tokenize", fa, "--context", 4096, "--out", tmp_path / "t.npz"])
    assert code == 2 and "give a smaller --context" in err and "Traceback" not in err
    assert not (tmp_path / "t.npz").exists()


def test_a_huge_overlap_is_refused_before_the_windows_are_planned(run_cli, ce_fa, tmp_path,
                                                                  monkeypatch):
    """--overlap context-1 makes a window per base: the plan alone (a Python list) took 115
    bytes per base before the memory check refused it, with advice for --context, which could
    not help. Now the windows are counted, not planned, and the advice names --overlap."""
    import os

    from genoctx.cli import tokenize

    real = os.sysconf
    pages = 2 * 1_000_000 * 200 // real("SC_PAGE_SIZE")  # 200 MB: a window per base is too many
    monkeypatch.setattr(os, "sysconf", lambda n: pages if n == "SC_PHYS_PAGES" else real(n))
    planned = []
    real_plan = tokenize.plan_windows
    monkeypatch.setattr(tokenize, "plan_windows",
                        lambda n, *a: (planned.append(n) if n else None) or real_plan(n, *a))
    code, _, err = run_cli(["tokenize", ce_fa, "--region", "CHROMOSOME_I", "--context", 100,
                            "--overlap", 99, "--out", tmp_path / "t.npz"])
    assert code == 2 and "give a smaller --overlap (windows start every" in err, err
    assert "1,009,701 windows of 100 tokens" in err and not planned
    assert not (tmp_path / "t.npz").exists()


def test_an_empty_bed_interval_is_refused(run_cli, ce_fa, tmp_path):
    bed = tmp_path / "r.bed"
    bed.write_text("CHROMOSOME_I\t100\t2000\nCHROMOSOME_I\t5000\t5000\n")
    for command in ("tokenize", "annotate"):
        code, _, err = run_cli([command, ce_fa, "--regions", bed, "--out", tmp_path / "o.npz",
                                "-q"])
        assert code == 2 and "CHROMOSOME_I:5000-5000 (0-based) is empty" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.bed"]


def test_an_output_under_a_file_is_refused_in_one_line(run_cli, ce_fa, example_fasta, tmp_path):
    """A file where a folder of --out goes: the file named, no temporary names, no output."""
    blocker = tmp_path / "plain.fa"
    blocker.write_text(">x\nACGT\n")
    cases = [["tokenize", ce_fa, "--region", "CHROMOSOME_X:1-1000", "--context", 1000, "-q",
              "--out", blocker / "deeper" / "t.npz"],
             ["eval", "--predictions", blocker, "--truth", blocker, "-q",
              "--out", blocker / "e"]]
    for args in cases:
        code, _, err = run_cli(args)
        assert code == 2 and err.count("\n") == 1, err
        assert f"{blocker} is a file, not a folder" in err and ".tmp" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.fa"]


def test_an_unwritable_folder_is_named_not_the_temporary_file(run_cli, ce_fa, tmp_path,
                                                               monkeypatch):
    import genoctx.io.atomic as atomic

    def refused(prefix, suffix, dir):  # as the OS refuses a folder without write permission
        raise PermissionError(13, "Permission denied", f"{dir}/{prefix}x1y2{suffix}")

    monkeypatch.setattr(atomic.tempfile, "mkstemp", refused)
    code, _, err = run_cli(["tokenize", ce_fa, "--region", "CHROMOSOME_X:1-1000", "--context",
                            1000, "-q", "--out", tmp_path / "t.npz"])
    assert code == 2 and err.count("\n") == 1
    assert f"cannot write {tmp_path / 't.npz'}: the folder {tmp_path} is not writable" in err
    assert "x1y2" not in err


@pytest.mark.parametrize("writable", [False, True])
def test_pileup_of_a_whole_reference_with_another_bams_index(data_root, ce_fa, tmp_path,
                                                             writable):
    """ex1.bam's index (2 references) beside a copy of the C. elegans BAM (5), newer than it,
    and no --region: the contigs were read from the index's statistics, which segfaulted
    (exit 139). Now the header gives the contigs; the index is rebuilt in a writable folder
    and built for the run in a temporary one (a note says so) where the folder is read-only;
    the tokens are those of the BAM's own index either way. A child process runs it, so that
    the old crash fails only this test."""
    import os
    import subprocess
    import sys

    import genoctx
    from genoctx.tokenize.pileup import tokenize_pileup

    own = tmp_path / "own"
    own.mkdir()
    good = own / "ce.bam"
    pysam.sort("-o", str(good), str(data_root / "reads" / "celegans_chrI" / "ce#1000.sam"))
    pysam.index(str(good))
    (own / "ex1.bam").write_bytes((data_root / "reads" / "ex1" / "ex1.bam").read_bytes())
    pysam.index(str(own / "ex1.bam"))
    folder = tmp_path / "reads"
    folder.mkdir()
    bam = folder / "ce.bam"
    bam.write_bytes(good.read_bytes())
    (folder / "ce.bam.bai").write_bytes((own / "ex1.bam.bai").read_bytes())
    os.utime(bam, (1_000, 1_000))
    out = tmp_path / "out" / "p.npz"
    out.parent.mkdir()
    tree = str(Path(genoctx.__file__).parents[1])  # this tree's genoctx in the child
    if not writable:
        folder.chmod(0o555)
    try:
        done = subprocess.run([sys.executable, "-m", "genoctx", "tokenize", str(bam), "--kind",
                               "pileup", "--reference", str(ce_fa), "--context", "100000", "-q",
                               "--out", str(out)], check=False, capture_output=True, text=True,
                              timeout=300, env={**os.environ, "PYTHONPATH": tree})
    finally:
        folder.chmod(0o755)
    assert "Traceback" not in done.stderr
    assert done.returncode == 0, (done.returncode, done.stderr)
    if not writable:  # indexed for the run in a temporary folder, with one note
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"note: {bam} has an index made for another file (ce.bam.bai)"), lines
        assert sorted(p.name for p in folder.iterdir()) == ["ce.bam", "ce.bam.bai"]
        assert (folder / "ce.bam.bai").read_bytes() == (own / "ex1.bam.bai").read_bytes()
    d = _load(out)
    rows = np.flatnonzero(d["contigs"] == "CHROMOSOME_I")
    tokens = np.concatenate([d["tokens"][w, :d["lengths"][w]] for w in rows])
    want, _, _ = tokenize_pileup(good, ce_fa, "CHROMOSOME_I")
    assert np.array_equal(tokens, want)
    with pysam.AlignmentFile(str(good)) as af:  # every base count_coverage sees is covered
        seen = np.array(af.count_coverage("CHROMOSOME_I", quality_threshold=13)).sum(0) > 0
    assert seen.sum() > 200 and ((tokens - 9) % 4 > 0)[seen].all()


def test_reads_with_bases_stored_as_equals_tokenize_as_spelled_out_ones(cli, data_root, ce_fa,
                                                                        tmp_path):
    """Bases written as '=' (samtools calmd -e) were dropped: the 276 matched positions of
    CHROMOSOME_I:1-200,000 became no_coverage and 30 others mismatch/deletion. Tokens and
    channels now equal those of the same reads with their bases spelled out."""
    bam = tmp_path / "ce.bam"
    pysam.sort("-o", str(bam), str(data_root / "reads" / "celegans_chrI" / "ce#1000.sam"))
    pysam.index(str(bam))
    (tmp_path / "eq.sam").write_text(pysam.calmd("-e", str(bam), str(ce_fa)))
    eq = tmp_path / "eq.bam"
    pysam.view("-b", "-o", str(eq), str(tmp_path / "eq.sam"), catch_stdout=False)
    runs = {}
    for reads in (bam, eq):
        out = tmp_path / f"{reads.stem}.npz"
        code, _, err = cli(["tokenize", reads, "--kind", "pileup", "--reference", ce_fa, "-r",
                            "CHROMOSOME_I:1-200,000", "--context", 50_000, "-q", "--out", out])
        assert code == 0, err
        runs[reads.stem] = _load(out)
    for key in ("tokens", "channels", "starts", "lengths"):
        assert np.array_equal(runs["eq"][key], runs["ce"][key]), key
    states = np.bincount(((runs["eq"]["tokens"][runs["eq"]["tokens"] > 0] - 9) % 4), minlength=4)
    with pysam.AlignmentFile(str(bam)) as af:  # covered by A/C/G/T bases, per count_coverage
        seen = np.array(af.count_coverage("CHROMOSOME_I", 0, 200_000,
                                          quality_threshold=13)).sum(0) > 0
    assert states[1] >= seen.sum() - states[2] - states[3] > 200


def test_a_pileup_region_whose_working_arrays_would_not_fit_is_refused(run_cli, data_root,
                                                                       ce_fa, tmp_path,
                                                                       monkeypatch):
    """The check counted only the output windows (26 bytes a token: 26 MB for CHROMOSOME_I at
    --context 1000), not the ~140 bytes a base the pileup of a region holds while it is
    computed (a 1 Mb region measured at 157 in all), so a region it accepted could need
    several times the memory it allowed. With 200 MB of memory (half may be used) the
    1,009,800-bp region needs 26 MB + 162 MB: refused in one line that says to split it."""
    import os

    bam = tmp_path / "ce.bam"
    pysam.sort("-o", str(bam), str(data_root / "reads" / "celegans_chrI" / "ce#1000.sam"))
    pysam.index(str(bam))
    real = os.sysconf
    pages = 200_000_000 // real("SC_PAGE_SIZE")
    monkeypatch.setattr(os, "sysconf", lambda n: pages if n == "SC_PHYS_PAGES" else real(n))
    out = tmp_path / "out" / "p.npz"
    argv = ["tokenize", bam, "--kind", "pileup", "--reference", ce_fa, "--context", 1000, "-q",
            "--out", out]
    code, _, err = run_cli(argv + ["-r", "CHROMOSOME_I"])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert not out.parent.exists()
    from genoctx.cli.tokenize import PILEUP_BYTES_PER_BASE

    assert "1,010 windows of 1,000 tokens and the pileup of a 1,009,800-bp region" in lines[0]
    assert "split the longest region (1,009,800 bp)" in lines[0]
    assert f"~{PILEUP_BYTES_PER_BASE} bytes a base" in lines[0]
    need = 1010 * (1000 * 26) + 1_009_800 * PILEUP_BYTES_PER_BASE  # windows + working
    assert need > 100_000_000 > 1010 * (1000 * 26 + 400)  # the old estimate would pass
    code, _, err = run_cli(argv + ["-r", "CHROMOSOME_I:1-200,000"])  # 5.2 + 32 MB: fits
    assert code == 0, err
    assert _load(out)["tokens"].shape == (200, 1000)


def test_sam_is_named_the_same_way_by_every_message(run_cli, data_root, ce_fa, tmp_path):
    """The FASTA-as-reads message said --kind pileup reads "BAM, CRAM or SAM", and a SAM was
    then refused (it cannot be indexed): every message now asks for a sorted BAM or CRAM, and
    a SAM given where a FASTA or a pileup is expected is told how to convert it."""
    sam = data_root / "reads" / "celegans_chrI" / "ce#1000.sam"
    out = tmp_path / "out" / "t.npz"
    runs = {
        "fasta as reads": ["tokenize", ce_fa, "--kind", "pileup", "--reference", ce_fa],
        "sam as pileup": ["tokenize", sam, "--kind", "pileup", "--reference", ce_fa, "-r",
                          "CHROMOSOME_I:1-1000"],
        "sam as fasta": ["tokenize", sam],
        "sam to annotate": ["annotate", sam, "--model", "none"],
    }
    errs = {}
    for case, argv in runs.items():
        code, _, err = run_cli(argv + ["--out", out])
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and "Traceback" not in err, (case, err)
        errs[case] = lines[0]
    assert not out.parent.exists()
    assert "reads aligned reads (a sorted BAM or CRAM)" in errs["fasta as reads"]
    assert "SAM" not in errs["fasta as reads"]
    assert "is SAM, which cannot be indexed" in errs["sam as pileup"]
    for case in ("sam as pileup", "sam as fasta", "sam to annotate"):
        assert "samtools sort -o" in errs[case] and "samtools index" in errs[case], case
