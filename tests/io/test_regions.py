"""Region strings (1-based inclusive at the edge) and BED files (0-based half-open)."""

import gzip

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genoctx.errors import GenoctxError, InputError, RegionError
from genoctx.io.regions import Region, parse_region, read_bed

LENGTHS = {"chr1": 248_956_422, "chrM": 16_569, "HLA-A*01:01:01:01": 3_503}


def test_parse_one_based_inclusive_with_commas():
    assert parse_region("chr1:1,000-2,000") == Region("chr1", 999, 2000)
    assert parse_region("chr1:1000-2000", LENGTHS) == Region("chr1", 999, 2000)
    assert len(parse_region("chr1:1,000-2,000")) == 1001


def test_single_base_whole_contig_and_open_end():
    assert parse_region("chrM:1-1") == Region("chrM", 0, 1)
    assert parse_region("chrM", LENGTHS) == Region("chrM", 0, 16_569)
    assert parse_region("chrM", LENGTHS) == Region("chrM", 0, 16_569)
    assert parse_region("chrM:16,000-", LENGTHS) == Region("chrM", 15_999, 16_569)
    assert parse_region("  chrM:5-5  ") == Region("chrM", 4, 5)


def test_start_only_runs_to_the_contig_end_as_in_samtools():
    """``samtools faidx ref.fa chrM:16,000`` prints 16,000 to the end, not one base."""
    assert parse_region("chrM:16,000", LENGTHS) == Region("chrM", 15_999, 16_569)
    assert parse_region("chrM:16,569", LENGTHS) == Region("chrM", 16_568, 16_569)
    with pytest.raises(RegionError, match="contig lengths"):
        parse_region("chrM:16,000")
    with pytest.raises(RegionError, match="after end"):
        parse_region("chrM:16,570", LENGTHS)


def test_str_goes_back_to_one_based():
    assert str(Region("chr1", 999, 2000)) == "chr1:1,000-2,000"
    assert str(Region("chrM", 0, 1)) == "chrM:1-1"


def test_contig_names_with_colons():
    name = "HLA-A*01:01:01:01"
    assert parse_region(name, LENGTHS) == Region(name, 0, 3_503)
    assert parse_region(f"{name}:10-20", LENGTHS) == Region(name, 9, 20)
    assert parse_region(f"{{{name}}}:10-20") == Region(name, 9, 20)
    assert parse_region(f"{{{name}}}", LENGTHS) == Region(name, 0, 3_503)
    r = Region(name, 9, 20)
    assert parse_region(str(r), LENGTHS) == r


def test_ambiguous_name_is_refused_with_the_fix():
    lengths = {"chr1": 100, "chr1:1-10": 50}
    with pytest.raises(RegionError, match=r"ambiguous.*\{chr1:1-10\}"):
        parse_region("chr1:1-10", lengths)
    assert parse_region("{chr1:1-10}", lengths) == Region("chr1:1-10", 0, 50)
    assert parse_region("{chr1}:1-10", lengths) == Region("chr1", 0, 10)


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("chr1:", "malformed"),
    ("chr1:abc", "malformed"),
    ("chr1:1-2-3", "malformed"),
    ("chr1:5,0x0-6000", "malformed"),
    ("chr1:0-100", "1-based"),
    ("chr1:2,000-1,000", "after end"),
    ("{chr1:1-5", "unbalanced"),
    ("{chr1}x", "expected ':'"),
])
def test_malformed_text(text, message):
    with pytest.raises(RegionError, match=message):
        parse_region(text)


def test_unknown_contig_and_past_the_end():
    with pytest.raises(RegionError, match="unknown contig 'chr2'.*chr1"):
        parse_region("chr2:1-10", LENGTHS)
    with pytest.raises(RegionError, match="unknown contig 'chr2'"):
        parse_region("chr2", LENGTHS)
    with pytest.raises(RegionError, match=r"past the end of chrM \(length 16,569 bp\)"):
        parse_region("chrM:16,000-16,570", LENGTHS)
    assert parse_region("chrM:16,000-16,569", LENGTHS).end == 16_569


def test_whole_contig_needs_lengths():
    with pytest.raises(RegionError, match="needs the contig lengths"):
        parse_region("chr1")
    with pytest.raises(RegionError, match="needs the contig lengths"):
        parse_region("chr1:5-")


def test_region_validates_itself():
    with pytest.raises(RegionError):
        Region("chr1", -1, 5)
    with pytest.raises(RegionError):
        Region("chr1", 10, 5)
    with pytest.raises(RegionError):
        Region("", 0, 5)
    assert issubclass(RegionError, GenoctxError)


@settings(deadline=None)
@given(contig=st.sampled_from(sorted(LENGTHS)), data=st.data())
def test_str_parse_round_trip(contig, data):
    size = LENGTHS[contig]
    start = data.draw(st.integers(0, size - 1))
    end = data.draw(st.integers(start + 1, size))
    region = Region(contig, start, end)
    assert parse_region(str(region), LENGTHS) == region
    assert parse_region(str(region).replace(",", ""), LENGTHS) == region


def test_parse_agrees_with_pysam(data_root, tmp_path):
    """htslib's own region parser (through pysam) reads the same bases for the same string."""
    import shutil

    import pysam

    from genoctx.io.fasta import FastaFile

    path = shutil.copy(data_root / "reads" / "ex1" / "ex1.fa", tmp_path / "ex1.fa")
    ref = pysam.FastaFile(str(path))
    with FastaFile(path) as fa:
        for text in ("chr1:1-10", "chr1:1500-1575", "chr2:100-100", "chr2", "chr2:1584-1584"):
            expected = ref.fetch(region=text).encode()
            assert fa.fetch_region(text) == expected
            assert fa.fetch_region(str(fa.resolve(text))) == expected  # with commas


def _write(path, text, gz=False):
    data = text.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_read_bed_skips_headers_and_keeps_zero_based(tmp_path, gz):
    bed = _write(tmp_path / "r.bed", "track name=x\nbrowser position chr1:1-10\n# comment\n\n"
                 "chr1\t0\t100\tname\t0\t+\nchrM\t16000\t16569\r\nHLA-A*01:01:01:01\t5\t6\n",
                 gz=gz)
    assert read_bed(bed, LENGTHS) == [Region("chr1", 0, 100), Region("chrM", 16000, 16569),
                                      Region("HLA-A*01:01:01:01", 5, 6)]


def test_read_bed_keeps_contigs_whose_names_begin_like_header_words(tmp_path):
    bed = _write(tmp_path / "r.bed", "track\tname=x\ntrack1\t0\t10\nbrowser_contig\t5\t9\n")
    assert read_bed(bed) == [Region("track1", 0, 10), Region("browser_contig", 5, 9)]


def test_read_bed_space_separated(tmp_path):
    bed = _write(tmp_path / "r.bed", "chr1 10 20\n")
    assert read_bed(bed) == [Region("chr1", 10, 20)]


@pytest.mark.parametrize("line, message", [
    ("chr1\t10\n", "at least 3"),
    ("chr1\tten\t20\n", "integers"),
    ("chr1\t\u00b2\t20\n", "integers"),
    ("chr1\t1\t\u0662\u0660\n", "integers"),
    ("chr1\t-5\t20\n", "integers"),
    ("chr1\t30\t20\n", "after end"),
    ("chr9\t1\t20\n", "unknown contig 'chr9'"),
    ("chrM\t16000\t16570\n", "length 16,569"),
])
def test_read_bed_errors_name_the_line(tmp_path, line, message):
    bed = _write(tmp_path / "bad.bed", "chr1\t0\t10\n" + line)
    with pytest.raises(RegionError, match=message) as info:
        read_bed(bed, LENGTHS)
    assert f"{bed}:2" in str(info.value)


def test_read_bed_missing_and_truncated(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_bed(tmp_path / "nope.bed")
    data = gzip.compress(b"chr1\t0\t10\n" * 5000)
    (tmp_path / "t.bed.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="cannot read BED"):
        read_bed(tmp_path / "t.bed.gz")
    with pytest.raises(InputError, match="is a folder"):
        read_bed(tmp_path)


@pytest.mark.parametrize("gz", [False, True])
def test_read_bed_from_a_pipe(tmp_path, gz):
    """``--regions <(...)``: a named pipe is read once (it was refused as missing, and a
    gzipped one could not be sniffed and then reopened)."""
    import os
    import threading

    fifo = tmp_path / "regions.bed"
    os.mkfifo(fifo)
    data = b"track name=x\nchr1\t5\t10\nchr2\t0\t7\n"
    data = gzip.compress(data) if gz else data

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed, daemon=True)  # blocked until the pipe is read
    writer.start()
    assert read_bed(fifo) == [Region("chr1", 5, 10), Region("chr2", 0, 7)]
    writer.join(timeout=10)
