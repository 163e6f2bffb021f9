"""genoctx's Python functions (genoctx.api) give what the commands write, and refuse what they
refuse."""

import subprocess
import sys

import numpy as np
import pysam
import pytest

import genoctx
from genoctx.errors import InputError
from genoctx.io.fasta import FastaFile


@pytest.fixture(scope="module")
def model():
    return genoctx.load_model(device="cpu")


@pytest.fixture(scope="module")
def bases(example_fasta) -> str:
    with FastaFile(example_fasta) as fa:
        return fa.fetch(fa.contigs[0], 2000, 3500).decode()


def test_import_is_light_and_lists_the_functions():
    code = ("import sys, genoctx; assert 'torch' not in sys.modules, 'torch imported'; "
            "assert 'genoctx.api' not in sys.modules; print(sorted(genoctx.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert sorted(genoctx.__all__) == sorted(["__version__", *genoctx._API, "FastaWindows",
                                                   "PileupWindows"])
    for name in ("annotate", "embed", "load_model", "log_likelihood", "score_variants",
                 "FastaWindows", "PileupWindows"):
        assert name in out.stdout and name in dir(genoctx)
    from genoctx.tokenize.dataset import FastaWindows

    assert genoctx.FastaWindows is FastaWindows
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        genoctx.nope  # noqa: B018


def test_embed_is_what_genoctx_embed_writes(cli, tmp_path, example_fasta, model, bases):
    with FastaFile(example_fasta) as fa:
        region = f"{fa.contigs[0]}:2001-3500"
    out = tmp_path / "e.npy"
    code, _, err = cli(["embed", example_fasta, "--region", region, "--device", "cpu", "-q",
                        "--out", out])
    assert code == 0, err
    emb = genoctx.embed(bases, model=model)
    assert emb.shape == (1500, 2 * model.config.d_model) and emb.dtype == np.float32
    np.testing.assert_allclose(emb, np.load(out), rtol=1e-4, atol=1e-5)
    # lower case, line breaks and bytes read the same; the mean row is the rows' mean
    np.testing.assert_allclose(genoctx.embed(bases.lower()[:700] + "\n" + bases[700:],
                                             model=model), emb, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(genoctx.embed(bases.encode(), model=model, pool="mean"),
                               emb.mean(0), rtol=1e-4, atol=1e-5)


def test_many_sequences_embed_as_each_does_alone(model, bases):
    seqs = [bases[:200], bases[500:700], bases[:90], bases[1000:1200].encode(), bases[100:300]]
    alone = [genoctx.embed(s, model=model) for s in seqs]
    many = genoctx.embed(seqs, model=model)
    assert [m.shape for m in many] == [a.shape for a in alone]
    for m, a in zip(many, alone):
        np.testing.assert_allclose(m, a, rtol=1e-4, atol=1e-5)
    pooled = genoctx.embed(seqs, model=model, pool="mean")
    assert pooled.shape == (5, 2 * model.config.d_model)
    np.testing.assert_allclose(pooled, np.stack([a.mean(0) for a in alone]), rtol=1e-4,
                               atol=1e-5)
    # one longer than a segment is embedded alone, segment by segment
    long = genoctx.embed([bases[:300], bases], model=model, segment_len=256)
    np.testing.assert_allclose(long[1], genoctx.embed(bases, model=model, segment_len=256),
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(InputError, match="sequence 2 looks like a protein"):
        genoctx.embed(["ACGT" * 10, "MKLVEEFFPQ" * 20], model=model)
    with pytest.raises(InputError, match="no sequences"):
        genoctx.embed([], model=model)


def test_log_likelihood_reads_each_base_after_those_before_it(model, bases):
    import torch

    from genoctx.tokenize import nucleotide as nt

    ll = genoctx.log_likelihood(bases, model=model)
    assert ll.shape == (len(bases),) and (ll < 0).all()
    # base t given BOS + bases before it, from the model's logits directly
    ids = torch.from_numpy(nt.encode(bases[:300].encode()).astype(np.int64))[None]
    with torch.inference_mode():
        logits = model(torch.cat([torch.full_like(ids[:, :1], nt.BOS), ids[:, :-1]], 1))
    want = logits.float().log_softmax(-1).gather(-1, ids[..., None])[0, :, 0].numpy()
    np.testing.assert_allclose(ll[:300], want, rtol=1e-4, atol=1e-4)
    # a causal reading: what comes after a base does not change its probability
    np.testing.assert_allclose(genoctx.log_likelihood(bases[:300], model=model), ll[:300],
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bad, message", [("", "empty"), ("MKLVEEFFPQ" * 20, "protein"),
                                          (42, "str or bytes")])
def test_sequences_that_are_not_dna_are_refused(model, bad, message):
    for fn in (genoctx.embed, genoctx.log_likelihood):
        with pytest.raises(InputError, match=message):
            fn(bad, model=model)
    with pytest.raises(InputError, match="pool"):
        genoctx.embed("ACGT", model=model, pool="max")


def test_annotate_writes_what_genoctx_annotate_writes(cli, tmp_path, example_fasta,
                                                      example_genbank):
    for args, kwargs in [([], {}), (["--region", "NC_005816.1:1-5000", "--model", "none",
                                     "--formats", "gff3,bed,faa"],
                                    {"region": "NC_005816.1:1-5000", "model": None,
                                     "formats": ("gff3", "bed", "faa")})]:
        source = example_fasta
        if args:  # the region's name is the record's accession: the GenBank file's
            source = example_genbank
        code, _, err = cli(["annotate", source, "-q", "--out", tmp_path / "cli", *args])
        assert code == 0, err
        result = genoctx.annotate(source, out=tmp_path / "api", device="cpu", **kwargs)
        written = sorted(p.name[3:] for p in tmp_path.glob("cli.*"))
        assert written == sorted(p.name[3:] for p in tmp_path.glob("api.*")) and written
        for suffix in written:
            assert (tmp_path / f"cli{suffix}").read_bytes() == (tmp_path / f"api{suffix}").read_bytes()
        assert len(result.genes) == sum(
            1 for ln in (tmp_path / "api.gff3").read_text().splitlines()
            if "\tCDS\t" in ln)
        for p in tmp_path.glob("*.*"):
            p.unlink()
    # without out: the tracks come back with the genes; writing them later gives the same
    result = genoctx.annotate(example_fasta, device="cpu")
    assert set(result.tracks[0]) == {"CDS_plus", "CDS_minus", "RNA"}
    paths = genoctx.write_annotation(tmp_path / "later", result, ["gff3"])
    assert [p.name for p in paths] == ["later.gff3"]
    with pytest.raises(InputError, match="tracks"):
        genoctx.annotate(example_fasta, out=tmp_path / "x", model=None, formats="gff3,bedgraph")
    genoctx.annotate(example_fasta, out=tmp_path / "none", model=None)  # as --model none
    assert sorted(p.name for p in tmp_path.glob("none.*")) == ["none.bed", "none.gff3"]
    with pytest.raises(InputError, match="unknown format"):
        genoctx.annotate(example_fasta, out=tmp_path / "x", formats=["gff"])
    with pytest.raises(InputError, match="no such file"):
        genoctx.annotate(tmp_path / "missing.fa")
    assert not list(tmp_path.glob("x.*"))


def test_score_variants_writes_what_the_command_writes(cli, tmp_path, example_fasta):
    with FastaFile(example_fasta) as fa:
        contig, seq = fa.contigs[0], fa.fetch(fa.contigs[0]).decode()
    rows = [f"{contig}\t{p}\t.\t{seq[p - 1]}\t{'A' if seq[p - 1] != 'A' else 'C'}\t.\t.\t."
            for p in (150, 2200, 5000)]
    vcf = tmp_path / "in.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                   + "\n".join(rows) + "\n")
    code, _, err = cli(["score-variants", vcf, "-R", example_fasta, "--context", 512, "-q",
                        "--device", "cpu", "-o", tmp_path / "cli.vcf.gz"])
    assert code == 0, err
    summary = genoctx.score_variants(vcf, example_fasta, tmp_path / "api.vcf.gz", context=512,
                                     device="cpu")
    assert (summary.variants, summary.scored, summary.indexed) == (3, 3, True)
    read = [[str(r) for r in pysam.VariantFile(str(tmp_path / name))]
            for name in ("cli.vcf.gz", "api.vcf.gz")]
    assert read[0] == read[1] and all("GCX_DLL=" in r for r in read[0])
    with pytest.raises(InputError, match="give out"):
        genoctx.score_variants(vcf, example_fasta)
