"""brca1-sge and mpra-saturation: HGVS gene model, exon split, MPRA references, quick runs."""

import math

import numpy as np
import pytest
import torch

from genoctx.errors import InputError
from genoctx.eval.benchmarks import brca1_sge as B
from genoctx.eval.benchmarks import mpra_saturation as M
from genoctx.eval.harness import BenchContext
from genoctx.heads.consequence import GeneModel
from genoctx.io.fasta import FastaFile

# A two-exon gene on the + strand of a 80-bp contig (0-based):
#   [0, 10) intron ...AG | exon A [10, 22) = 5'UTR GCC + c.1-9 ATG GCT TGG |
#   [22, 40) intron GT...AG | exon B [40, 52) = c.10-21 TGT CAA GGC TAA | [52, 80) intron GT...
SYN = ("CCCCCCCCAG" + "GCCATGGCTTGG" + "GTAAGT" + "C" * 10 + "AG" + "TGTCAAGGCTAA"
       + "GTAAGT" + "C" * 22)
SYN_HGVS = [(8, "c.-3-2A>G"), (10, "c.-3G>A"), (21, "c.9G>A"), (22, "c.9+1G>A"), (39, "c.10-1G>A"),
            (51, "c.21A>G"), (53, "c.21+2A>G")]


def test_parse_hgvs():
    assert B.parse_hgvs("c.-19-3A>C") == B.CPos(-19, -3, "A", "C")
    assert B.parse_hgvs("c.80+3G>T").index == 79
    assert B.parse_hgvs("c.1A>G").index == 0 and B.parse_hgvs("c.-1A>G").index == -1
    for bad in ("c.*5A>G", "c.0A>G", "c.12del", "g.100A>G"):
        with pytest.raises(InputError):
            B.parse_hgvs(bad)


def test_exons_from_hgvs_hand_case():
    pairs = [(p, B.parse_hgvs(h)) for p, h in SYN_HGVS]
    assert B.exons_from_hgvs(pairs) == [B.Exon(10, 22, -3, True, True),
                                        B.Exon(40, 52, 9, True, True)]
    with pytest.raises(InputError, match="maps to NG positions"):
        B.exons_from_hgvs(pairs + [(11, B.parse_hgvs("c.-3G>A"))])
    with pytest.raises(InputError, match="plus strand"):  # c. numbers falling along the record
        B.exons_from_hgvs([(50, B.parse_hgvs("c.1A>G")), (40, B.parse_hgvs("c.2A>G"))])


@pytest.mark.parametrize("pos,alt,want", [
    (18, "A", "synonymous"),   # c.6 GCT>GCA, Ala
    (20, "A", "nonsense"),     # c.8 TGG>TAG
    (14, "C", "start_lost"),   # c.2 ATG>ACG
    (43, "G", "missense"),     # c.13 CAA>GAA, Gln>Glu
    (22, "A", "splice"),       # c.9+1
    (39, "C", "splice"),       # c.10-1
    (30, "A", "noncoding"),    # deep intron
])
def test_consequence_on_hgvs_gene_model(tmp_path, pos, alt, want):
    fa = tmp_path / "syn.fa"
    fa.write_text(">syn\n" + SYN + "\n")
    exons = B.exons_from_hgvs([(p, B.parse_hgvs(h)) for p, h in SYN_HGVS])
    with FastaFile(fa) as fasta:
        genes = GeneModel.from_features(B.gene_features(exons, "syn", len(SYN)), fasta)
        assert genes.consequence("syn", pos, SYN[pos], alt) == want


def test_exon_halves_partition():
    a, b = B.exon_halves(13, seed=0)
    assert sorted(a + b) == list(range(13)) and not set(a) & set(b) and len(a) == 7
    assert B.exon_halves(13, seed=0) == (a, b)


@pytest.fixture(scope="module")
def brca(data_root):
    fasta = FastaFile(data_root / B.FASTA)
    contig = fasta.contigs[0]
    variants = B.read_variants(data_root / B.TSV, fasta.fetch(contig))
    exons = B.exons_from_hgvs([(v.pos, v.hgvs) for v in variants])
    genes = GeneModel.from_features(B.gene_features(exons, contig, fasta.lengths[contig]), fasta)
    return fasta, contig, variants, exons, genes


def test_brca1_gene_model_on_real_table(brca):
    fasta, contig, variants, exons, genes = brca
    assert len(variants) == 3893 and len(exons) == 13
    seq = fasta.fetch(contig).decode().upper()
    start = next(e.start - e.first for e in exons if e.first <= 0 <= e.last)  # NG of c.1
    assert seq[start:start + 3] == "ATG"
    # c.8T>A (paper: Nonsense): codon 3 = c.7-9 is Leu, the change gives a stop
    v = next(v for v in variants if v.hgvs == B.CPos(8, 0, "T", "A"))
    assert v.consequence == "Nonsense" and v.pos == start + 7
    from genoctx.heads.consequence import translate

    assert translate(seq[start + 6:start + 9]) == "L"
    assert genes.consequence(contig, v.pos, v.ref, v.alt) == "nonsense"
    same = {"Nonsense": "nonsense", "Canonical splice": "splice", "Missense": "missense",
            "Synonymous": "synonymous", "Splice region": "splice_region"}
    hits = [genes.consequence(contig, v.pos, v.ref, v.alt) == same[v.consequence]
            for v in variants if v.consequence in same]
    assert np.mean(hits) > 0.97


def test_exon_groups_never_straddle_halves(brca):
    *_, variants, exons, _ = brca
    groups = np.array([B.exon_of(exons, v) for v in variants])
    # intronic variants go with the exon of their c. anchor: c.80+k with c.80
    c80 = next(i for i, e in enumerate(exons) if e.first <= 79 <= e.last)
    assert all(groups[i] == c80 for i, v in enumerate(variants) if v.hgvs.c == 80)
    for half in B.exon_halves(len(exons), seed=3):
        test = np.isin(groups, half)
        assert not set(groups[test]) & set(groups[~test])
        assert 0 < test.sum() < len(variants)


def test_rebuild_reference():
    assert M.rebuild_reference([(10, "A"), (11, "c"), (13, "G"), (10, "A")]) == (10, "ACNG", 1)
    with pytest.raises(InputError, match="disagree"):
        M.rebuild_reference([(10, "A"), (10, "C")])
    with pytest.raises(InputError):
        M.rebuild_reference([(10, "-")])


def test_mpra_elements_and_helpers(data_root):
    elements, stats = M.read_elements(data_root / M.TABLE)
    assert len(elements) == 29 and stats["rows_without_position"] == 22
    for e in elements:
        assert e.release == "GRCh37" and 187 <= len(e.seq) <= 601
        assert e.missing == (1 if e.name == "TCF7L2" else 0) and e.seq.count("N") == e.missing
        assert all(e.seq[v.pos - e.start] == v.ref for v in e.variants)
    capped = M.cap_sites(elements[0].variants, 100)
    sites = {v.pos for v in capped}
    assert 80 <= len(capped) <= 100
    assert sum(v.pos in sites for v in elements[0].variants) == len(capped)  # whole sites
    v = M.MpraVariant
    assert [M.substitution_class(x) for x in (v(1, "A", "G", 0), v(1, "C", "A", 0),
                                               v(1, "T", "", 0))] == [0.0, -1.0, -2.0]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from genoctx.model.config import get_config
    from genoctx.model.model import GenoCtxModel

    torch.manual_seed(0)
    cfg = get_config("tiny", d_model=32, num_layers=1, num_heads=2, num_kv_heads=1, head_dim=16,
                     num_experts=4, top_k=2, expert_dim=32)
    path = tmp_path_factory.mktemp("tiny")
    GenoCtxModel.from_config(cfg).save_pretrained(path)
    return str(path)


def _in(x, lo, hi):
    return x is not None and math.isfinite(x) and lo <= x <= hi


def test_brca1_quick_run(data_root, tmp_path, tiny_model):
    res = B.run(BenchContext(data_root=data_root, out=tmp_path, model=tiny_model, quick=True,
                             quiet=True))
    m = res.metrics["methods"]
    assert set(m) == {"genoctx_dll_zero_shot", "rule_genoctx_consequence", "rule_paper_consequence",
                      "head_consequence", "head_model", "head_model_consequence"}
    assert all(_in(x["auroc"], 0, 1) and _in(x["auprc"], 0, 1) for x in m.values())
    assert 190 <= res.metrics["n_variants"] <= 210 and m["rule_paper_consequence"]["auroc"] > 0.6
    assert all(p.is_file() for p in res.plots) and len(res.plots) == 2
    assert any(r.method == "Evo 2 7B zero-shot" and r.value == 0.891 for r in res.rows)


def test_brca1_without_model_runs_rules_only(data_root, tmp_path):
    res = B.run(BenchContext(data_root=data_root, out=tmp_path, model=None, quick=True))
    assert set(res.metrics["methods"]) == {"rule_genoctx_consequence", "rule_paper_consequence",
                                           "head_consequence"}


def test_mpra_quick_run(data_root, tmp_path, tiny_model):
    res = M.run(BenchContext(data_root=data_root, out=tmp_path, model=tiny_model, quick=True,
                             quiet=True))
    met = res.metrics
    assert met["n_elements"] == 2 and met["n_variants"] <= 2 * 150
    assert set(met["median"]) == {f"{a}_{b}_{c}" for a in ("dll", "baseline")
                                  for b in ("snv", "all") for c in ("spearman", "pearson")}
    assert all(_in(x, -1, 1) for x in met["median"].values())
    for e in met["per_element"].values():
        assert 100 <= e["n"] <= 150 and e["n_del"] > 0 and _in(e["dll"]["all"]["spearman"], -1, 1)
    assert (tmp_path / M.NAME / "elements_reference.fa").is_file() and res.plots[0].is_file()
