"""Pileup channels against pysam (count_coverage and a naive walk of pysam's pileup engine)."""

import shutil

import numpy as np
import pysam
import pytest

from genoctx.errors import InputError, RegionError
from genoctx.io.bam import (
    CHANNEL_INDEX,
    PILEUP_CHANNELS,
    IndexNote,
    bam_info,
    open_alignment,
    pileup_channels,
)
from genoctx.io.regions import Region

ACGT = slice(CHANNEL_INDEX["A"], CHANNEL_INDEX["T"] + 1)


@pytest.fixture(scope="module")
def reads(data_root):
    return data_root / "reads"


@pytest.fixture(scope="module")
def ce_bam(reads, tmp_path_factory):
    """The C. elegans SAM as a sorted, indexed BAM, with its reference."""
    out = tmp_path_factory.mktemp("ce") / "ce.bam"
    pysam.sort("-o", str(out), str(reads / "celegans_chrI" / "ce#1000.sam"))
    pysam.index(str(out))
    return out, reads / "celegans_chrI" / "ce.fa"


@pytest.fixture(scope="module")
def ex1(reads, tmp_path_factory):
    """ex1.bam and ex1.fa copied to a writable folder (the data copy has no index)."""
    folder = tmp_path_factory.mktemp("ex1")
    for name in ("ex1.bam", "ex1.fa"):
        shutil.copy(reads / "ex1" / name, folder / name)
    return folder / "ex1.bam", folder / "ex1.fa"


def _cases(reads, ce_bam, ex1):
    mp = reads / "human_mpileup"
    return [(mp / "mpileup.1.bam", mp / "mpileup.ref.fa", Region("17", 0, 4200)),
            (ex1[0], ex1[1], Region("chr1", 0, 1575)),
            (ex1[0], ex1[1], Region("chr2", 0, 1584)),
            (ce_bam[0], ce_bam[1], Region("CHROMOSOME_I", 0, 1_009_800))]


def _keep(read, min_mapq, exclude, include):
    return (not read.flag & exclude and read.flag & include == include
            and read.mapping_quality >= min_mapq)


FILTERS = [{}, {"min_mapq": 1, "min_baseq": 0}, {"min_baseq": 30, "exclude_flags": 0x704},
           {"include_flags": 0x10}]  # the last: reverse-strand reads only


@pytest.mark.parametrize("filters", FILTERS)
def test_acgt_counts_equal_count_coverage(reads, ce_bam, ex1, filters):
    mapq, baseq = filters.get("min_mapq", 0), filters.get("min_baseq", 13)
    exclude, include = filters.get("exclude_flags", 0xF04), filters.get("include_flags", 0)
    for bam, ref, region in _cases(reads, ce_bam, ex1):
        got = pileup_channels(bam, region, ref, **filters)
        assert got.shape == (len(region), len(PILEUP_CHANNELS)) and got.dtype == np.float32
        with pysam.AlignmentFile(str(bam)) as af:
            want = np.array(af.count_coverage(
                region.contig, region.start, region.end, quality_threshold=baseq,
                read_callback=lambda r: _keep(r, mapq, exclude, include))).T
        assert want.sum() > 0
        np.testing.assert_array_equal(got[:, ACGT], want)


def _naive_channels(bam, region, min_baseq=13, exclude=0xF04):
    """Every channel by walking pysam's pileup engine read by read, in plain Python."""
    out = np.zeros((len(region), 8))
    qsum = np.zeros(len(region))
    with pysam.AlignmentFile(str(bam)) as af:
        columns = af.pileup(region.contig, region.start, region.end, truncate=True,
                            stepper="nofilter", min_base_quality=0, ignore_overlaps=False,
                            ignore_orphans=False, compute_baq=False, max_depth=1_000_000)
        for col in columns:
            i = col.reference_pos - region.start
            for p in col.pileups:
                read = p.alignment
                if read.flag & exclude or read.query_sequence is None or p.is_refskip:
                    continue
                if p.is_del:
                    out[i, 5] += 1
                else:
                    base, q = read.query_sequence[p.query_position], \
                        read.query_qualities[p.query_position]
                    if base not in "ACGT" or q < min_baseq:
                        continue
                    out[i, 1 + "ACGT".index(base)] += 1
                    qsum[i] += q
                out[i, 7] += not read.is_reverse
    out[:, 0] = out[:, 1:6].sum(axis=1)
    n_bases = out[:, 1:5].sum(axis=1)
    out[:, 6] = np.divide(qsum, n_bases, out=np.zeros_like(qsum), where=n_bases > 0)
    out[:, 7] = np.divide(out[:, 7], out[:, 0], out=np.zeros_like(qsum), where=out[:, 0] > 0)
    return out


@pytest.mark.parametrize("min_baseq", [13, 0])
def test_all_channels_equal_naive_pileup(reads, ce_bam, ex1, min_baseq):
    for bam, ref, region in _cases(reads, ce_bam, ex1):
        got = pileup_channels(bam, region, ref, min_baseq=min_baseq)
        want = _naive_channels(bam, region, min_baseq=min_baseq)
        np.testing.assert_array_equal(got[:, :6], want[:, :6])  # counts are exact
        np.testing.assert_allclose(got[:, 6:], want[:, 6:], rtol=1e-6, atol=1e-6)


def test_deletions_present_in_real_data(reads):
    mp = reads / "human_mpileup"
    got = pileup_channels(mp / "mpileup.1.bam", "17:1-4,200", mp / "mpileup.ref.fa")
    assert got[:, CHANNEL_INDEX["del"]].sum() > 0
    covered = got[:, 0] > 0
    assert np.all(got[covered, CHANNEL_INDEX["strand_plus_frac"]] <= 1)
    assert np.all(got[~covered] == 0)


def test_subregion_is_a_slice(reads):
    mp = reads / "human_mpileup"
    whole = pileup_channels(mp / "mpileup.1.bam", Region("17", 0, 4200), mp / "mpileup.ref.fa")
    part = pileup_channels(mp / "mpileup.1.bam", "17:1,001-1,500", mp / "mpileup.ref.fa")
    np.testing.assert_array_equal(part, whole[1000:1500])
    empty = pileup_channels(mp / "mpileup.1.bam", Region("17", 10, 10), mp / "mpileup.ref.fa")
    assert empty.shape == (0, len(PILEUP_CHANNELS))


def test_cram_equals_bam(ce_bam, tmp_path):
    bam, ref = ce_bam
    cram = tmp_path / "ce.cram"
    pysam.view("-C", "-T", str(ref), "-o", str(cram), str(bam), catch_stdout=False)
    with pytest.raises(InputError, match="needs the reference"):
        open_alignment(cram)
    region = Region("CHROMOSOME_I", 0, 200_000)
    np.testing.assert_array_equal(pileup_channels(cram, region, ref),
                                  pileup_channels(bam, region, ref))
    assert (tmp_path / "ce.cram.crai").is_file()


def test_cram_with_another_reference_says_so_and_its_index_gives_no_counts(ce_bam, tmp_path):
    """A .crai holds no read counts (pysam reports zeros: info showed 0 reads); a CRAM decoded
    against the wrong FASTA was reported as corrupt data, after six lines from htslib."""
    bam, ref = ce_bam
    cram = tmp_path / "ce.cram"
    pysam.view("-C", "-T", str(ref), "-o", str(cram), str(bam), catch_stdout=False)
    pysam.index(str(cram))
    info = bam_info(cram)
    assert info["has_index"] and info["mapped"] is None
    assert all(r["mapped"] is None for r in info["references"])
    wrong = tmp_path / "other.fa"
    swap = str.maketrans("ACac", "CAca")  # same names and lengths, other bases
    wrong.write_text("".join(line if line.startswith(">") else line.translate(swap)
                             for line in ref.read_text().splitlines(keepends=True)))
    with pytest.raises(InputError, match="compressed against another reference") as err:
        pileup_channels(cram, "CHROMOSOME_I:1-20,000", wrong)
    assert "CHROMOSOME_I" in str(err.value) and "@SQ M5" in str(err.value)


def test_missing_index_is_built_in_writable_folder(ex1):
    bam, _ = ex1
    with open_alignment(bam) as af:
        assert af.has_index()
    assert bam.with_name("ex1.bam.bai").is_file()


def test_bam_info_counts_match_a_scan(ex1):
    bam, _ = ex1
    open_alignment(bam).close()
    info = bam_info(bam)
    assert info["format"] == "BAM" and info["has_index"] and info["sorted"]
    mapped = {"chr1": 0, "chr2": 0}
    unmapped = 0
    with pysam.AlignmentFile(str(bam)) as af:
        for read in af.fetch(until_eof=True):
            if read.is_unmapped:
                unmapped += 1
            else:
                mapped[read.reference_name] += 1
    assert {r["name"]: r["mapped"] for r in info["references"]} == mapped
    assert info["mapped"] == sum(mapped.values()) and info["unmapped"] == unmapped
    assert [(r["name"], r["length"]) for r in info["references"]] == [("chr1", 1575),
                                                                      ("chr2", 1584)]


def test_errors(reads, ce_bam, tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        pileup_channels(tmp_path / "nope.bam", "chr1:1-10", None)
    with pytest.raises(InputError, match="not a BAM"):
        open_alignment(reads / "ex1" / "ex1.fa")
    # The data folder is read-only and ex1.bam has no index there: none is written there, the
    # file is indexed in a temporary folder for the run (it used to be refused)
    shutil.copy(reads / "ex1" / "ex1.bam", tmp_path / "ex1.bam")
    pysam.index(str(tmp_path / "ex1.bam"))
    with pysam.AlignmentFile(str(tmp_path / "ex1.bam")) as own:
        want = [own.count(c) for c in own.references]
    with pytest.warns(IndexNote, match="no index and its folder is read-only"), \
            open_alignment(reads / "ex1" / "ex1.bam") as af:
        assert af.has_index() and [af.count(c) for c in af.references] == want
    assert sum(want) > 3000
    assert not (reads / "ex1" / "ex1.bam.bai").exists()
    with pytest.raises(InputError, match="SAM"):
        open_alignment(reads / "celegans_chrI" / "ce#1000.sam")
    bam, ref = ce_bam
    with pytest.raises(RegionError, match="unknown contig 'chrUn'"):
        pileup_channels(bam, Region("chrUn", 0, 10), ref)
    with pytest.raises(RegionError, match="runs past"):
        pileup_channels(bam, "CHROMOSOME_II:4,990-5,010", ref)


def test_truncated_bam(reads, tmp_path):
    src = reads / "human_mpileup" / "mpileup.1.bam"
    data = src.read_bytes()
    cut = tmp_path / "cut.bam"
    cut.write_bytes(data[:len(data) // 2])
    shutil.copy(f"{src}.bai", f"{cut}.bai")
    with pytest.raises(InputError, match="truncated"):
        pileup_channels(cut, "17:1-4,200", None)


def test_damaged_bam_says_so_and_a_stale_index_is_built_again(reads, tmp_path):
    """Bytes zeroed inside a BAM (its end-of-file block intact) are named as corrupt data, not
    as htslib's "Closing failed"; an index older than its BAM (the BAM rewritten after it was
    indexed) is built again in a writable folder."""
    import os

    bam = tmp_path / "co.bam"
    shutil.copy(reads / "ex1" / "ex1.bam", bam)
    pysam.index(str(bam))
    want = pileup_channels(bam, "chr1:1-1575", None)
    raw = bytearray(bam.read_bytes())
    raw[40_000:40_200] = bytes(200)
    bam.write_bytes(bytes(raw))
    os.utime(f"{bam}.bai")  # an index that looks current
    with pytest.raises(InputError, match="truncated or corrupt alignment data"):
        for region in ("chr1:1-1575", "chr2:1-1584"):
            pileup_channels(bam, region, None)
    shutil.copy(reads / "ex1" / "ex1.bam", bam)  # a whole BAM again, its index now stale
    os.utime(f"{bam}.bai", (1, 1))
    np.testing.assert_array_equal(pileup_channels(bam, "chr1:1-1575", None), want)
    assert os.stat(f"{bam}.bai").st_mtime > 1


def test_unsorted_bam_is_refused(ce_bam, tmp_path):
    bam, _ = ce_bam
    unsorted = tmp_path / "unsorted.bam"
    with pysam.AlignmentFile(str(bam)) as src:
        header = src.header.to_dict()
        header["HD"] = {"VN": "1.6", "SO": "unknown"}
        records = list(src.fetch(until_eof=True))
        with pysam.AlignmentFile(str(unsorted), "wb", header=header) as out:
            for read in reversed(records):
                out.write(read)
    with pytest.raises(InputError, match="sort"):
        open_alignment(unsorted)


def test_an_unsorted_bam_without_an_index_is_one_line_that_names_the_fix(ce_bam, tmp_path,
                                                                          capfd):
    """Reads in reverse order and no @HD line (so the sort order is unknown until indexing
    fails): one message with the fix, no htslib lines and no raw samtools text."""
    bam, ref = ce_bam
    with pysam.AlignmentFile(str(bam)) as inp:
        header = inp.header.to_dict()
        reads = list(inp)[::-1]
    header.pop("HD", None)
    unsorted = tmp_path / "unsorted.bam"
    with pysam.AlignmentFile(str(unsorted), "wb", header=header) as out:
        for read in reads:
            out.write(read)
    capfd.readouterr()
    with pytest.raises(InputError, match="could not be indexed") as err:
        pileup_channels(unsorted, "CHROMOSOME_I:1-1,000", ref)
    assert "samtools sort" in str(err.value) and "stderr=" not in str(err.value)
    assert "[E::" not in capfd.readouterr().err
    with pytest.raises(InputError, match="sorted by queryname"):
        header["HD"] = {"VN": "1.6", "SO": "queryname"}
        named = tmp_path / "named.bam"
        with pysam.AlignmentFile(str(named), "wb", header=header) as out:
            for read in reads:
                out.write(read)
        open_alignment(named)


def test_cram_reference_in_a_read_only_folder_gets_no_index_written_beside_it(ex1, tmp_path):
    """htslib builds a missing REF.fa.fai beside the FASTA, even in a folder marked read-only
    when it runs as root (a shared data folder); the index is now built in a folder of ours."""
    bam, ref = ex1
    shared = tmp_path / "shared"
    shared.mkdir()
    shutil.copy(ref, shared / "ex1.fa")
    cram = tmp_path / "ex1.cram"
    pysam.view("-C", "-T", str(ref), "-o", str(cram), str(bam), catch_stdout=False)
    shared.chmod(0o555)
    try:
        got = pileup_channels(cram, "chr1:1-1,500", shared / "ex1.fa")
        assert sorted(p.name for p in shared.iterdir()) == ["ex1.fa"]
    finally:
        shared.chmod(0o755)
    np.testing.assert_array_equal(got, pileup_channels(bam, "chr1:1-1,500", ref))


def _crash_safe(code: str):
    """Run ``code`` in a child Python: a segfault in htslib (what a foreign index gave) fails
    the test with its exit code instead of ending the test run (with this tree's genoctx)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import genoctx

    tree = str(Path(genoctx.__file__).parents[1])
    return subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": tree})


def _n_ref(idx) -> int:
    """The reference count of a BAI, or of a CSI (bgzipped, no meta data in a BAM's)."""
    import gzip
    import struct

    with open(idx, "rb") if str(idx).endswith(".bai") else gzip.open(idx) as fh:
        raw = fh.read(20)
    return struct.unpack("<i", raw[4:8] if raw[:3] == b"BAI" else raw[16:20])[0]


@pytest.mark.parametrize("kind", ["ex1 bai", "ex1 csi", "damaged bai"])
def test_an_index_of_another_file_is_rebuilt_or_refused(ex1, ce_bam, tmp_path, kind):
    """ex1.bam's index (2 references) beside a copy of the C. elegans BAM (5), newer than it,
    or a damaged one (magic intact, 0 references): htslib loaded it, bam_info segfaulted in
    its statistics and a region read 0 reads. Now it is rebuilt in a writable folder (the
    counts then equal count_coverage), and in a read-only one built for the run in a temporary
    folder, with a note (it was refused)."""
    import os

    bam, ref = ce_bam
    ext = ".csi" if "csi" in kind else ".bai"
    own = tmp_path / "own"
    own.mkdir()
    if kind == "damaged bai":
        foreign = b"BAI\1" + bytes(50)
    else:
        shutil.copy(ex1[0], own / "ex1.bam")
        pysam.index(*(["-c"] if ext == ".csi" else []), str(own / "ex1.bam"))
        foreign = (own / f"ex1.bam{ext}").read_bytes()
    region = Region("CHROMOSOME_I", 0, 200_000)
    with pysam.AlignmentFile(str(bam)) as af:  # bam's own index: the independent counts
        want = np.array(af.count_coverage(region.contig, region.start, region.end,
                                          quality_threshold=13)).T
    assert want.sum() > 50_000
    for folder_mode in (0o555, 0o755):
        folder = tmp_path / f"m{folder_mode:o}"
        folder.mkdir()
        copy, idx = folder / "ce.bam", folder / f"ce.bam{ext}"
        shutil.copy(bam, copy)
        idx.write_bytes(foreign)
        os.utime(copy, (1_000, 1_000))  # the index is newer: the age check does not catch it
        folder.chmod(folder_mode)
        try:
            info = _crash_safe(f"from genoctx.io.bam import bam_info\nbam_info({str(copy)!r})")
            assert info.returncode == 1 and "Segmentation" not in info.stderr, info.stderr
            assert f"InputError: the index {idx} does not belong to {copy}" in info.stderr
            assert "reference(s) and the header has 5" in info.stderr
            if folder_mode == 0o555:  # indexed for the run elsewhere; the folder as it was
                with pytest.warns(IndexNote, match=f"index made for another file \\(ce.bam{ext}"):
                    got = pileup_channels(copy, region, ref)
                np.testing.assert_array_equal(got[:, ACGT], want)
                assert sorted(p.name for p in folder.iterdir()) == ["ce.bam", f"ce.bam{ext}"]
                assert idx.read_bytes() == foreign
            else:
                got = pileup_channels(copy, region, ref)
                np.testing.assert_array_equal(got[:, ACGT], want)
                assert _n_ref(idx) == 5 and bam_info(copy)["mapped"] == 1000
        finally:
            folder.chmod(0o755)


def test_a_damaged_bam_with_a_current_index_names_the_index_too(reads, tmp_path):
    """Bad data read through an index that passes the checks (the same number of references):
    the message names the index as the other suspect, not only the data."""
    mp = reads / "human_mpileup"
    bam = tmp_path / "m.bam"
    shutil.copy(mp / "mpileup.1.bam", bam)
    shutil.copy(f"{mp / 'mpileup.1.bam'}.bai", f"{bam}.bai")
    raw = bytearray(bam.read_bytes())
    raw[30_000:30_300] = bytes(300)
    bam.write_bytes(bytes(raw))
    with pytest.raises(InputError, match="truncated or corrupt alignment data") as err:
        pileup_channels(bam, "17:1-4,200", None)
    assert "or its index m.bam.bai is not its own" in str(err.value)


def _equals_copy(bam, ref, out):
    """``bam`` with every read base equal to the reference written as '=' (samtools calmd
    -e), as an indexed BAM at ``out``."""
    sam = out.with_suffix(".sam")
    sam.write_text(pysam.calmd("-e", str(bam), str(ref)))
    pysam.view("-b", "-o", str(out), str(sam), catch_stdout=False)
    pysam.index(str(out))
    return out


def test_bases_stored_as_equals_count_as_the_reference_base(reads, ce_bam, tmp_path):
    """'=' read bases were dropped: over CHROMOSOME_I:1-200,000 the depth summed to 35
    instead of 78,817, and every match vanished. Now they count as the reference base, so
    every channel equals the BAM with its bases spelled out (A/C/G/T: count_coverage); reads
    that run past the region's ends included."""
    mp = reads / "human_mpileup"
    cases = [(ce_bam[0], ce_bam[1], [Region("CHROMOSOME_I", 0, 1_009_800),
                                     Region("CHROMOSOME_I", 100, 200)]),
             (mp / "mpileup.1.bam", mp / "mpileup.ref.fa", [Region("17", 0, 4200),
                                                            Region("17", 1000, 1500)])]
    for bam, ref, regions in cases:
        eq = _equals_copy(bam, ref, tmp_path / f"eq_{bam.stem}.bam")
        with pysam.AlignmentFile(str(eq)) as af:
            stored = "".join(r.query_sequence or "" for r in af.fetch(regions[0].contig))
        assert stored.count("=") > 0.9 * len(stored)  # nearly every base is '='
        for region in regions:
            for filters in ({}, {"min_baseq": 0}, {"min_baseq": 30}):
                got = pileup_channels(eq, region, ref, **filters)
                np.testing.assert_array_equal(got, pileup_channels(bam, region, ref, **filters))
                with pysam.AlignmentFile(str(bam)) as af:
                    want = np.array(af.count_coverage(
                        region.contig, region.start, region.end,
                        quality_threshold=filters.get("min_baseq", 13))).T
                np.testing.assert_array_equal(got[:, ACGT], want)
                assert want.sum() > 1_000
    with pytest.raises(InputError, match="store bases as '='") as err:
        pileup_channels(eq, "17:1-4,200", None)
    assert "--reference" in str(err.value) and str(eq) in str(err.value)


# sha256 of pileup_channels (float32 bytes) and tokenize_pileup's tokens (as uint8) for the
# three filter sets below, made before the touched positions became a mask (commit 5b57de6):
# the outputs must stay byte-identical, whatever the flush size.
_BEFORE_THE_MASK = [
    ("ce", "CHROMOSOME_I:1-1,009,800",
     "23baa7fe507ab0521a7e1dd6edfbddeed9d6e22e0cd45f81b9d21805aa867240"),
    ("mpileup.1", "17:1-4,200", "e3b3c8786b6c6352615cefb9759913ac7edafbf13b209c6b3cd630ad26b39e65"),
    ("ex1", "chr1:1-1,575", "1dd19ee3e5b44184a71048f6836d5a67f695e2148b5cee988dcb0ab5ffd80ec7"),
]


@pytest.mark.parametrize("flush", [None, 4096])
def test_pileup_output_is_byte_identical_to_before_the_touched_mask(reads, ce_bam, ex1, flush,
                                                                    monkeypatch):
    import hashlib

    import genoctx.io.bam as bam_module
    from genoctx.tokenize.pileup import tokenize_pileup

    if flush is not None:  # many flushes per region, each marking its positions
        monkeypatch.setattr(bam_module, "_FLUSH_BASES", flush)
    mp = reads / "human_mpileup"
    files = {"ce": ce_bam, "mpileup.1": (mp / "mpileup.1.bam", mp / "mpileup.ref.fa"),
             "ex1": ex1}
    for name, region, want in _BEFORE_THE_MASK:
        bam, ref = files[name]
        h = hashlib.sha256()
        for f in ({}, {"min_baseq": 0}, {"min_baseq": 30, "min_mapq": 20}):
            h.update(pileup_channels(bam, region, ref, **f).tobytes())
            h.update(tokenize_pileup(bam, ref, region, **f)[0].astype(np.uint8).tobytes())
        assert h.hexdigest() == want, name


def test_pileup_memory_does_not_grow_with_depth(ex1, tmp_path, monkeypatch):
    """ex1's chr1 reads repeated 20 and 40 times (1 and 2 M aligned bases over 1,575 bp): the
    touched positions were kept as int64 per counted base (then np.unique'd), so the peak grew
    ~23 bytes per aligned base; with a mask it is the same at both depths. The counts scale
    with the copies exactly; the means and fractions do not change."""
    import tracemalloc

    import genoctx.io.bam as bam_module

    bam, ref = ex1
    monkeypatch.setattr(bam_module, "_FLUSH_BASES", 1 << 16)  # many flushes, small batches
    with pysam.AlignmentFile(str(bam)) as src:
        chr1 = list(src.fetch("chr1"))
        header = src.header
    peaks, got = {}, {}
    for copies in (20, 40):
        deep = tmp_path / f"deep{copies}.bam"
        with pysam.AlignmentFile(str(deep), "wb", header=header) as out:
            for read in chr1:  # each read repeated in place: still sorted
                for _ in range(copies):
                    out.write(read)
        pysam.index(str(deep))
        tracemalloc.start()
        try:
            got[copies] = pileup_channels(deep, "chr1", ref)
            peaks[copies] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    once = pileup_channels(bam, "chr1", ref)
    for copies in (20, 40):
        np.testing.assert_array_equal(got[copies][:, :6], copies * once[:, :6])
        np.testing.assert_allclose(got[copies][:, 6:], once[:, 6:], rtol=1e-6)
    bases = int(got[40][:, 1:6].sum()) - int(got[20][:, 1:6].sum())
    assert bases > 900_000
    assert peaks[40] - peaks[20] < 0.5 * bases, (peaks, bases)  # was ~23 bytes a base
