"""No command writes its output over one of its inputs: each refuses before any work and
leaves the input as it was (outputs are moved into place whole, so the input would be gone)."""

import shutil

import pytest


@pytest.fixture
def fasta(tmp_path, example_fasta):
    path = tmp_path / "pcp1.fa"
    shutil.copy(example_fasta, path)
    return path


def _refused(cli, argv, victim, what):
    before = victim.read_bytes()
    code, _, err = cli(argv)
    assert code == 2 and f"is the {what} file" in err and "Traceback" not in err, err
    assert victim.read_bytes() == before


def test_tokenize_refuses_its_input_regions_or_a_link_to_them(cli, fasta, tmp_path):
    bed = tmp_path / "r.bed"
    bed.write_text("gi|45478711|ref|NC_005816.1|\t0\t500\n")
    _refused(cli, ["tokenize", fasta, "--regions", bed, "--out", bed, "--context", 100], bed,
             "--regions")
    link = tmp_path / "link.npz"
    link.symlink_to(fasta)
    _refused(cli, ["tokenize", fasta, "--out", link, "--context", 100], fasta, "input")


def test_tokenize_pileup_refuses_the_reference(cli, tmp_path, data_root):
    reads = data_root / "reads" / "ex1"
    ref = tmp_path / "ex1.fa"
    shutil.copy(reads / "ex1.fa", ref)
    _refused(cli, ["tokenize", reads / "ex1.bam", "--kind", "pileup", "--reference", ref,
                   "-r", "chr1:1-100", "--context", 100, "--out", ref], ref, "--reference")


def test_embed_refuses_its_input(cli, fasta):
    _refused(cli, ["embed", fasta, "--out", fasta], fasta, "input")


@pytest.mark.parametrize("victim, what", [("reference", "--reference"), ("vcf", "input VCF")])
def test_score_variants_refuses_its_reference_or_vcf(cli, fasta, tmp_path, victim, what):
    vcf = tmp_path / "v.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                   "gi|45478711|ref|NC_005816.1|\t200\t.\tG\tC\t.\t.\t.\n")
    out = fasta if victim == "reference" else vcf
    _refused(cli, ["score-variants", vcf, "--reference", fasta, "--out", out, "--model",
                   "none"], out, what)


def test_annotate_refuses_an_output_named_like_its_input(cli, tmp_path, example_fasta):
    fasta = tmp_path / "pcp1.gff3"  # a FASTA under a GFF3's name: PREFIX pcp1 writes pcp1.gff3
    shutil.copy(example_fasta, fasta)
    _refused(cli, ["annotate", fasta, "--out", tmp_path / "pcp1", "--formats", "gff3",
                   "--model", "none"], fasta, "input")

