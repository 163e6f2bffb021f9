"""``genoctx score-variants`` end to end: VCFs written in tmp_path on real references."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pysam
import pytest
import torch

from genoctx.heads.consequence import SEVERITY, GeneModel
from genoctx.heads.variant import change_span, delta_log_likelihood, variant_windows
from genoctx.io.annotation import read_features, read_sequences_genbank
from genoctx.io.fasta import FastaFile
from genoctx.io.vcf import iter_variants
from genoctx.model.config import get_config
from genoctx.model.model import GenoCtxModel

CONTEXT = "300"


@pytest.fixture(scope="module")
def human_ref(data_root) -> Path:
    return data_root / "reads" / "human_mpileup" / "mpileup.ref.fa"


@pytest.fixture(scope="module")
def pcp1(example_genbank, tmp_path_factory) -> Path:
    """pPCP1 as FASTA named like its GenBank record (so the .gb annotation matches)."""
    name, seq = next(read_sequences_genbank(example_genbank))
    path = tmp_path_factory.mktemp("pcp1") / "pPCP1.fa"
    path.write_text(f">{name}\n{seq.decode()}\n")
    return path


def write_vcf(path: Path, contig: str, length: int, rows: list[str]) -> Path:
    head = ["##fileformat=VCFv4.2", f"##contig=<ID={contig},length={length}>",
            "##contig=<ID=chrUn,length=1000>",
            '##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">',
            "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO"]
    path.write_text("\n".join(head + rows) + "\n")
    return path


def other(base: str, k: int = 0) -> str:
    return [b for b in "ACGT" if b != base.upper()][k]


@pytest.fixture
def human_vcf(tmp_path, human_ref) -> Path:
    seq = FastaFile(human_ref).fetch("17").decode()
    rows = [
        f"17\t1001\trs1\t{seq[1000]}\t{other(seq[1000])},{other(seq[1000], 1)}\t50\tPASS\tDP=7",
        f"17\t1501\t.\t{seq[1500:1504]}\t{seq[1500]}\t.\t.\t.",                  # deletion
        f"17\t2001\t.\t{seq[2000]}\t{seq[2000]}GAT\t.\t.\t.",                    # insertion
        f"17\t2501\t.\t{other(seq[2500])}\tT\t.\tPASS\t.",                       # REF mismatch
        f"17\t3001\t.\t{seq[3000]}\t<DEL>,{other(seq[3000])}\t.\t.\t.",          # symbolic + SNV
        f"17\t3501\t.\t{seq[3500]}\tN,{other(seq[3500])}\t.\t.\t.",                # N + SNV
        f"17\t3601\t.\t{seq[3600]}\tR\t.\t.\t.",                                  # IUPAC
        f"17\t4190\t.\t{seq[4189]}\t{other(seq[4189])}\t.\t.\t.",                # near the end
        "chrUn\t10\t.\tA\tC\t.\tPASS\t.",                                          # not in REF
    ]
    return write_vcf(tmp_path / "in.vcf", "17", len(seq), rows)


def test_scores_round_trip_through_pysam(cli, tmp_path, human_vcf, human_ref, model_dir):
    out = tmp_path / "out.vcf.gz"
    code, _, err = cli(["score-variants", human_vcf, "--reference", human_ref, "--model",
                        model_dir, "--context", CONTEXT, "--out", out, "--batch-size", "3"])
    assert code == 0, err
    assert Path(f"{out}.tbi").is_file()
    assert "9 records, 9 variants, 7 scored, 1 ref mismatches, 1 unknown contigs, " \
           "1 symbolic skipped, 2 ALT with N/IUPAC bases skipped" in err
    model = GenoCtxModel.from_pretrained(model_dir)
    with pysam.VariantFile(str(out)) as vf:
        info = vf.header.info
        assert (info["GCX_DLL"].number, info["GCX_DLL"].type) == ("A", "Float")
        assert (info["GCX_CONSEQ"].number, info["GCX_CONSEQ"].type) == ("A", "String")
        assert (info["GCX_CLASS"].number, info["GCX_CLASS"].type) == (1, "String")
        assert "GCX_SCORE" not in info and "GCX_REF_MISMATCH" in vf.header.filters
        records = list(vf)
    assert records[0].info["DP"] == 7 and list(records[0].filter) == ["PASS"]
    variants = {(v.record_index, v.allele_index): v for v in iter_variants(human_vcf, human_ref)}
    with FastaFile(human_ref) as fa:
        for index, rec in enumerate(records):
            dll = rec.info["GCX_DLL"]
            assert len(dll) == len(rec.alts)
            for k, value in enumerate(dll, 1):
                v = variants.get((index, k))
                if v is None or not v.ref_ok:
                    assert value is None
                    continue
                span = change_span(fa, v)  # the windows of every spelling of the change
                want = delta_log_likelihood(model, *variant_windows(fa, span, int(CONTEXT)))
                assert value == pytest.approx(want, abs=2e-3)
                assert rec.info["GCX_CONSEQ"][k - 1] in SEVERITY
    assert list(records[3].filter) == ["GCX_REF_MISMATCH"]
    assert list(records[8].filter) == ["GCX_UNKNOWN_CONTIG"]
    assert records[0].info["GCX_DLL"][0] != records[0].info["GCX_DLL"][1]  # multi-allelic split
    # an ALT of N or an IUPAC code has no one sequence: no score, the record kept as it was
    assert records[5].info["GCX_DLL"][0] is None and records[5].info["GCX_DLL"][1] is not None
    assert records[6].alts == ("R",) and records[6].info.get("GCX_DLL", (None,)) == (None,)


def test_same_bytes_on_every_run(cli, tmp_path, human_vcf, human_ref, model_dir):
    outs = [tmp_path / "a.vcf.gz", tmp_path / "b.vcf.gz"]
    for out, batch in zip(outs, ("16", "16")):
        code, _, err = cli(["score-variants", human_vcf, "-R", human_ref, "--model", model_dir,
                            "--context", CONTEXT, "-o", out, "--batch-size", batch, "-q"])
        assert code == 0, err
    assert outs[0].read_bytes() == outs[1].read_bytes()


def test_annotation_gives_consequences_and_classes(cli, tmp_path, pcp1, example_genbank,
                                                   model_dir):
    features = read_features(example_genbank)
    contig = next(iter(features))
    with FastaFile(pcp1) as fa:
        seq = fa.fetch(contig).decode()
        cds = [f for f in features[contig] if f.kind == "CDS"]
        sites = sorted({f.start + 10 for f in cds} | {f.end - 2 for f in cds} | {30, 2000})
        rows = [f"{contig}\t{p + 1}\t.\t{seq[p]}\t{other(seq[p])},{other(seq[p], 2)}\t.\t.\t."
                for p in sites]
        vcf = write_vcf(tmp_path / "p.vcf", contig, len(seq), rows)
        code, out, err = cli(["score-variants", vcf, "-R", pcp1, "--annotation", example_genbank,
                              "--model", model_dir, "--context", CONTEXT, "-q"])
        assert code == 0, err
        gm = GeneModel.from_features(features, fa)
        lines = [ln.split("\t") for ln in out.splitlines() if not ln.startswith("#")]
        assert len(lines) == len(sites)
        for p, cols in zip(sites, lines):
            info = dict(kv.split("=") for kv in cols[7].split(";"))
            alts = cols[4].split(",")
            assert info["GCX_CONSEQ"].split(",") == [gm.consequence(contig, p, seq[p], a)
                                                     for a in alts]
            assert info["GCX_CLASS"] == gm.klass(contig, p)
    conseqs = {c for cols in lines for c in dict(kv.split("=") for kv in
                                                  cols[7].split(";"))["GCX_CONSEQ"].split(",")}
    assert {"noncoding", "stop_lost"} <= conseqs and conseqs & {"missense", "synonymous"}


def test_reference_calls_get_the_class_and_the_ref_check(cli, tmp_path, pcp1, example_genbank):
    """ALT "." (a reference call, as in a gVCF) has no allele to score or give a consequence,
    but gets the class at its site and the REF check; the SNV beside it is scored as before."""
    features = read_features(example_genbank)
    contig = next(iter(features))
    cds = next(f for f in features[contig] if f.kind == "CDS")
    with FastaFile(pcp1) as fa:
        seq = fa.fetch(contig).decode()
        gm = GeneModel.from_features(features, fa)
    p, q = cds.start + 10, 30
    rows = [f"{contig}\t{p + 1}\t.\t{seq[p]}\t.\t.\t.\t.",
            f"{contig}\t{p + 1}\t.\t{seq[p]}\t{other(seq[p])}\t.\t.\t.",
            f"{contig}\t{q + 1}\t.\t{other(seq[q])}\t.\t.\tPASS\t."]
    vcf = write_vcf(tmp_path / "ref.vcf", contig, len(seq), rows)
    code, out, err = cli(["score-variants", vcf, "-R", pcp1, "--annotation", example_genbank,
                          "--model", "none", "-q"])
    assert code == 0, err
    recs = _records(out)
    assert recs[0][7] == f"GCX_CLASS={gm.klass(contig, p)}" and recs[0][6] == "."
    assert f"GCX_CLASS={gm.klass(contig, p)}" in recs[1][7] and "GCX_CONSEQ=" in recs[1][7]
    assert recs[2][6] == "GCX_REF_MISMATCH" and recs[2][7] == f"GCX_CLASS={gm.klass(contig, q)}"


def test_an_annotation_with_escaped_contig_names_reads_back(cli, tmp_path, example_fasta):
    """genoctx's GFF3 writes a PanSN name S1#1#p as S1%231%23p (GFF3 escaping); read raw, the
    annotation matched no contig and every variant there read 'noncoding', silently."""
    seq = "".join(example_fasta.read_text().splitlines()[1:])
    fa = tmp_path / "two.fa"
    fa.write_text(f">S1#1#p\n{seq}\n>plain\n{seq}\n")
    code, _, err = cli(["annotate", fa, "--model", "none", "--formats", "gff3",
                        "--out", tmp_path / "two", "-q"])
    assert code == 0, err
    gff3 = tmp_path / "two.gff3"
    assert "S1%231%23p\t" in gff3.read_text()
    feats = read_features(gff3)
    assert set(feats) == {"S1#1#p", "plain"}
    assert [(f.start, f.end) for f in feats["S1#1#p"]] == [(f.start, f.end) for f in feats["plain"]]
    cds = next(f for f in feats["plain"] if f.kind == "CDS")
    p = cds.start + 10
    rows = [f"{c}\t{p + 1}\t.\t{seq[p]}\t{other(seq[p])}\t.\t.\t." for c in ("S1#1#p", "plain")]
    vcf = tmp_path / "v.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                   + "\n".join(rows) + "\n")
    code, out, err = cli(["score-variants", vcf, "-R", fa, "-a", gff3, "--model", "none", "-q"])
    assert code == 0, err
    info = [r[7] for r in _records(out)]
    assert info[0] == info[1] and "GCX_CLASS=CDS" in info[0]


def test_translation_table_reaches_the_consequences(cli, tmp_path, pcp1, example_genbank,
                                                   model_dir):
    """With an annotation that names no genetic code, ``-g 4`` makes TGG → TGA synonymous."""
    text = example_genbank.read_text()
    bare = tmp_path / "bare.gb"
    bare.write_text("".join(ln for ln in text.splitlines(keepends=True)
                            if "/transl_table=" not in ln))
    features = read_features(bare)
    contig = next(iter(features))
    with FastaFile(pcp1) as fa:
        seq = fa.fetch(contig).decode().upper()
    sites = []
    for f in features[contig]:
        if f.kind != "CDS" or f.strand != 1:
            continue
        (s, e), = f.parts
        sites += [s + i + 2 for i in range(3, e - s - 3, 3) if seq[s + i:s + i + 3] == "TGG"]
    assert sites
    vcf = write_vcf(tmp_path / "w.vcf", contig, len(seq),
                    [f"{contig}\t{p + 1}\t.\tG\tA\t.\t.\t." for p in sites])
    got = {}
    for table in ("11", "4"):
        code, out, err = cli(["score-variants", vcf, "-R", pcp1, "--annotation", bare, "-g",
                              table, "--model", model_dir, "--context", CONTEXT, "-q"])
        assert code == 0, err
        got[table] = [dict(kv.split("=") for kv in ln.split("\t")[7].split(";"))["GCX_CONSEQ"]
                      for ln in out.splitlines() if not ln.startswith("#")]
    assert got["11"] == ["nonsense"] * len(sites)
    assert got["4"] == ["synonymous"] * len(sites)


def test_annotation_head_gives_classes(cli, tmp_path, human_vcf, human_ref):
    from genoctx.heads.annotation import AnnotationHead, AnnotationHeadConfig, save_annotation_model
    from genoctx.heads.classes import CLASSES

    torch.manual_seed(1)
    backbone = GenoCtxModel.from_config(get_config("tiny", num_layers=1))
    head = AnnotationHead(AnnotationHeadConfig(in_dim=2 * backbone.config.d_model, hidden=16))
    save_annotation_model(tmp_path / "ah", backbone, head)
    out = tmp_path / "o.vcf"
    code, _, err = cli(["score-variants", human_vcf, "-R", human_ref, "--model", tmp_path / "ah",
                        "--context", CONTEXT, "-o", out, "-q"])
    assert code == 0, err
    with pysam.VariantFile(str(out)) as vf:
        assert "annotation head" in vf.header.info["GCX_CLASS"].description
        classes = {rec.chrom: rec.info.get("GCX_CLASS") for rec in vf}
    assert classes["17"] in CLASSES and classes["chrUn"] in (None, ".")


def test_supervised_head_hook(tmp_path, human_vcf, human_ref, model_dir):
    """A VariantHead writes GCX_SCORE (declared); here: the change in G+C count."""
    from genoctx.cli.score_variants import score_vcf
    from genoctx.tokenize import nucleotide as nt

    def gc_change(variant, ref_ids, alt_ids):
        return int(np.isin(alt_ids, (nt.C, nt.G)).sum() - np.isin(ref_ids, (nt.C, nt.G)).sum())

    out = tmp_path / "s.vcf"
    score_vcf(human_vcf, human_ref, out, model=str(model_dir), context=int(CONTEXT),
              supervised=gc_change)
    with pysam.VariantFile(str(out)) as vf:
        assert vf.header.info["GCX_SCORE"].number == "A"
        rec = next(iter(vf))
    def gc(bases):
        return sum(b in "GC" for b in bases.upper())

    assert list(rec.info["GCX_SCORE"]) == [gc(a) - gc(rec.ref) for a in rec.alts]


def test_unsorted_gz_output_is_kept_without_index(cli, tmp_path, human_ref, model_dir):
    seq = FastaFile(human_ref).fetch("17").decode()
    rows = [f"17\t{p}\t.\t{seq[p - 1]}\t{other(seq[p - 1])}\t.\t.\t." for p in (3000, 1000)]
    vcf = write_vcf(tmp_path / "u.vcf", "17", len(seq), rows)
    out = tmp_path / "u.vcf.gz"
    code, _, err = cli(["score-variants", vcf, "-R", human_ref, "--model", model_dir,
                        "--context", CONTEXT, "-o", out, "-q"])
    assert code == 0 and "not tabix-indexed" in err
    assert not Path(f"{out}.tbi").exists()
    assert len(list(pysam.VariantFile(str(out)))) == 2


@pytest.mark.parametrize("case", ["missing_vcf", "malformed_vcf", "missing_reference",
                                  "unknown_contig", "bad_context", "annotation_elsewhere",
                                  "missing_model", "table_not_decoded", "table_unknown"])
def test_bad_inputs_exit_2_with_one_line(cli, tmp_path, human_vcf, human_ref, model_dir,
                                         example_genbank, case):
    vcf, ref, extra = human_vcf, human_ref, []
    model = model_dir
    if case == "missing_vcf":
        vcf = tmp_path / "nope.vcf"
    elif case == "malformed_vcf":
        vcf = tmp_path / "bad.vcf"
        vcf.write_text(human_vcf.read_text() + "17\tnotanumber\t.\tA\tC\t.\t.\t.\n")
    elif case == "missing_reference":
        ref = tmp_path / "nope.fa"
    elif case == "unknown_contig":
        vcf = write_vcf(tmp_path / "x.vcf", "chrX", 1000, ["chrX\t10\t.\tA\tC\t.\t.\t."])
    elif case == "bad_context":
        extra = ["--context", "0"]
    elif case == "annotation_elsewhere":
        extra = ["--annotation", example_genbank]
    elif case == "missing_model":
        model = tmp_path / "no_model"
    elif case == "table_not_decoded":  # an NCBI code, but not one the gene decoder calls in
        extra = ["--translation-table", "2"]
    elif case == "table_unknown":
        extra = ["--translation-table", "7", "--annotation", example_genbank]
    out = tmp_path / "out.vcf"
    before = set(tmp_path.iterdir())
    code, _, err = cli(["score-variants", vcf, "-R", ref, "--model", model,
                        "--context", CONTEXT, "-o", out, "-q", *extra])
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("genoctx: error:"), err
    assert not out.exists() and set(tmp_path.iterdir()) == before


def test_the_wrong_reference_is_named_before_the_model_loads(cli, tmp_path, human_ref, model_dir,
                                                             monkeypatch):
    """A VCF on other contigs (chr prefixes, another genome) was refused only after torch and
    the weights had loaded, seconds into the run; a wrong --model is still refused before the
    VCF is read."""
    import genoctx.cli.score_variants as sv

    def never(*args, **kwargs):
        raise AssertionError("the model loaded before the VCF was checked")

    monkeypatch.setattr(sv, "_load_model", never)
    vcf = write_vcf(tmp_path / "x.vcf", "chrX", 1000, ["chrX\t10\t.\tA\tC\t.\t.\t."])
    code, _, err = cli(["score-variants", vcf, "-R", human_ref, "--model", model_dir,
                        "-o", tmp_path / "out.vcf", "-q"])
    assert code == 2 and "none of the VCF's contigs (chrX)" in err, err

    monkeypatch.setattr(sv, "_survey", never)
    code, _, err = cli(["score-variants", vcf, "-R", human_ref, "--model", tmp_path / "nope",
                        "-o", tmp_path / "out.vcf", "-q"])
    assert code == 2 and err.startswith("genoctx: error:") and "nope" in err, err
    assert not (tmp_path / "out.vcf").exists()


def test_predicted_gene_model_is_the_one_annotate_writes(example_fasta):
    """GCX_CONSEQ without --annotation comes from the same genes as `genoctx annotate` (the
    checkpoint's decoder settings and the RNA-gene filter), not from default settings."""
    from genoctx.heads.annotate import annotate_fasta, decoder_params
    from genoctx.heads.annotation import load_annotation_model
    from genoctx.heads.consequence import predict_gene_model
    from genoctx.io.regions import Region
    from genoctx.model.checkpoint import resolve_checkpoint

    with FastaFile(example_fasta) as fa:
        (contig, n), = fa.lengths.items()
        backbone, head = load_annotation_model("embedded")
        pred = predict_gene_model(fa, [Region(contig, 0, n)], backbone=backbone, head=head,
                                  params=decoder_params(resolve_checkpoint("embedded")))
    written = annotate_fasta(example_fasta, quiet=True).genes
    key = lambda genes: sorted((g.contig, g.strand, g.start, g.end) for g in genes)  # noqa: E731
    assert len(written) >= 8 and key(pred.calls) == key(written)


def _records(text: str) -> list[list[str]]:
    return [ln.split("\t") for ln in text.splitlines() if ln and not ln.startswith("#")]


def test_gzip_and_piped_vcfs_are_read(cli, tmp_path, human_vcf, human_ref, model_dir):
    """Plain gzip (which htslib cannot rewind), a pipe (which cannot be read twice) and a file
    ending in empty lines give the records of the plain file."""
    import gzip
    import os

    def run(vcf):
        code, out, err = cli(["score-variants", vcf, "-R", human_ref, "--model", model_dir,
                              "--context", CONTEXT, "-q"])
        assert code == 0, err
        return _records(out)

    want = run(human_vcf)
    blank = tmp_path / "blank.vcf"  # a hand-edited file ending in empty lines (htslib stops)
    blank.write_bytes(human_vcf.read_bytes() + b"\n  \n\n")
    assert run(blank) == want
    lines = human_vcf.read_bytes().split(b"\n")
    body = lines.index(next(ln for ln in lines if not ln.startswith(b"#")))
    inner = tmp_path / "inner.vcf"  # empty lines between records and after the header
    inner.write_bytes(b"\n".join(lines[:body] + [b""] + lines[body:body + 2] + [b" \t", b""]
                                 + lines[body + 2:]) + b"   ")
    assert run(inner) == want
    bgz = tmp_path / "inner.vcf.gz"
    pysam.tabix_compress(str(inner), str(bgz))
    assert run(bgz) == want
    gz = tmp_path / "in.vcf.gz"
    gz.write_bytes(gzip.compress(human_vcf.read_bytes()))
    assert run(gz) == want
    read, write = os.pipe()
    with os.fdopen(write, "wb") as fh:
        fh.write(human_vcf.read_bytes())  # small: fits the pipe's buffer
    try:
        assert run(f"/dev/fd/{read}") == want
    finally:
        os.close(read)


def test_blank_line_scan_across_pieces(tmp_path):
    """The blank-line scan agrees with a line-by-line check wherever the 1-MiB pieces cut."""
    from genoctx.cli.score_variants import _has_blank_line

    rng = np.random.default_rng(0)
    parts = [b"a\tb", b"", b" ", b"\t\r", b"xy", b"c\r"]
    for trial in range(300):
        text = b"\n".join(parts[i] for i in rng.integers(0, len(parts), rng.integers(1, 8)))
        text += b"\n" if rng.random() < 0.5 else b""
        body = text[:-1] if text.endswith(b"\n") else text
        want = bool(text) and any(not ln.strip() for ln in body.split(b"\n"))
        f = tmp_path / f"t{trial}.vcf"
        f.write_bytes(text)
        for size in (1, 2, 3, 7, 1 << 20):
            assert _has_blank_line(f, "none", piece_size=size) == want, (text, size)


def test_ref_check_reads_ref_not_info_end_and_pos_zero_is_filtered(cli, tmp_path, human_ref,
                                                                    model_dir):
    """A gVCF block or symbolic SV whose INFO/END lies past POS still has its REF checked by
    REF's own length (no false mismatch); POS 0 (VCF's telomere) is a mismatch, not a crash."""
    seq = FastaFile(human_ref).fetch("17").decode()
    rows = [f"17\t201\t.\t{seq[200]}\t<DEL>\t.\tPASS\tEND=400",
            f"17\t741\t.\t{seq[740]}\t{other(seq[740])}\t.\tPASS\tEND=745",
            "17\t0\t.\tN\tNA\t.\tPASS\t.",
            f"17\t801\t.\t{other(seq[800])}\tA\t.\tPASS\t."]
    vcf = write_vcf(tmp_path / "end.vcf", "17", len(seq), rows)
    text = vcf.read_text().replace("##contig=<ID=chrUn", '##INFO=<ID=END,Number=1,Type=Integer,'
                                   'Description="End">\n##contig=<ID=chrUn', 1)
    vcf.write_text(text)
    code, out, err = cli(["score-variants", vcf, "-R", human_ref, "--model", model_dir,
                          "--context", CONTEXT])
    assert code == 0, err
    filters = [r[6] for r in _records(out)]
    assert filters == ["PASS", "PASS", "GCX_REF_MISMATCH", "GCX_REF_MISMATCH"]
    assert "2 ref mismatches" in err


@pytest.mark.parametrize("out, message", [("dir", "is a folder"), ("o.bcf", "BCF output")])
def test_output_names_that_cannot_be_written_are_refused_first(cli, tmp_path, human_vcf, human_ref,
                                                               model_dir, out, message):
    (tmp_path / "dir").mkdir()
    code, _, err = cli(["score-variants", human_vcf, "-R", human_ref, "--model", model_dir,
                        "--context", CONTEXT, "-o", tmp_path / out, "-q"])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_dash_output_is_standard_output(cli, tmp_path, human_vcf, human_ref, model_dir,
                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(["score-variants", human_vcf, "-R", human_ref, "--model", model_dir,
                          "--context", CONTEXT, "-o", "-", "-q"])
    assert code == 0, err
    assert _records(out) and not (tmp_path / "-").exists()


@pytest.mark.parametrize("compress", [False, True])
def test_input_values_are_written_as_given(cli, tmp_path, human_ref, model_dir, compress):
    """Every column but INFO's genoctx entries and FILTER is the input's text: floats keep all
    their digits (htslib's text would round them to six) and genotypes stay as they were."""
    seq = FastaFile(human_ref).fetch("17").decode()
    rows = [f"17\t1001\t.\t{seq[1000]}\t{other(seq[1000])}\t12.3456789\tPASS\tDP=7;AF=0.123456789",
            f"17\t1501\trs9\t{seq[1500:1504]}\t{seq[1500]}\t.\t.\t."]
    vcf = write_vcf(tmp_path / "in.vcf", "17", len(seq), rows)
    vcf.write_text(vcf.read_text().replace(
        "#CHROM", '##INFO=<ID=AF,Number=A,Type=Float,Description="AF">\n#CHROM', 1))
    if compress:
        pysam.tabix_compress(str(vcf), str(vcf) + ".gz", force=True)
        vcf = Path(str(vcf) + ".gz")
    code, out, err = cli(["score-variants", vcf, "-R", human_ref, "--model", model_dir,
                          "--context", CONTEXT, "-q"])
    assert code == 0, err
    got = _records(out)
    for row, cols in zip(rows, got):
        want = row.split("\t")
        assert cols[:6] == want[:6] and cols[6] in (want[6], "PASS")
        assert cols[7].startswith("GCX_") if want[7] == "." else cols[7].startswith(want[7] + ";")
    assert len(got) == len(rows)


def test_records_only_on_missing_contigs_of_a_fitting_vcf_are_filtered(cli, tmp_path, human_ref,
                                                                       model_dir):
    """A VCF (a workflow chunk, say) whose records all sit on a contig the reference lacks,
    but whose header declares one it has, is the part of a VCF that fits: its records get
    GCX_UNKNOWN_CONTIG, as in the whole file, instead of the wrong-reference error."""
    seq = FastaFile(human_ref).fetch("17").decode()
    vcf = write_vcf(tmp_path / "chunk.vcf", "17", len(seq), ["chrUn\t10\t.\tA\tC\t.\tPASS\t."])
    code, out, err = cli(["score-variants", vcf, "-R", human_ref, "--model", model_dir,
                          "--context", CONTEXT, "-q"])
    assert code == 0, err
    assert [r[6] for r in _records(out)] == ["GCX_UNKNOWN_CONTIG"]


def test_predicted_classes_agree_with_the_consequences(cli, tmp_path, pcp1, model_dir):
    """Without --annotation, GCX_CLASS and GCX_CONSEQ come from the same predicted genes: a
    coding consequence sits on a CDS class (of a predicted gene), a noncoding one never does,
    whatever an annotation head's own per-base argmax says."""
    from genoctx.heads.annotation import AnnotationHead, AnnotationHeadConfig, save_annotation_model

    torch.manual_seed(3)  # an untrained head: its argmax says CDS where no gene is called
    backbone = GenoCtxModel.from_config(get_config("tiny", num_layers=1))
    head = AnnotationHead(AnnotationHeadConfig(in_dim=2 * backbone.config.d_model, hidden=16))
    save_annotation_model(tmp_path / "ah", backbone, head)
    with FastaFile(pcp1) as fa:
        contig = fa.contigs[0]
        seq = fa.fetch(contig).decode().upper()
    sites = range(40, len(seq) - 40, 97)
    vcf = write_vcf(tmp_path / "s.vcf", contig, len(seq),
                    [f"{contig}\t{p + 1}\t.\t{seq[p]}\t{other(seq[p])}\t.\t.\t." for p in sites])
    coding = {"synonymous", "missense", "nonsense", "stop_lost", "start_lost"}
    seen = set()
    for model in (model_dir, tmp_path / "ah"):  # genes from the sequence; from a (bad) head
        code, out, err = cli(["score-variants", vcf, "-R", pcp1, "--model", model,
                              "--context", CONTEXT, "--device", "cpu", "-q"])
        assert code == 0, err
        pairs = [(info["GCX_CLASS"], info["GCX_CONSEQ"]) for info in
                 (dict(kv.split("=") for kv in ln.split("\t")[7].split(";"))
                  for ln in out.splitlines() if not ln.startswith("#"))]
        assert len(pairs) == len(sites)
        for klass, conseq in pairs:
            assert klass.startswith("CDS") == (conseq in coding), (model.name, klass, conseq)
            seen.add(klass[:3])
    assert seen >= {"CDS", "int"}


def test_header_lengths_unlike_the_reference_are_warned(cli, tmp_path, human_ref, model_dir):
    seq = FastaFile(human_ref).fetch("17").decode()
    row = f"17\t101\t.\t{seq[100]}\t{other(seq[100])}\t.\t.\t."
    past = f"17\t{len(seq) + 5}\t.\tA\tC\t.\t.\t."  # past the reference's end
    for length, warned in ((len(seq), False), (len(seq) + 1000, True)):
        vcf = write_vcf(tmp_path / f"{length}.vcf", "17", length, [row, past])
        code, out, err = cli(["score-variants", vcf, "-R", human_ref, "--model", model_dir,
                              "--context", CONTEXT, "-q"])
        assert code == 0, err
        assert ("warning: the VCF header says 17 is" in err) == warned
        if warned:
            assert f"{length:,} bp, the reference {len(seq):,} bp" in err
        body = [ln.split("\t") for ln in out.splitlines() if not ln.startswith("#")]
        assert [cols[6] for cols in body] == [".", "GCX_REF_MISMATCH"]
        assert "GCX_CLASS=." in body[1][7]  # no class where the reference has no base
        assert "GCX_CLASS=." not in body[0][7]
        assert "runs past the end of its sequence" in out


def _without_dll(text: str) -> list[str]:
    """Output lines less GCX_DLL (header line and INFO entries) and the provenance line."""
    out = []
    for ln in text.splitlines():
        if ln.startswith(("##INFO=<ID=GCX_DLL,", "##genoctx_score_variants=")):
            continue
        if not ln.startswith("#"):
            cols = ln.split("\t")
            cols[7] = ";".join(x for x in cols[7].split(";") if not x.startswith("GCX_DLL="))
            ln = "\t".join(cols)
        out.append(ln)
    return out


@pytest.mark.parametrize("with_annotation", [False, True])
def test_model_none_gives_the_same_consequences_without_dll(cli, tmp_path, pcp1, example_genbank,
                                                             model_dir, with_annotation):
    """--model none runs no model: no GCX_DLL is declared or written, and GCX_CLASS /
    GCX_CONSEQ are those of a run with a model (from the annotation, or from genes predicted on
    the sequence alone, as a checkpoint without an annotation head predicts them); a REF
    mismatch is still filtered and the file reads back through pysam."""
    with FastaFile(pcp1) as fa:
        contig = fa.contigs[0]
        seq = fa.fetch(contig).decode().upper()
    sites = list(range(40, len(seq) - 40, 211))
    rows = [f"{contig}\t{p + 1}\t.\t{seq[p]}\t{other(seq[p])},{other(seq[p], 1)}\t.\t.\t."
            for p in sites]
    rows.append(f"{contig}\t{sites[-1] + 3}\t.\t{other(seq[sites[-1] + 2])}\tA\t.\t.\t.")
    vcf = write_vcf(tmp_path / "n.vcf", contig, len(seq), rows)
    extra = ["--annotation", example_genbank] if with_annotation else []
    runs = {}
    for model in ("none", model_dir):
        out = tmp_path / f"{'none' if model == 'none' else 'model'}.vcf"
        code, _, err = cli(["score-variants", vcf, "-R", pcp1, "--model", model, "--context",
                            CONTEXT, "--device", "cpu", "-o", out, *extra])
        assert code == 0, err
        runs[model] = (out.read_text(), err)
    text, err = runs["none"]
    assert "GCX_DLL" not in text and "Model=none" in text
    assert "annotated (--model none: no GCX_DLL)" in err
    assert _without_dll(text) == _without_dll(runs[model_dir][0])
    with pysam.VariantFile(str(tmp_path / "none.vcf")) as vf:
        recs = list(vf)
    assert len(recs) == len(rows)
    assert all("GCX_CONSEQ" in r.info and "GCX_DLL" not in r.info for r in recs[:-1])
    assert list(recs[-1].filter) == ["GCX_REF_MISMATCH"]
    conseqs = {c for r in recs[:-1] for c in r.info["GCX_CONSEQ"]}
    assert conseqs & {"missense", "synonymous"} and "noncoding" in conseqs


# ----------------------------------------------------------------------------- audit fixes

def _plain_vcf(path: Path, rows: list[str], contigs: dict[str, int] | None = None) -> Path:
    head = ["##fileformat=VCFv4.2"] + [f"##contig=<ID={c},length={n}>"
                                       for c, n in (contigs or {}).items()]
    path.write_text("\n".join(head + ["#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO"] + rows)
                    + "\n")
    return path


def test_an_annotation_of_another_assembly_is_warned(cli, tmp_path, pcp1, example_genbank):
    """A GenBank record of 9,609 bp against a reference with one base inserted (9,610 bp) read
    its genes one base off (the start codon ATG at 88-90 read missense, not start_lost), with
    no word; so did a GFF3 whose ##sequence-region says another length. Both are warned, as
    the VCF header's ##contig lengths are; so is a GenBank sequence of the same length that
    differs from the reference's."""
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    shifted = tmp_path / "shifted.fa"
    shifted.write_text(f">{contig}\nA{seq}\n")
    vcf = _plain_vcf(tmp_path / "s.vcf", [f"{contig}\t88\t.\t{seq[86]}\tC\t.\t.\t."])
    code, _, err = cli(["score-variants", vcf, "-R", shifted, "-a", example_genbank,
                        "--model", "none", "-q"])
    assert code == 0, err
    assert (f"warning: the annotation {example_genbank.name} says {contig} is 9,609 bp, the "
            "reference 9,610 bp") in err
    gff = tmp_path / "g.gff3"
    gff.write_text(f"##gff-version 3\n##sequence-region {contig} 1 9500\n"
                   f"{contig}\tx\tgene\t87\t1109\t.\t+\t.\tID=g\n"
                   f"{contig}\tx\tCDS\t87\t1109\t.\t+\t0\tID=c;Parent=g\n")
    code, _, err = cli(["score-variants", vcf, "-R", pcp1, "-a", gff, "--model", "none", "-q"])
    assert code == 0, err
    assert f"says {contig} is 9,500 bp, the reference 9,609 bp" in err
    edited = tmp_path / "edited.fa"  # same length, one base changed
    edited.write_text(f">{contig}\n{seq[:5000]}{other(seq[5000])}{seq[5001:]}\n")
    for ref, warned in ((pcp1, False), (edited, True)):
        code, _, err = cli(["score-variants", vcf, "-R", ref, "-a", example_genbank,
                            "--model", "none", "-q"])
        assert code == 0, err
        assert "warning" not in err if not warned else \
            f"the sequence of {contig} in the annotation {example_genbank.name} differs from " \
            "the reference's at 1 base(s)" in err


def test_variants_on_contigs_the_annotation_does_not_cover_are_counted(cli, tmp_path, pcp1,
                                                                      example_genbank):
    """Variants on a reference contig the annotation has nothing for got GCX_CONSEQ=noncoding
    silently: a warning names the contig and its count, and the summary counts them."""
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    two = tmp_path / "two.fa"
    two.write_text(f">{contig}\n{seq}\n>copy\n{seq}\n")
    rows = [f"{c}\t{p + 1}\t.\t{seq[p]}\t{other(seq[p])}\t.\t.\t."
            for c in (contig, "copy") for p in (100, 300)]
    vcf = _plain_vcf(tmp_path / "v.vcf", rows)
    code, out, err = cli(["score-variants", vcf, "-R", two, "-a", example_genbank,
                          "--model", "none"])
    assert code == 0, err
    assert (f"warning: 2 variant(s) lie on contig(s) that the annotation "
            f"{example_genbank.name} does not cover: copy (2)") in err
    assert "2 on contigs without annotation" in err
    info = [r[7] for r in _records(out)]
    assert all("GCX_CONSEQ=noncoding" in x for x in info[2:])
    code, _, err = cli(["score-variants", _plain_vcf(tmp_path / "w.vcf", rows[:2]), "-R", two,
                        "-a", example_genbank, "--model", "none"])
    assert code == 0 and "does not cover" not in err and "without annotation" not in err


def test_file_names_are_escaped_in_the_header(cli, tmp_path, pcp1, example_genbank):
    """A reference named 'ref,v2 "x".fa' or an annotation 'genes "v2".gb' broke the header
    (htslib: could not parse the header line; the GCX_* INFO lines were dropped)."""
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    ref = tmp_path / 'ref,v2 "x".fa'
    ref.write_bytes(pcp1.read_bytes())
    ann = tmp_path / 'genes "v2\\1".gb'
    ann.write_bytes(example_genbank.read_bytes())
    row = f"{contig}\t200\t.\t{seq[199]}\t{other(seq[199])}\t.\t.\t."
    vcf = _plain_vcf(tmp_path / "v.vcf", [row])
    out = tmp_path / "o.vcf.gz"
    code, _, err = cli(["score-variants", vcf, "-R", ref, "-a", ann, "--model", "none",
                        "-o", out, "-q"])
    assert code == 0, err
    with pysam.VariantFile(str(out)) as vf:
        assert {"GCX_CLASS", "GCX_CONSEQ"} <= set(vf.header.info)
        assert 'genes \\"v2\\\\1\\".gb' in vf.header.info["GCX_CONSEQ"].description
        prov = next(r for r in vf.header.records if r.key == "genoctx_score_variants")
        assert dict(prov.items())["Reference"] == '"ref,v2 \\"x\\".fa"'
        assert [len(r.info["GCX_CONSEQ"]) for r in vf] == [1]


def _many_rows_vcf(tmp_path, pcp1) -> tuple[str, list[str]]:
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    rows = [f"{contig}\t{p + 1}\t.\t{seq[p]}\t{other(seq[p])}\t.\t.\t." for p in range(10, 400)]
    return _plain_vcf(tmp_path / "p.vcf", rows).read_text(), rows


def test_a_utf8_byte_order_mark_is_read_past(cli, tmp_path, pcp1):
    text, rows = _many_rows_vcf(tmp_path, pcp1)
    bom = tmp_path / "bom.vcf"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    code, out, err = cli(["score-variants", bom, "-R", pcp1, "--model", "none", "-q"])
    assert code == 0, err
    assert len(_records(out)) == len(rows) and out.startswith("##fileformat=VCFv4.2\n")


def test_a_truncated_gzip_vcf_error_names_the_users_file(cli, tmp_path, pcp1):
    import gzip

    text, _ = _many_rows_vcf(tmp_path, pcp1)
    cut = tmp_path / "cut.vcf.gz"
    cut.write_bytes(gzip.compress(text[:len(text) - 500].encode()))  # ends mid-record
    code, _, err = cli(["score-variants", cut, "-R", pcp1, "--model", "none", "-q"])
    assert code == 2 and err.startswith(f"genoctx: error: {cut}: record ")
    assert "genoctx-vcf-" not in err and len(err.strip().splitlines()) == 1


def test_crcrlf_line_ends_are_named(cli, tmp_path, pcp1):
    text, _ = _many_rows_vcf(tmp_path, pcp1)
    crcr = tmp_path / "crcr.vcf"
    crcr.write_bytes(text.replace("\n", "\r\r\n").encode())
    code, _, err = cli(["score-variants", crcr, "-R", pcp1, "--model", "none", "-q"])
    assert code == 2 and "carriage returns" in err and "column(s)" not in err


def test_stray_carriage_return_keeps_records_on_their_lines(cli, tmp_path, pcp1):
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    rows = [f"{contig}\t205\ta\t{seq[204]}\t{other(seq[204])}\t.\t.\tNOTE=fi\rrst"] + [
        f"{contig}\t300\t{n}\t{seq[299]}\t{other(seq[299], k)}\t.\t.\tNOTE={n}"
        for k, n in enumerate(("b", "c", "d"))]
    path = tmp_path / "cr.vcf"
    path.write_text('##fileformat=VCFv4.2\n##INFO=<ID=NOTE,Number=1,Type=String,Description="x">'
                    "\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n" + "\n".join(rows) + "\n",
                    newline="")
    code, out, err = cli(["score-variants", path, "-R", pcp1, "--model", "none", "-q"])
    assert code == 0, err
    got = [ln for ln in out.split("\n") if ln and not ln.startswith("#")]
    assert [ln.split("\t")[2] for ln in got] == ["a", "b", "c", "d"]
    assert [ln.split("\t")[7].split(";")[0] for ln in got] == \
        ["NOTE=fi\rrst", "NOTE=b", "NOTE=c", "NOTE=d"]


@pytest.mark.parametrize("name", ["out.vcf.gz", "OUT.VCF.GZ"])
def test_stale_csi_is_removed_and_upper_case_gz_is_bgzipped(cli, tmp_path, pcp1, name):
    """A .csi left by an earlier run was kept beside an unsorted new output (htslib then read
    it for the new file); -o OUT.VCF.GZ was written as plain text."""
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    rows = [f"{contig}\t{p + 1}\t.\t{seq[p]}\t{other(seq[p])}\t.\t.\t." for p in (500, 100)]
    vcf = _plain_vcf(tmp_path / "u.vcf", rows)
    for sort in (False, True):
        out = tmp_path / name
        Path(f"{out}.csi").write_bytes(b"stale index")
        code, _, err = cli(["score-variants", vcf if not sort else _plain_vcf(
            tmp_path / "s.vcf", rows[::-1]), "-R", pcp1, "--model", "none", "-q", "-o", out])
        assert code == 0, err
        assert out.read_bytes()[:4] == b"\x1f\x8b\x08\x04"  # bgzip, not plain text
        assert not Path(f"{out}.csi").exists()
        assert Path(f"{out}.tbi").is_file() == sort
        with pysam.VariantFile(str(out)) as vf:
            assert len(list(vf)) == 2


# ----------------------------------------------------------------------------- audit fixes (2)

def _latin1_vcf(path: Path, contig: str, seq: str) -> Path:
    """A VCF with a Latin-1 byte (0xFC, ü) in a header line and in an INFO value."""
    path.write_bytes(
        b"##fileformat=VCFv4.2\n"
        b'##INFO=<ID=NOTE,Number=1,Type=String,Description="M\xfcller">\n'
        b"#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
        + f"{contig}\t101\tlat1\t{seq[100]}\t{other(seq[100])}\t.\t.\tNOTE=M".encode()
        + b"\xfcller\n")
    return path


@pytest.mark.parametrize("name", ["out.vcf", "out.vcf.gz", "-"])
def test_latin1_bytes_are_written_back_unchanged(tmp_path, pcp1, capsysbinary, name):
    """Latin-1 in the header or INFO raised UnicodeDecodeError (the header) or
    UnicodeEncodeError (a record) with a traceback; they are written back byte for byte."""
    import gzip

    from genoctx.cli.app import run

    contig = FastaFile(pcp1).contigs[0]
    vcf = _latin1_vcf(tmp_path / "latin1.vcf", contig, FastaFile(pcp1).fetch(contig).decode())
    out = tmp_path / name
    code = run(["score-variants", str(vcf), "-R", str(pcp1), "--model", "none", "-q",
                "-o", str(out) if name != "-" else "-"])
    captured = capsysbinary.readouterr()
    assert code == 0, captured.err
    data = (captured.out if name == "-" else gzip.decompress(out.read_bytes())
            if name.endswith(".gz") else out.read_bytes())
    assert b'Description="M\xfcller">\n' in data and b"\tNOTE=M\xfcller;GCX_CLASS=" in data
    if name != "-":
        from genoctx.io.hts import bytes_kept

        with bytes_kept(), pysam.VariantFile(str(out)) as vf:  # reads back through htslib
            assert "M\udcfcller" in str(vf.header)
            assert [r.info["NOTE"] for r in vf] == ["M\udcfcller"]
            assert "GCX_CONSEQ" in vf.header.info


def test_positions_past_2_29_get_a_csi_index(cli, tmp_path, pcp1):
    """A .tbi holds records ending at most at 2^29; htslib's refusal past it was reported as
    'records not sorted'. Such an output is indexed with a .csi, which htslib reads back."""
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    rows = [f"{contig}\t101\t.\t{seq[100]}\t{other(seq[100])}\t.\t.\t.",
            "big\t600000000\tfar\tA\tG\t.\t.\t."]
    vcf = _plain_vcf(tmp_path / "big.vcf", rows, {contig: len(seq), "big": 700_000_000})
    out = tmp_path / "big.vcf.gz"
    Path(f"{out}.tbi").write_bytes(b"stale index")
    code, _, err = cli(["score-variants", vcf, "-R", pcp1, "--model", "none", "-o", out])
    assert code == 0, err
    assert "not tabix-indexed" not in err and "big.vcf.gz.csi (a CSI index" in err
    assert Path(f"{out}.csi").is_file() and not Path(f"{out}.tbi").exists()
    with pysam.VariantFile(str(out)) as vf:
        assert [r.id for r in vf.fetch("big", 599_999_990, 600_000_010)] == ["far"]
        assert [r.pos for r in vf.fetch(contig)] == [101]


def test_an_index_htslib_cannot_write_is_not_called_unsorted(cli, tmp_path, pcp1, monkeypatch):
    """Every OSError of htslib's indexer read as 'records not sorted'."""
    def fail(*args, **kwargs):
        raise OSError("building of index failed")

    monkeypatch.setattr(pysam, "tabix_index", fail)
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    rows = [f"{contig}\t{p + 1}\t.\t{seq[p]}\t{other(seq[p])}\t.\t.\t." for p in (100, 500)]
    vcf = _plain_vcf(tmp_path / "s.vcf", rows)
    out = tmp_path / "s.vcf.gz"
    code, _, err = cli(["score-variants", vcf, "-R", pcp1, "--model", "none", "-o", out, "-q"])
    assert code == 0 and "not tabix-indexed (htslib could not write s.vcf.gz.tbi" in err
    assert "sorted" not in err and "tabix -p vcf" in err
    assert len(list(pysam.VariantFile(str(out)))) == 2


def test_a_ref_of_n_is_left_unscored_and_counted(cli, tmp_path, model_dir):
    """A REF of N at a reference N was scored as if N were a base."""
    fasta = tmp_path / "n.fa"
    seq = "ACGTTGCA" * 40 + "N" * 11 + "TTGACCGA" * 40
    fasta.write_text(f">c\n{seq}\n")
    vcf = _plain_vcf(tmp_path / "n.vcf", ["c\t325\trefN\tN\tA\t.\t.\t.",
                                          f"c\t400\tsnv\t{seq[399]}\t{other(seq[399])}\t.\t.\t."],
                     {"c": len(seq)})
    out = tmp_path / "n.vcf.gz"
    code, _, err = cli(["score-variants", vcf, "-R", fasta, "--model", model_dir, "--context",
                        "64", "-o", out])
    assert code == 0, err
    assert "2 records, 1 variants, 1 scored, " in err
    assert "1 ALT of a REF with N/IUPAC bases skipped" in err
    with pysam.VariantFile(str(out)) as vf:
        refn, snv = list(vf)
    assert refn.info["GCX_DLL"] == (None,) and refn.info["GCX_CONSEQ"] == (".",)
    assert list(refn.filter) == [] and snv.info["GCX_DLL"][0] is not None


def test_breakends_are_skipped_as_symbolic(cli, tmp_path, pcp1):
    """Single breakends (G. and .G) were counted as ALTs with N/IUPAC bases."""
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    b = seq[100]
    rows = [f"{contig}\t101\ts{k}\t{b}\t{a}\t.\t.\t." for k, a in enumerate(
        [f"{b}.", f".{b}", f"{b}[{contig}:500[", f"]{contig}:500]{b}"])]
    vcf = _plain_vcf(tmp_path / "bnd.vcf", rows + [
        f"{contig}\t101\tsnv\t{b}\t{other(b)},{b}.\t.\t.\t."], {contig: len(seq)})
    out = tmp_path / "bnd.out.vcf"
    code, _, err = cli(["score-variants", vcf, "-R", pcp1, "--model", "none", "-o", out])
    assert code == 0, err
    assert "5 records, 1 variants, 1 annotated" in err and "5 symbolic skipped" in err
    assert "N/IUPAC" not in err
    with pysam.VariantFile(str(out)) as vf:
        conseq = [tuple(r.info["GCX_CONSEQ"]) for r in vf]
    assert conseq[:4] == [(".",)] * 4 and conseq[4][0] != "." and conseq[4][1] == "."


def test_equivalent_spellings_get_one_score_and_keep_their_own_text(cli, tmp_path, pcp1,
                                                                    model_dir):
    """REF=AT ALT=A and REF=ATG ALT=AG (or a deletion written anywhere in its homopolymer, or
    a padded SNV) scored differently; each record is still written as given."""
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode().upper()
    run = seq.find("TTTT", 2000)
    dels = [(run - 1, seq[run - 1:run + 1], seq[run - 1]),
            (run - 1, seq[run - 1:run + 3], seq[run - 1] + seq[run + 1:run + 3])]
    dels += [(p, "TT", "T") for p in range(run, run + 3)]
    snv, b = 3000, other(seq[3000])
    snvs = [(snv, seq[snv], b), (snv, seq[snv:snv + 2], b + seq[snv + 1]),
            (snv - 1, seq[snv - 1:snv + 1], seq[snv - 1] + b)]
    rows = [f"{contig}\t{p + 1}\tv{k}\t{r}\t{a}\t.\t.\t." for k, (p, r, a) in
            enumerate(sorted(dels) + snvs)]
    vcf = _plain_vcf(tmp_path / "eq.vcf", rows, {contig: len(seq)})
    out = tmp_path / "eq.out.vcf.gz"
    code, _, err = cli(["score-variants", vcf, "-R", pcp1, "--model", model_dir, "--context",
                        "64", "-o", out, "-q"])
    assert code == 0, err
    with pysam.VariantFile(str(out)) as vf:
        records = list(vf)
    assert [f"{r.chrom}\t{r.pos}\t{r.id}\t{r.ref}\t{r.alts[0]}\t.\t.\t." for r in records] == \
        rows  # the input's own spelling
    scores = [r.info["GCX_DLL"][0] for r in records]
    assert scores[:5] == pytest.approx([scores[0]] * 5, abs=1.5e-4)  # 4 decimals written
    assert scores[5:] == pytest.approx([scores[5]] * 3, abs=1.5e-4)
    assert scores[0] != pytest.approx(scores[5], abs=1e-3)


@pytest.mark.parametrize("given, why", [("/dev/null", "is a device or a pipe, not a file"),
                                        ("empty.gff3", "is empty"),
                                        ("header.gff3", "holds no features and names no")])
def test_an_annotation_without_genes_is_refused_clearly(cli, tmp_path, pcp1, given, why):
    """-a /dev/null said 'annotation file /dev/null does not exist'; a header-only GFF3 gave
    every variant GCX_CONSEQ=noncoding."""
    (tmp_path / "empty.gff3").write_text("")
    (tmp_path / "header.gff3").write_text("##gff-version 3\n")
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    row = f"{contig}\t101\t.\t{seq[100]}\t{other(seq[100])}\t.\t.\t."
    vcf = _plain_vcf(tmp_path / "a.vcf", [row])
    annotation = given if given.startswith("/") else tmp_path / given
    out = tmp_path / "a.out.vcf"
    code, _, err = cli(["score-variants", vcf, "-R", pcp1, "--model", "none", "-a", annotation,
                        "-o", out, "-q"])
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"--annotation {annotation} {why}" in err and "leave out --annotation" in err
    assert "does not exist" not in err and not out.exists()


def test_many_ref_mismatches_are_warned_even_when_quiet(cli, tmp_path, pcp1):
    """More than 10% of the records (and 3 or more) with a REF unlike the reference: the
    wrong genome build, most likely."""
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    good = [f"{contig}\t{p + 1}\t.\t{seq[p]}\t{other(seq[p])}\t.\t.\t." for p in range(100, 118)]
    bad = [f"{contig}\t{p + 1}\t.\t{other(seq[p])}\t{other(seq[p], 1)}\t.\t.\t."
           for p in range(200, 203)]
    for rows, warned in ((good + bad[:2], False), (good[:16] + bad[:2], False),  # 2 / 20, 2 / 18
                         (good + bad, True)):  # 3 / 21
        vcf = _plain_vcf(tmp_path / "m.vcf", rows)
        code, _, err = cli(["score-variants", vcf, "-R", pcp1, "--model", "none", "-q",
                            "-o", tmp_path / "m.out.vcf"])
        assert code == 0, err
        assert ("REF differs from the reference in 3 of 21 records (14%): were the variants "
                "called on another genome build?" in err) == warned
        assert ("warning" in err) == warned


def test_an_output_that_cannot_be_written_is_refused_before_any_work(cli, tmp_path, pcp1,
                                                                     monkeypatch):
    """An -o in a folder that cannot be made was found only after the model, the survey and
    the gene prediction had run."""
    import genoctx.cli.score_variants as sv

    def never(*args, **kwargs):
        raise AssertionError("work started before the output was checked")

    monkeypatch.setattr(sv, "_load_model", never)
    monkeypatch.setattr(sv, "_survey", never)
    (tmp_path / "afile").write_text("a file, not a folder")
    contig = FastaFile(pcp1).contigs[0]
    seq = FastaFile(pcp1).fetch(contig).decode()
    row = f"{contig}\t101\t.\t{seq[100]}\t{other(seq[100])}\t.\t.\t."
    vcf = _plain_vcf(tmp_path / "o.vcf", [row])
    for name in ("afile/out.vcf", "afile/out.vcf.gz"):
        code, _, err = cli(["score-variants", vcf, "-R", pcp1, "--model", "none", "-q",
                            "-o", tmp_path / name])
        assert code == 2 and "cannot write" in err and "afile is a file, not a folder" in err


def test_every_spelling_of_an_indel_gets_one_consequence(cli, tmp_path, pcp1, example_genbank):
    """An indel in a repeat can be written at any place along it, all the same sequence.
    pPCP1's CDS 1106..1888 (+, 1-based) ends in the stop codon TAA at 1886..1888, and the run
    of A at 1887..1890 runs past it: deleting one A, written inside the codon, read
    'frameshift', and written after it, 'noncoding' — which the sequence is (TAA stays TAA).
    A deletion along a run inside a CDS is a frameshift however it is written."""
    with FastaFile(pcp1) as fa:
        contig = fa.contigs[0]
        seq = fa.fetch(contig).decode().upper()
    assert seq[1883:1893] == "AGTAAAACGG"
    cds = next(f for f in read_features(example_genbank)[contig]
               if f.kind == "CDS" and (f.start, f.end, f.strand) == (1105, 1888, 1))
    inner = seq.find("GAAAC", cds.start + 30, cds.end - 30) + 1  # AAA at inner..inner + 2
    assert inner > 0
    rows = [f"{contig}\t{p}\t.\t{seq[p - 1:p + 1]}\t{seq[p - 1]}\t.\t.\t."  # deletes base p + 1
            for p in (1886, 1887, 1888, 1889, inner, inner + 1, inner + 2)]
    rows.append(f"{contig}\t1886\t.\tTAAAA\tTAAA\t.\t.\t.")  # written long
    vcf = write_vcf(tmp_path / "s.vcf", contig, len(seq), rows)
    code, out, err = cli(["score-variants", vcf, "-R", pcp1, "--annotation", example_genbank,
                          "--model", "none", "-q"])
    assert code == 0, err
    got = [dict(kv.split("=") for kv in ln.split("\t")[7].split(";"))["GCX_CONSEQ"]
           for ln in out.splitlines() if not ln.startswith("#")]
    assert got == ["noncoding"] * 4 + ["frameshift"] * 3 + ["noncoding"]
