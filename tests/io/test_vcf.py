"""VCF/BCF reading on files written with pysam against the human 17:1-4200 reference."""

import pysam
import pytest

from genoctx.errors import InputError
from genoctx.io.fasta import FastaFile
from genoctx.io.vcf import RecordOrder, Variant, VariantStats, iter_variants, vcf_info


@pytest.fixture(scope="module")
def ref_path(data_root):
    return data_root / "reads" / "human_mpileup" / "mpileup.ref.fa"


@pytest.fixture(scope="module")
def ref_seq(ref_path):
    with pysam.FastaFile(str(ref_path)) as fa:
        return fa.fetch("17")


def _other(base: str) -> str:
    return "C" if base.upper() != "C" else "G"


def _records(seq):
    """(start, alleles, id, qual, filter) of the test records, built from the real bases."""
    return [
        (9, (seq[9], _other(seq[9]), "T" if seq[9].upper() != "T" else "A"), "rs1", 30.0, "PASS"),
        (99, (seq[99:103], seq[99]), None, None, None),                  # 3-bp deletion
        (199, (seq[199], seq[199] + "GATT"), "ins1", 12.5, "LowQual"),   # insertion
        (299, (_other(seq[299]), "A"), None, None, None),                # REF mismatch
        (399, (seq[399], "<DEL>", "*", _other(seq[399])), None, None, None),
        (4199, (seq[4199] + "A", seq[4199]), None, None, None),          # REF runs off the end
    ]


def _write(path, mode, seq):
    header = pysam.VariantHeader()
    header.contigs.add("17", length=4200)
    header.contigs.add("chrUn", length=1000)
    header.add_meta("FILTER", items=[("ID", "LowQual"), ("Description", "low quality")])
    header.add_meta("INFO", items=[("ID", "END"), ("Number", "1"), ("Type", "Integer"),
                                   ("Description", "end of a symbolic allele")])
    header.add_sample("HG00100")
    with pysam.VariantFile(str(path), mode, header=header) as out:
        for start, alleles, vid, qual, flt in _records(seq):
            rec = out.new_record(contig="17", start=start, alleles=alleles, id=vid, qual=qual)
            if flt:
                rec.filter.add(flt)
            out.write(rec)
        out.write(out.new_record(contig="chrUn", start=5, alleles=("A", "C")))
    return path


@pytest.fixture(params=["vcf", "vcf.gz", "bcf"])
def vcf_path(request, tmp_path, ref_seq):
    mode = {"vcf": "w", "vcf.gz": "wz", "bcf": "wb"}[request.param]
    path = _write(tmp_path / f"calls.{request.param}", mode, ref_seq)
    if request.param == "vcf.gz":
        pysam.tabix_index(str(path), preset="vcf", force=True)
    return path


def test_split_check_and_count(vcf_path, ref_path, ref_seq):
    stats = VariantStats()
    variants = list(iter_variants(vcf_path, ref_path, stats=stats))
    got = [(v.contig, v.pos, v.ref, v.alt, v.allele_index, v.record_index, v.ref_ok)
           for v in variants]
    s = ref_seq
    assert got == [
        ("17", 9, s[9], _other(s[9]), 1, 0, True),
        ("17", 9, s[9], "T" if s[9].upper() != "T" else "A", 2, 0, True),
        ("17", 99, s[99:103], s[99], 1, 1, True),
        ("17", 199, s[199], s[199] + "GATT", 1, 2, True),
        ("17", 299, _other(s[299]), "A", 1, 3, False),
        ("17", 399, s[399], _other(s[399]), 3, 4, True),
        ("17", 4199, s[4199] + "A", s[4199], 1, 5, False),
        ("chrUn", 5, "A", "C", 1, 6, False),
    ]
    assert stats.as_dict() == {"records": 7, "variants": 8, "multiallelic": 2, "symbolic": 2,
                               "ambiguous": 0, "ambiguous_ref": 0, "no_alt": 0,
                               "ref_mismatch": 2, "unknown_contig": 1}
    first, deletion, insertion = variants[0], variants[2], variants[3]
    assert (first.id, first.qual, first.filters, first.is_snv) == ("rs1", 30.0, ("PASS",), True)
    assert (deletion.end, deletion.is_snv) == (103, False)
    assert (insertion.id, insertion.qual, insertion.filters) == ("ins1", 12.5, ("LowQual",))


def test_without_reference_nothing_is_checked(vcf_path):
    stats = VariantStats()
    variants = list(iter_variants(vcf_path, stats=stats))
    assert len(variants) == 8 and all(v.ref_ok for v in variants)
    assert stats.ref_mismatch == stats.unknown_contig == 0


def test_open_fastafile_is_accepted(tmp_path, ref_path, ref_seq):
    path = _write(tmp_path / "calls.vcf", "w", ref_seq)
    with FastaFile(ref_path) as fa:
        assert [v.ref_ok for v in iter_variants(path, fa)].count(False) == 3
        assert fa.fetch("17", 0, 4) == ref_seq[:4].encode()  # still open afterwards


def test_case_insensitive_ref(tmp_path, ref_path, ref_seq):
    header = pysam.VariantHeader()
    header.contigs.add("17", length=4200)
    path = tmp_path / "lower.vcf"
    with pysam.VariantFile(str(path), "w", header=header) as out:
        out.write(out.new_record(contig="17", start=20,
                                 alleles=(ref_seq[20].lower(), _other(ref_seq[20]).lower())))
        out.write(out.new_record(contig="17", start=30, alleles=(ref_seq[30], "N")))
        out.write(out.new_record(contig="17", start=40, alleles=(ref_seq[40], "Y", _other(ref_seq[40]))))
    stats = VariantStats()
    v, a = iter_variants(path, ref_path, stats=stats)
    assert v.ref_ok and isinstance(v, Variant) and v.pos == 20
    assert (a.pos, a.alt, a.allele_index) == (40, _other(ref_seq[40]), 2)  # N and the IUPAC Y are not scored
    assert stats.ambiguous == 2 and stats.variants == 2


def test_vcf_info(vcf_path):
    info = vcf_info(vcf_path)
    assert info["contigs"] == {"17": 4200, "chrUn": 1000}
    assert info["samples"] == ["HG00100"] and info["records"] == 7
    assert info["format"] == ("BCF" if vcf_path.suffix == ".bcf" else "VCF")
    assert info["indexed"] == vcf_path.name.endswith(".gz")


HEADER = "##fileformat=VCFv4.2\n##contig=<ID=17,length=4200>\n" \
         "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"


@pytest.mark.parametrize("text, match", [
    (HEADER + "17\tabc\t.\tA\tC\t.\t.\t.\n",
     r"record 1 is malformed \(POS 'abc' is not a whole number\)"),
    (HEADER + "17\t5\t.\tA\tC\t.\t.\t.\n17\t9\t.\tA\n",
     r"record 2 is malformed \(4 tab-separated column\(s\), a VCF record needs at least 8\)"),
    (HEADER + "17 5 . A C . . .\n", "are the columns separated by spaces"),
    ("##fileformat=VCFv4.2\n17\t5\t.\tA\tC\t.\t.\t.\n", "cannot read the VCF header"),
    (">chr1\nACGT\n", "not VCF"),
])
def test_malformed_vcf_raises_input_error(tmp_path, text, match):
    path = tmp_path / "bad.vcf"
    path.write_text(text)
    with pytest.raises(InputError, match=match):
        list(iter_variants(path))


def test_a_bad_record_of_a_bgzipped_vcf_is_explained_too(tmp_path):
    plain = tmp_path / "bad.vcf"
    plain.write_text(HEADER + "17\t5\t.\tA\tC\t.\t.\t.\n17\t1e3\t.\tA\tC\t.\t.\t.\n")
    path = tmp_path / "bad.vcf.gz"
    pysam.tabix_compress(str(plain), str(path))
    with pytest.raises(InputError, match="record 2 is malformed \\(POS '1e3' is not a whole"):
        list(iter_variants(path))


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        list(iter_variants(tmp_path / "none.vcf"))


def test_data_lines_end_at_newlines_only_and_records_check_ref_and_alt(tmp_path):
    """A stray carriage return inside a line (a text value) is part of that line, as htslib
    reads it; CRLF line ends are dropped. Each record gets its own line back, and a line
    that is not its record's (same CHROM and POS, other REF or ALT) is not written for it."""
    from genoctx.io.vcf import data_lines, record_text

    head = ("##fileformat=VCFv4.2\n##contig=<ID=c,length=500>\n"
            '##INFO=<ID=NOTE,Number=1,Type=String,Description="x">\n'
            "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
    rows = ["c\t205\ta\tC\tT\t.\t.\tNOTE=fi\rrst", "c\t300\tb\tC\tA\t.\t.\tNOTE=second",
            "c\t300\tc\tC\tG\t.\t.\tNOTE=third", "c\t300\td\tC\tT\t.\t.\tNOTE=fourth"]
    for name, end in (("lf.vcf", "\n"), ("crlf.vcf", "\r\n")):
        path = tmp_path / name
        path.write_bytes((head + end.join(rows) + end).replace("\n", end).encode()
                         .replace(b"\r\r\n", b"\r\n"))
        with pysam.VariantFile(str(path)) as vf, data_lines(path) as raw:
            got = [record_text(rec, raw) for rec in vf]
        assert got == rows, name
    with pysam.VariantFile(str(path)) as vf:
        recs = list(vf)
    # a line of the same CHROM and POS but another ALT is not record c's: htslib's text then
    assert record_text(recs[2], iter([rows[1]])).split("\t")[:5] == ["c", "300", "c", "C", "G"]
    assert record_text(recs[2], iter([rows[2]])) == rows[2]


def test_crcrlf_line_ends_are_named(tmp_path):
    """``\\r\\r\\n`` line ends (a CRLF file converted once more) were reported as "1
    tab-separated column(s)": name the line endings."""
    path = tmp_path / "crcr.vcf"
    text = ("##fileformat=VCFv4.2\n##contig=<ID=c,length=500>\n"
            '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n'
            "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tS1\n"
            "c\t10\t.\tA\tG\t.\t.\t.\tGT\t0/1\n")
    path.write_bytes(text.replace("\n", "\r\r\n").encode())
    with pytest.raises(InputError) as err:
        list(iter_variants(path))
    assert "record 1 is malformed" in str(err.value)
    assert "carriage returns" in str(err.value) and "column(s)" not in str(err.value)


def test_a_ref_of_n_at_a_reference_n_is_skipped_as_ambiguous(tmp_path):
    """A REF of N matched a reference N and was scored (as if N were a base)."""
    fasta = tmp_path / "n.fa"
    fasta.write_text(">c\n" + "ACGT" * 10 + "NNNN" + "ACGT" * 10 + "\n")
    vcf = tmp_path / "n.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n##contig=<ID=c,length=84>\n"
                   "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                   "c\t41\trefN\tN\tA,<DEL>\t.\t.\t.\n"    # reference N: skipped, both counted
                   "c\t40\tTN\tTN\tT\t.\t.\t.\n"           # an N in the REF: skipped
                   "c\t1\tnotN\tN\tC\t.\t.\t.\n"           # reference A: a REF mismatch
                   "c\t2\tsnv\tC\tG\t.\t.\t.\n")
    stats = VariantStats()
    got = [(v.id, v.ref_ok) for v in iter_variants(vcf, fasta, stats=stats)]
    assert got == [("notN", False), ("snv", True)]
    assert (stats.ambiguous_ref, stats.symbolic, stats.ambiguous, stats.ref_mismatch) == \
        (2, 1, 0, 1)
    # without a reference nothing is checked, and a REF of N still has no sequence to score
    assert [v.id for v in iter_variants(vcf)] == ["snv"]


def test_breakends_are_symbolic_not_ambiguous(tmp_path):
    """A single breakend (G. or .G) was counted as an ALT with N/IUPAC bases."""
    vcf = tmp_path / "bnd.vcf"
    alts = ["G.", ".G", "GTC.", "G[c:5[", "]c:5]G", "G<ctg1>", "<INS>", "*"]
    vcf.write_text("##fileformat=VCFv4.2\n##contig=<ID=c,length=40>\n"
                   "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                   + "".join(f"c\t3\tb{k}\tG\t{a}\t.\t.\t.\n" for k, a in enumerate(alts))
                   + "c\t3\tsnv\tG\tA,G.\t.\t.\t.\n")
    fasta = tmp_path / "c.fa"
    fasta.write_text(">c\n" + "ACGT" * 10 + "\n")
    stats = VariantStats()
    got = [(v.id, v.alt, v.allele_index) for v in iter_variants(vcf, fasta, stats=stats)]
    assert got == [("snv", "A", 1)]
    assert (stats.symbolic, stats.ambiguous, stats.ambiguous_ref) == (len(alts) + 1, 0, 0)


def test_record_order_names_the_first_record_out_of_order():
    """What score-variants' index and the workflow's split rely on: a contig met again after
    another, or a position before the one before, is out of order; the furthest end is kept."""
    order = RecordOrder()
    assert [order.add(*r) for r in (("a", 9, 10), ("a", 9, 12), ("b", 4, 5))] == [None] * 3
    assert order.problem is None and order.max_end == 12
    assert order.add("b", 2, (1 << 29) + 5) == "b:3 comes after position 5"
    assert order.add("a", 20, 21) == "records of a are not contiguous (again at position 21)"
    assert order.problem == "b:3 comes after position 5" and order.max_end == (1 << 29) + 5
