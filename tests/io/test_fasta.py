"""FASTA reading against pysam and Biopython on real data and on small files written here."""

import bz2
import gzip
import itertools
import lzma
import os
import random
import stat
import tempfile
from pathlib import Path

import numpy as np
import pysam
import pytest
from Bio import SeqIO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genoctx.errors import InputError, RegionError
from genoctx.io.fasta import FastaFile, fasta_info, iter_records, sniff_format
from genoctx.io.regions import Region
from genoctx.tokenize import nucleotide as nt


@pytest.fixture(scope="module")
def ce_fa(data_root) -> Path:
    return data_root / "reads" / "celegans_chrI" / "ce.fa"


@pytest.fixture(scope="module")
def ce_pysam(ce_fa):
    # ce.fa ships with its .fai, so pysam opens it without writing into the data folder.
    with pysam.FastaFile(str(ce_fa)) as fa:
        yield fa


@pytest.fixture(scope="module")
def ce_copies(ce_fa, tmp_path_factory) -> dict[str, Path]:
    """gzip, bgzip, xz and bzip2 copies of ce.fa in a writable folder."""
    folder = tmp_path_factory.mktemp("ce")
    data = ce_fa.read_bytes()
    copies = {"gzip": folder / "ce.fa.gz", "xz": folder / "ce.fa.xz", "bz2": folder / "ce.fa.bz2",
              "bgzf": folder / "ce.bgz.fa.gz"}
    copies["gzip"].write_bytes(gzip.compress(data, compresslevel=1))
    copies["xz"].write_bytes(lzma.compress(data, preset=0))
    copies["bz2"].write_bytes(bz2.compress(data, compresslevel=1))
    pysam.tabix_compress(str(ce_fa), str(copies["bgzf"]))
    return copies


def _random_intervals(lengths: dict[str, int], n: int, seed: int = 0):
    rng = random.Random(seed)
    names = sorted(lengths)
    for _ in range(n):
        name = rng.choice(names)
        size = lengths[name]
        start = min(size, rng.choice([0, rng.randrange(size), size - 1, 49, 50, 51]))
        end = rng.choice([size, min(size, start + rng.randrange(1, 300)), start + 1])
        yield name, start, max(start, min(end, size))


# --------------------------------------------------------------------------- real data

def test_read_only_data_folder_uses_its_index(ce_fa, ce_pysam):
    with FastaFile(ce_fa) as fa:
        assert fa.mode == "indexed"
        assert fa.contigs == list(ce_pysam.references)
        assert fa.lengths == dict(zip(ce_pysam.references, ce_pysam.lengths))
        assert fa.lengths["CHROMOSOME_I"] == 1_009_800
        whole = fa.fetch("CHROMOSOME_I")
        assert len(whole) == 1_009_800
        assert whole == ce_pysam.fetch("CHROMOSOME_I").encode()
        for name, start, end in _random_intervals(fa.lengths, 300):
            assert fa.fetch(name, start, end) == ce_pysam.fetch(name, start, end).encode()


def _check_fetch_array(fa, ref, intervals):
    for name, start, end in intervals:
        expected = ref.fetch(name, start, end).encode()
        arr = fa.fetch_array(name, start, end)
        assert arr.dtype == np.uint8 and arr.flags.writeable
        assert arr.tobytes() == expected
        ids = fa.fetch_array(name, start, end, table=nt.ENCODE_TABLE)
        assert ids.flags.writeable and np.array_equal(ids, nt.encode(expected))


def test_fetch_array_is_writable_and_equal(ce_fa, ce_pysam):
    with FastaFile(ce_fa) as fa:
        _check_fetch_array(fa, ce_pysam, [("CHROMOSOME_I", s, e) for s, e in [
            (0, 10), (3, 7), (45, 55), (0, 1_009_800), (1_009_799, 1_009_800), (50, 50)]])
        _check_fetch_array(fa, ce_pysam, _random_intervals(fa.lengths, 50, seed=7))


@pytest.mark.parametrize("kind", ["gzip", "bgzf", "xz", "bz2"])
def test_compressed_copies_read_the_same(ce_copies, ce_pysam, kind):
    path = ce_copies[kind]
    assert sniff_format(path) == ("fasta", kind)
    with FastaFile(path) as fa:
        assert fa.mode == ("bgzf" if kind == "bgzf" else "memory")
        assert fa.lengths == dict(zip(ce_pysam.references, ce_pysam.lengths))
        for name, start, end in _random_intervals(fa.lengths, 100, seed=1):
            assert fa.fetch(name, start, end) == ce_pysam.fetch(name, start, end).encode()
        _check_fetch_array(fa, ce_pysam, _random_intervals(fa.lengths, 20, seed=2))
    if kind == "bgzf":
        assert Path(f"{path}.fai").exists() and Path(f"{path}.gzi").exists()


@pytest.mark.parametrize("kind", ["plain", "gzip", "bgzf", "xz"])
def test_iter_records_matches_pysam(ce_fa, ce_copies, ce_pysam, kind):
    path = ce_fa if kind == "plain" else ce_copies[kind]
    records = list(iter_records(path))
    assert [n for n, _ in records] == list(ce_pysam.references)
    for name, seq in records:
        assert seq == ce_pysam.fetch(name).encode()


def test_fasta_info_counts_like_a_naive_loop(ce_fa):
    info = fasta_info(ce_fa)
    for rec, (name, seq) in zip(info, iter_records(ce_fa)):
        text = seq.decode()
        acgt = sum(text.upper().count(b) for b in "ACGT")
        gc = sum(text.upper().count(b) for b in "GC")
        n = text.upper().count("N")
        assert rec == {"name": name, "length": len(text), "n_count": len(text) - acgt,
                       "iupac": len(text) - acgt - n,
                       "softmasked": sum(c.islower() for c in text), "gc": gc / acgt}


def test_rna_gc_counts_u_as_a_base(ce_fa, tmp_path):
    """info's G+C of an RNA FASTA is that of its DNA (U left out, 58% where 46% is right)."""
    name, seq = next(iter_records(ce_fa))
    rna = _write_fasta(tmp_path / "r.fa", [(name, seq[:5000].replace(b"T", b"U"))])
    dna = _write_fasta(tmp_path / "d.fa", [(name, seq[:5000])])
    assert fasta_info(rna) == fasta_info(dna)


# --------------------------------------------------------------------------- index handling

def _write_fasta(path: Path, records, width=60, newline=b"\n") -> Path:
    with open(path, "wb") as fh:
        for name, seq in records:
            fh.write(b">" + name.encode() + b" some description" + newline)
            for i in range(0, len(seq), width):
                fh.write(seq[i:i + width] + newline)
    return path


def _random_records(n, seed=0, max_len=500):
    rng = random.Random(seed)
    letters = b"ACGTacgtNRYKMSWBDHVn"
    return [(f"rec{i}", bytes(rng.choice(letters) for _ in range(rng.randint(1, max_len))))
            for i in range(n)]


def test_builds_index_in_a_writable_folder(tmp_path):
    records = _random_records(50)
    path = _write_fasta(tmp_path / "x.fa", records, width=37)
    with FastaFile(path) as fa:
        assert fa.mode == "indexed"
        assert sorted(os.listdir(tmp_path)) == ["x.fa", "x.fa.fai"]  # no temporary files left
        for name, seq in records:
            assert fa.fetch(name) == seq  # case and IUPAC kept
    with FastaFile(path, build_index=False) as fa:  # the index is reused
        assert fa.mode == "indexed"


def test_read_only_folder_streams_into_memory(tmp_path):
    records = _random_records(5)
    folder = tmp_path / "ro"
    folder.mkdir()
    path = _write_fasta(folder / "x.fa", records)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    try:
        with FastaFile(path) as fa:
            assert fa.mode == "memory"
            assert [fa.fetch(n) for n, _ in records] == [s for _, s in records]
        assert os.listdir(folder) == ["x.fa"]
    finally:
        folder.chmod(stat.S_IRWXU)


def test_no_build_without_index_streams(tmp_path):
    path = _write_fasta(tmp_path / "x.fa", _random_records(3))
    with FastaFile(path, build_index=False) as fa:
        assert fa.mode == "memory"
    assert not Path(f"{path}.fai").exists()


def test_many_records_match_biopython(tmp_path):
    records = _random_records(2000, seed=3, max_len=120)
    path = _write_fasta(tmp_path / "many.fa", records, width=50)
    expected = {r.id: str(r.seq).encode() for r in SeqIO.parse(path, "fasta")}
    assert len(expected) == 2000
    for build in (True, False):
        with FastaFile(path, build_index=build) as fa:
            assert fa.contigs == [n for n, _ in records]
            assert {n: fa.fetch(n) for n in fa.contigs} == expected


def test_crlf_files(tmp_path):
    records = _random_records(20, seed=4)
    lf = _write_fasta(tmp_path / "lf.fa", records, width=41)
    crlf = _write_fasta(tmp_path / "crlf.fa", records, width=41, newline=b"\r\n")
    with FastaFile(lf) as a, FastaFile(crlf) as b:
        assert b.mode == "indexed" and a.lengths == b.lengths
        for name, start, end in _random_intervals(a.lengths, 200):
            assert b.fetch(name, start, end) == a.fetch(name, start, end)
    assert list(iter_records(crlf)) == records


@pytest.mark.parametrize("opener, how", [(open, "tr '\\r' '\\n' < cr.fa"),
                                          (gzip.open, "gzip -dc cr.fa | tr")])
def test_lines_ending_in_cr_alone_are_refused_with_the_fix(tmp_path, opener, how):
    """Classic Mac OS line ends would read as one header and no bases ("no sequence")."""
    records = _random_records(3, seed=5)
    text = b"".join(b">" + n.encode() + b" desc\r" + s + b"\r" for n, s in records)
    with opener(tmp_path / "cr.fa", "wb") as fh:
        fh.write(text)
    with pytest.raises(InputError, match="carriage return alone") as err:
        FastaFile(tmp_path / "cr.fa")
    assert how in str(err.value)
    with pytest.raises(InputError, match="carriage return alone"):
        list(iter_records(tmp_path / "cr.fa"))


def test_a_bzip2_file_of_many_blocks_and_a_gzip_with_an_empty_first_member_read(tmp_path):
    """A bzip2 block (up to 900 kB) gives no bytes until it is whole, and a gzip file may begin
    with an empty member: the format is still told from the first bytes there are."""
    rng = random.Random(7)
    records = [(f"r{i}", bytes(rng.choice(b"ACGT") for _ in range(100_000))) for i in range(3)]
    text = b"".join(b">" + n.encode() + b"\n" + s + b"\n" for n, s in records)
    with bz2.open(tmp_path / "big.fa.bz2", "wb") as fh:
        fh.write(text)
    assert (tmp_path / "big.fa.bz2").stat().st_size > 1 << 16
    assert sniff_format(tmp_path / "big.fa.bz2") == ("fasta", "bz2")
    assert list(iter_records(tmp_path / "big.fa.bz2")) == records
    (tmp_path / "two.fa.gz").write_bytes(gzip.compress(b"") + gzip.compress(b">a\nACGT\n"))
    with FastaFile(tmp_path / "two.fa.gz") as fa:
        assert fa.fetch("a") == b"ACGT"


def test_an_index_made_from_lines_with_blanks_is_not_used_to_read_blanks_as_bases(tmp_path):
    """samtools faidx counts a blank inside a line in the line's width, not its bases: genoctx
    reads such a file into memory when it builds the index itself (blanks dropped, as Biopython
    does), and a .fai that was already there is not used either (its lines would end in a
    CR LF that is not there), rather than return blanks and lose bases."""
    path = tmp_path / "sp.fa"
    path.write_bytes(b">a\nACGT ACGT\nACGT ACGT\nAC\n")
    with FastaFile(path) as fa:
        assert fa.fetch("a") == b"ACGTACGTACGTACGTAC"
    pysam.faidx(str(path))
    assert Path(f"{path}.fai").read_text().split()[3:] == ["8", "10"]
    with FastaFile(path) as fa:
        assert fa.mode == "memory" and fa.fetch("a") == b"ACGTACGTACGTACGTAC"


def test_ragged_lines_fall_back_to_memory(tmp_path):
    path = tmp_path / "ragged.fa"
    path.write_bytes(b">a\nACGTACGT\nAC\nGGGGGGGGGGG\n>b\nTTTT")
    with FastaFile(path) as fa:
        assert fa.mode == "memory"  # faidx refuses uneven line widths
        assert fa.fetch("a") == b"ACGTACGTACGGGGGGGGGGG" and fa.fetch("b") == b"TTTT"
    assert not Path(f"{path}.fai").exists()


def test_blanks_inside_lines_are_not_indexed(tmp_path):
    path = tmp_path / "blanks.fa"
    path.write_bytes(b">a\nAC GT\nAC\n")
    with FastaFile(path) as fa:  # faidx would count the blank as a base
        assert fa.fetch("a") == b"ACGTAC"


def test_single_line_records_and_empty_records(tmp_path):
    long = np.frombuffer(b"ACGT", np.uint8)[np.random.default_rng(5).integers(0, 4, 100_000)]
    long = long.tobytes()
    path = tmp_path / "oneline.fa"
    path.write_bytes(b">empty\n>long\n" + long + b"\n>last\nAC")
    with FastaFile(path) as fa:
        assert fa.lengths == {"empty": 0, "long": 100_000, "last": 2}
        assert fa.fetch("long") == long and fa.fetch("empty") == b""


def test_stale_index_is_detected_and_rebuilt(tmp_path):
    path = _write_fasta(tmp_path / "x.fa", [("a", b"ACGT" * 30)], width=50)
    FastaFile(path).close()
    _write_fasta(path, [("a", b"ACGT" * 30), ("b", b"GGCC" * 5)], width=50)
    with FastaFile(path) as fa:
        assert fa.mode == "indexed"
        assert fa.fetch("b") == b"GGCC" * 5


def test_an_index_of_the_same_record_wrapped_otherwise_is_not_trusted(tmp_path):
    """A .fai made before the file was rewrapped (50 -> 60 bases a line, the same size, so the
    header check passed) read every base after the first line one place off, with no error:
    an older index is built again, and one as new as the file is checked line by line."""
    rng = random.Random(2)
    seq = bytes(rng.choice(b"ACGT") for _ in range(100))
    path = _write_fasta(tmp_path / "w.fa", [("a", seq)], width=50)
    FastaFile(path).close()  # a 100 20 50 51
    fai = Path(f"{path}.fai")
    _write_fasta(path, [("a", seq)], width=60)
    os.utime(fai, (1_000, 1_000))  # older than the file
    with FastaFile(path) as fa:
        assert fa.mode == "indexed" and fa.fetch("a", 50, 59) == seq[50:59]
    assert fai.read_text().split()[3:] == ["60", "61"]  # indexed again

    _write_fasta(path, [("a", seq)], width=50)
    FastaFile(path).close()
    _write_fasta(path, [("a", seq)], width=60)
    os.utime(path, (1_000, 1_000))
    os.utime(fai, (1_000, 1_000))  # as old as the file (cp -p, rsync -a, a coarse clock)
    with FastaFile(path) as fa:
        assert fa.fetch("a") == seq and fa.fetch("a", 50, 59) == seq[50:59]
    assert fai.read_text().split()[3:] == ["60", "61"]

    # lines of other widths in the same number of lines (the same size): the ends of the
    # first, a middle and the last full line are checked
    for width, lines in ((40, (30, 50, 20)), (40, (40, 50, 10)), (20, (20, 30, 20, 10, 20))):
        _write_fasta(path, [("a", seq)], width=width)
        FastaFile(path).close()
        cuts = np.cumsum((0,) + lines)
        path.write_bytes(b">a some description\n"
                         + b"".join(seq[a:b] + b"\n" for a, b in itertools.pairwise(cuts)))
        os.utime(path, (1_000, 1_000))
        os.utime(fai, (1_000, 1_000))
        with FastaFile(path) as fa:
            assert fa.mode == "memory" and fa.fetch("a") == seq  # faidx refuses ragged lines


def test_an_older_index_in_a_read_only_folder_is_not_used(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    rng = random.Random(2)
    seq = bytes(rng.choice(b"ACGT") for _ in range(100))
    path = _write_fasta(folder / "w.fa", [("a", seq)], width=50)
    FastaFile(path).close()
    _write_fasta(path, [("a", seq)], width=60)
    os.utime(Path(f"{path}.fai"), (1_000, 1_000))
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with FastaFile(path) as fa:
            assert fa.mode == "memory" and fa.fetch("a", 50, 59) == seq[50:59]
    finally:
        folder.chmod(stat.S_IRWXU)


def test_inconsistent_index_in_read_only_folder_is_not_trusted(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = _write_fasta(folder / "x.fa", [("a", b"ACGT" * 30), ("b", b"TTTT")], width=50)
    Path(f"{path}.fai").write_text("a\t120\t27\t50\t51\n")  # b missing, and the offset is wrong
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with FastaFile(path) as fa:
            assert fa.mode == "memory" and fa.fetch("b") == b"TTTT"
    finally:
        folder.chmod(stat.S_IRWXU)


_SEQS = st.lists(st.tuples(st.integers(1, 200), st.text("ACGTNacgtnRYKM", min_size=1,
                                                        max_size=300)),
                 min_size=1, max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=_SEQS, crlf=st.booleans(), data=st.data())
def test_random_files_fetch_like_a_naive_parser(records, crlf, data):
    recs = [(f"r{i}", seq.encode()) for i, (_, seq) in enumerate(records)]
    width = records[0][0]
    with tempfile.TemporaryDirectory() as tmp:
        path = _write_fasta(Path(tmp) / "h.fa", recs, width=width,
                            newline=b"\r\n" if crlf else b"\n")
        with FastaFile(path) as fa:
            name, seq = data.draw(st.sampled_from(recs))
            start = data.draw(st.integers(0, len(seq)))
            end = data.draw(st.integers(start, len(seq)))
            assert fa.fetch(name, start, end) == seq[start:end]
            assert fa.fetch_region(Region(name, start, end)) == seq[start:end]


def test_a_few_bases_read_those_bytes_not_their_whole_lines(tmp_path, monkeypatch):
    """A record on one line (unwrapped FASTA) was read whole for every fetch of a few bases:
    a REF check per VCF record read E. coli's 4.6-Mb line each time (100,000 SNVs: 218 s)."""
    import genoctx.io.fasta as fasta_mod

    seq = bytes(np.random.default_rng(0).choice(list(b"ACGT"), 200_000).astype(np.uint8))
    path = _write_fasta(tmp_path / "one.fa", [("a", seq), ("b", seq[:1000])], width=len(seq))
    wrapped = _write_fasta(tmp_path / "wrapped.fa", [("a", seq)], width=60)
    read = []
    real = os.preadv

    def counted(fd, buffers, offset):
        read.append(sum(len(b) for b in buffers))
        return real(fd, buffers, offset)

    monkeypatch.setattr(fasta_mod.os, "preadv", counted)
    with FastaFile(path) as fa, FastaFile(wrapped) as fw:
        assert fa.mode == fw.mode == "indexed"
        for a, b in [(0, 1), (150_000, 150_003), (199_990, 200_000), (5, 5 + 999)]:
            read.clear()
            assert fa.fetch("a", a, b) == seq[a:b] and read == [b - a]
        read.clear()  # across lines: the bases and the line ends between them
        assert fw.fetch("a", 59, 125) == seq[59:125] and read == [125 - 59 + 2]
        assert fw.fetch_array("a", 100_000, 100_200).tobytes() == seq[100_000:100_200]


# --------------------------------------------------------------------------- errors

def test_missing_and_directory(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        FastaFile(tmp_path / "nope.fa")
    with pytest.raises(InputError, match="directory"):
        FastaFile(tmp_path)


def test_empty_and_blank_files(tmp_path):
    (tmp_path / "empty.fa").write_bytes(b"")
    with pytest.raises(InputError, match="is empty"):
        FastaFile(tmp_path / "empty.fa")
    (tmp_path / "blank.fa").write_bytes(b"\n\n  \r\n")
    with pytest.raises(InputError, match="no FASTA records"):
        FastaFile(tmp_path / "blank.fa")
    (tmp_path / "empty.fa.gz").write_bytes(gzip.compress(b""))
    with pytest.raises(InputError, match="no FASTA records"):
        list(iter_records(tmp_path / "empty.fa.gz"))


def test_bam_and_genbank_given_as_fasta(data_root, example_genbank):
    with pytest.raises(InputError, match="looks like BAM"):
        FastaFile(data_root / "reads" / "ex1" / "ex1.bam")
    with pytest.raises(InputError, match="looks like GenBank"):
        FastaFile(example_genbank)
    gbff = data_root / "genomes" / "bacteria" / "Escherichia_coli_K12_MG1655.gbff.gz"
    with pytest.raises(InputError, match="looks like GenBank"):
        list(iter_records(gbff))


def test_truncated_gzip_and_bgzip(ce_fa, ce_copies, tmp_path):
    data = ce_copies["gzip"].read_bytes()
    (tmp_path / "t.fa.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated"):
        FastaFile(tmp_path / "t.fa.gz")
    with pytest.raises(InputError, match="truncated"):
        list(iter_records(tmp_path / "t.fa.gz"))
    data = ce_copies["bgzf"].read_bytes()
    (tmp_path / "t.bgz").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated"):
        FastaFile(tmp_path / "t.bgz")
    assert not list(tmp_path.glob("t.bgz.*"))


@pytest.mark.parametrize("build", [True, False])
def test_duplicate_names(tmp_path, build):
    path = _write_fasta(tmp_path / "dup.fa", [("a", b"ACGT"), ("b", b"GG"), ("a", b"TT")])
    with pytest.raises(InputError, match="duplicate record name 'a'"):
        FastaFile(path, build_index=build)
    assert not Path(f"{path}.fai").exists()


def test_duplicate_names_behind_an_existing_faidx_index(tmp_path):
    path = _write_fasta(tmp_path / "dup.fa", [("a", b"ACGT"), ("b", b"GG"), ("a", b"TT")])
    pysam.faidx(str(path))  # htslib keeps the first 'a' and says nothing
    with pytest.raises(InputError, match="duplicate record name 'a'"):
        FastaFile(path)


def test_duplicate_names_may_be_streamed_on_request(data_root):
    path = data_root / "classification" / "promoters" / "Bacillus_prom.fa"
    with pytest.raises(InputError, match="duplicate"):
        list(iter_records(path))
    records = list(iter_records(path, unique=False))
    expected = [(r.id, str(r.seq).encode()) for r in SeqIO.parse(path, "fasta")]
    assert records == expected and len({n for n, _ in records}) < len(records)


def test_duplicate_names_in_bgzip(tmp_path):
    plain = _write_fasta(tmp_path / "dup.fa", [("a", b"ACGT"), ("a", b"TT")])
    pysam.tabix_compress(str(plain), str(tmp_path / "dup.fa.gz"))
    with pytest.raises(InputError, match="duplicate"):
        FastaFile(tmp_path / "dup.fa.gz")


def test_bgzip_index_made_elsewhere_is_checked_against_the_file(ce_fa, tmp_path):
    """An existing .fai/.gzi of a bgzip file was trusted whenever it was not older than the
    data: samtools' index of a file with two records named alike (it keeps the first) gave half
    the file with no error, and a file replaced by another keeping an older mtime (cp -p,
    rsync -a, wget -N) was read through the old layout (bases of the next record)."""
    dup = _write_fasta(tmp_path / "dup.fa", [("a", b"ACGT" * 40), ("a", b"TT" * 50)])
    pysam.tabix_compress(str(dup), str(tmp_path / "dup.fa.gz"))
    pysam.faidx(str(tmp_path / "dup.fa.gz"))  # samtools faidx: warns, indexes the first 'a'
    with pytest.raises(InputError, match="duplicate record name 'a'"):
        FastaFile(tmp_path / "dup.fa.gz")

    records = [(f"r{i}", (b"ACGGT" * (37 + i))[:150 + 7 * i]) for i in range(4)]
    old = _write_fasta(tmp_path / "v1.fa", records)
    new = _write_fasta(tmp_path / "v2.fa", records[1:])  # the first record removed
    path = tmp_path / "g.fa.gz"
    pysam.tabix_compress(str(old), str(path))
    FastaFile(path).close()  # indexes v1's layout
    pysam.tabix_compress(str(new), str(path), force=True)
    os.utime(path, (0, 0))  # older than its index
    with FastaFile(path) as fa:
        assert fa.lengths == {name: len(seq) for name, seq in records[1:]}
        assert fa.fetch("r2") == records[2][1]

    # a good index of a file of many blocks (1 Mb) is kept as it is
    big = tmp_path / "ce.fa.gz"
    pysam.tabix_compress(str(ce_fa), str(big))
    pysam.faidx(str(big))
    before = {p: p.stat().st_mtime_ns for p in (Path(f"{big}.fai"), Path(f"{big}.gzi"))}
    with FastaFile(big) as fa, pysam.FastaFile(str(ce_fa)) as want:
        assert fa.mode == "bgzf"
        for name, start, end in _random_intervals(fa.lengths, 50):
            assert fa.fetch(name, start, end) == want.fetch(name, start, end).encode()
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_a_gzi_of_another_bgzip_file_is_not_followed(ce_fa, tmp_path, capfd):
    """A .gzi made for another file (one of a single block, or of the file before records
    were added: the same first blocks) passed the check, since the blocks after its last
    entry were read one by one; htslib then failed on the first region past them ('Failed
    to retrieve block'). Now it is built again, or not used in a read-only folder."""
    folder = tmp_path / "g"
    folder.mkdir()
    big = folder / "ce.fa.gz"
    pysam.tabix_compress(str(ce_fa), str(big))
    pysam.faidx(str(big))
    fai, gzi = Path(f"{big}.fai"), Path(f"{big}.gzi")
    good = gzi.read_bytes()
    small = _write_fasta(tmp_path / "s.fa", [("s", b"ACGT" * 10)])
    pysam.tabix_compress(str(small), str(tmp_path / "s.fa.gz"))
    pysam.faidx(str(tmp_path / "s.fa.gz"))
    n = int.from_bytes(good[:8], "little") // 2
    foreign = {"of a one-block file": Path(f"{tmp_path / 's.fa.gz'}.gzi").read_bytes(),
               "of its first half": n.to_bytes(8, "little") + good[8:8 + 16 * n]}
    with pysam.FastaFile(str(ce_fa)) as want:
        for what, raw in foreign.items():
            for writable in (True, False):
                gzi.write_bytes(raw)
                os.utime(big, (1_000, 1_000))  # the index is not older than the file
                folder.chmod(stat.S_IRWXU if writable else stat.S_IRUSR | stat.S_IXUSR)
                try:
                    with FastaFile(big) as fa:
                        assert fa.mode == ("bgzf" if writable else "memory"), what
                        for name, start, end in _random_intervals(fa.lengths, 30):
                            got = fa.fetch(name, start, end)
                            assert got == want.fetch(name, start, end).encode(), what
                finally:
                    folder.chmod(stat.S_IRWXU)
                assert gzi.read_bytes() == (good if writable else raw), what
                assert fai.is_file()
    assert "[E::" not in capfd.readouterr().err


def test_damaged_bgzip_block_is_one_clear_error(ce_fa, tmp_path, capfd):
    big = tmp_path / "ce.fa.gz"
    pysam.tabix_compress(str(ce_fa), str(big))
    pysam.faidx(str(big))
    raw = bytearray(big.read_bytes())
    raw[200_000:200_040] = bytes(40)  # inside a block of CHROMOSOME_I's middle
    big.write_bytes(bytes(raw))
    os.utime(big, (0, 0))  # as old as its index, or it is indexed again (and refused then)
    with FastaFile(big) as fa:
        assert fa.mode == "bgzf"  # the headers' blocks are whole: the index is kept
        with pytest.raises(InputError, match="cannot read CHROMOSOME_I:.*damaged"):
            fa.fetch("CHROMOSOME_I")
        with pytest.raises(InputError, match="damaged"):
            fa.fetch_array("CHROMOSOME_I", 0, 1_000_000)
    assert "[E::" not in capfd.readouterr().err  # htslib's own line is not printed too


def test_bgzip_bytes_through_the_gzi(ce_fa, tmp_path):
    from genoctx.io.fasta import _BgzfReader

    big = tmp_path / "ce.fa.gz"
    pysam.tabix_compress(str(ce_fa), str(big))
    pysam.faidx(str(big))
    data = ce_fa.read_bytes()
    rng = random.Random(3)
    with _BgzfReader(big, Path(f"{big}.gzi")) as reader:
        assert reader.size() == len(data)
        for _ in range(200):
            a = rng.randrange(len(data) + 10)
            b = a + rng.choice([0, 1, 70, 65_280, 65_281, 200_000])
            assert reader.read(a, b) == data[a:b]


def test_byte_order_mark_is_named(tmp_path):
    """A Windows editor's UTF-8 BOM before '>' read as 'an unrecognised text file' (info) and
    'a FASTA file starts with a '>name' header line' (the others), about a file that does."""
    path = tmp_path / "bom.fa"
    path.write_bytes(b"\xef\xbb\xbf>a\r\nACGT\r\n")
    assert sniff_format(path) == ("fasta", "none")
    with pytest.raises(InputError, match=r"byte-order mark .* sed -i '1s/\^\\xEF"):
        FastaFile(path)
    with pytest.raises(InputError, match="byte-order mark"):
        list(iter_records(path))


def test_not_sequence_bytes(tmp_path):
    (tmp_path / "digits.fa").write_bytes(b">a\nACGT\n1 ACGT\n")
    with pytest.raises(InputError, match="not a sequence letter"):
        FastaFile(tmp_path / "digits.fa")
    (tmp_path / "lead.fa").write_bytes(b"ACGT\n>a\nACGT\n")
    with pytest.raises(InputError, match="not FASTA"):
        FastaFile(tmp_path / "lead.fa")
    (tmp_path / "noname.fa").write_bytes(b">\nACGT\n")
    with pytest.raises(InputError, match="empty name"):
        FastaFile(tmp_path / "noname.fa")


@pytest.mark.parametrize("chunk", [1 << 22, 5])
def test_a_bad_byte_is_named_by_its_line_and_column_not_blamed_on_the_index(tmp_path, chunk,
                                                                              monkeypatch):
    """A digit in a sequence line, read through a samtools .fai, was reported as the .fai's
    fault ('does not describe this file ... remove the .fai'); the streaming reader named no
    line. Both now name the line, column, record and base (read in chunks of 5 bytes too)."""
    monkeypatch.setattr("genoctx.io.fasta._CHUNK", chunk)
    cases = {
        b"\n>x\nAC\n>a\nACGTACGTAC\nACG1ACGTAC\nACGTACGTAC\n":
            "line 6, column 4: record 'a' holds '1' at base 14,",
        b">x\r\nAC\r\n>a\r\nACGT\r\nA\xc3\xa9T\r\nACGT\r\n":
            r"line 5, column 2: record 'a' holds the byte 0xC3 \(not ASCII\) at base 6,",
        b">a\nACGT\nAC>T\nAC\n": "line 3, column 3: record 'a' holds '>' at base 7, which is "
                                 "not a sequence letter; a '>' begins a header only at the start",
    }
    for i, (text, message) in enumerate(cases.items()):
        path = tmp_path / f"bad{i}.fa"
        path.write_bytes(text)
        for how in ("stream", "index"):
            if how == "index":
                pysam.faidx(str(path))  # samtools takes the file as it is
            with pytest.raises(InputError, match=message) as err, FastaFile(path) as fa:
                assert fa.mode == "indexed" and how == "index"  # streaming refuses at open
                fa.fetch("a")
            assert ".fai" not in str(err.value), how
        gz = tmp_path / f"bad{i}.fa.gz"
        gz.write_bytes(gzip.compress(text))
        with pytest.raises(InputError, match=message):
            list(iter_records(gz))
        # bgzip with samtools' index: htslib passed a printable byte ('1', '>') through as a
        # base, and stopped at a non-ASCII one with a UnicodeDecodeError
        bgz = tmp_path / f"bad{i}.bgz.fa.gz"
        pysam.tabix_compress(str(path), str(bgz))
        pysam.faidx(str(bgz))
        with pytest.raises(InputError, match=message) as err, FastaFile(bgz) as fa:
            fa.fetch("a")
        assert ".fai" not in str(err.value)


def test_a_non_ascii_byte_of_an_indexed_bgzip_file_is_named(tmp_path):
    """htslib's own .fai of such a file is refused (it does not count the byte; the file is
    then read through and refused at open), but one that counts it (another tool's, or
    written by hand) led htslib's fetch into a UnicodeDecodeError."""
    path = tmp_path / "e.fa"
    path.write_bytes(b">x\nAC\n>a\nACGTACGTAC\nACGTACG\xe9AC\nACGT\n")
    bgz = tmp_path / "e.fa.gz"
    pysam.tabix_compress(str(path), str(bgz))
    pysam.faidx(str(bgz))  # for the .gzi
    Path(f"{bgz}.fai").write_text("x\t2\t3\t2\t3\na\t24\t9\t10\t11\n")
    with FastaFile(bgz) as fa:
        assert fa.mode == "bgzf"
        assert fa.fetch("a", 0, 5) == b"ACGTA" and fa.fetch("a", 18, 24) == b"ACACGT"
        for start, end in ((0, None), (17, 18), (15, 20)):
            with pytest.raises(InputError, match=r"line 5, column 8: record 'a' holds the byte "
                                                 r"0xE9 \(not ASCII\) at base 18,"):
                fa.fetch("a", start, end)
        with pytest.raises(InputError, match="0xE9"):
            fa.fetch_array("a")


def test_region_errors(ce_fa):
    with FastaFile(ce_fa) as fa:
        with pytest.raises(RegionError, match="unknown contig 'chrZ'"):
            fa.fetch("chrZ")
        with pytest.raises(RegionError, match="length 5,000"):
            fa.fetch_region("CHROMOSOME_X:4,990-5,001")
        with pytest.raises(RegionError, match="length 5,000"):
            fa.fetch("CHROMOSOME_X", 0, 5001)
        with pytest.raises(RegionError):
            fa.fetch("CHROMOSOME_X", 10, 5)
        with pytest.raises(RegionError, match="unknown contig"):
            fa.resolve(Region("chrZ", 0, 1))
        assert fa.fetch("CHROMOSOME_X", 5000, 5000) == b""


def test_sniff_detects_content_not_extension(tmp_path, data_root, example_fasta):
    disguised = tmp_path / "reads.bam"
    disguised.write_bytes(gzip.compress(example_fasta.read_bytes()))
    assert sniff_format(disguised) == ("fasta", "gzip")
    assert sniff_format(data_root / "reads" / "ex1" / "ex1.bam") == ("bam", "bgzf")
    assert sniff_format(data_root / "reads" / "celegans_chrI" / "ce#1000.sam")[0] == "sam"
    with FastaFile(disguised) as fa:
        assert fa.contigs == [r.id for r in SeqIO.parse(example_fasta, "fasta")]


def test_check_nucleotide_refuses_protein_but_not_masked_or_gapped_dna():
    from genoctx.io.fasta import check_nucleotide

    dna = b"ACGTRYKMSWBDHVNacgtn" * 10
    for ok in (dna, dna + b"X" * 500 + b"---***...", dna + b"EFQ", b""):
        check_nucleotide("c", ok, "in.fa")
    with pytest.raises(InputError, match=r"in.fa: record 'p' looks like a protein sequence"):
        check_nucleotide("p", b"MARYLGPKLKLSRREGTDLFLKSGVRAIDTKCKIEQAPGQHG", "in.fa")
    with pytest.raises(InputError, match="protein"):
        check_nucleotide("p", dna[:100] + b"L" * 6, "in.fa")  # 6 of 106 letters


def test_reverse_complement_matches_biopython_on_iupac_text_and_bytes():
    """Every IUPAC code in both cases, as Biopython complements DNA; bytes stay bytes."""
    from Bio.Seq import reverse_complement as bio

    from genoctx.io.fasta import reverse_complement

    codes = "ACGTRYKMBDHVNSW"
    seq = codes + codes.lower() + "GATTACA"
    assert reverse_complement(seq) == bio(seq)
    assert reverse_complement(seq.encode()) == bio(seq).encode()
    assert reverse_complement("AC-GT*") == "*AC-GT"  # gaps and stops kept in place, reversed
    assert reverse_complement("") == "" and reverse_complement(b"") == b""
