"""Benchmark annotation-eukaryote: chain metrics on hand cases, the ORF baseline, the data
loaders, and quick runs through the harness (baselines only, then the model with its cache)."""

import json

import numpy as np

from genoctx.eval import harness
from genoctx.eval.benchmarks import annotation_eukaryote as bench

ISO_A = ((0, 10), (20, 30), (40, 50))
ISO_B = ((0, 10), (40, 50))
SINGLE = ((100, 160),)
TWO = ((200, 230), (260, 300))
TRUTH = [("c", 1, ISO_A, "g1"), ("c", 1, ISO_B, "g1"), ("c", -1, SINGLE, "g2"),
         ("c", -1, TWO, "g3")]
PRED = [("c", 1, ((3, 10), (20, 30), (40, 47))),  # A's introns, other ends
        ("c", 1, TWO),                             # g3's exons on the wrong strand
        ("c", -1, SINGLE),
        ("c", 1, ISO_B),
        ("d", 1, ISO_B)]                            # another contig


def test_intron_chain_metric_hand_case():
    m = bench.chain_metrics(PRED, TRUTH, introns=True)
    assert m == {"n_true": 3, "n_true_genes": 2, "n_pred": 4, "sensitivity": 2 / 3,
                 "gene_sensitivity": 1 / 2, "precision": 2 / 4}


def test_cds_chain_metric_hand_case():
    m = bench.chain_metrics(PRED, TRUTH, introns=False)
    assert m == {"n_true": 4, "n_true_genes": 3, "n_pred": 5, "sensitivity": 2 / 4,
                 "gene_sensitivity": 2 / 3, "precision": 2 / 5}


def test_chain_metric_isoforms_and_empty():
    # two isoforms with one chain count once; any of them makes the prediction right
    truth = [("c", 1, ISO_A, "g1"), ("c", 1, ISO_A, "g1b")]
    m = bench.chain_metrics([("c", 1, ISO_A)], truth, introns=True)
    assert (m["n_true"], m["n_true_genes"], m["sensitivity"], m["precision"]) == (1, 2, 1.0, 1.0)
    m = bench.chain_metrics([], [("c", 1, SINGLE, "g")], introns=True)
    assert m["n_true"] == 0 and m["sensitivity"] is None and m["precision"] is None


def test_orf_baseline_finds_the_longest_orfs_on_both_strands():
    comp = str.maketrans("ACGT", "TGCA")
    plus = "ATG" + "GCT" * 30 + "TAA"                          # 96 bp on +
    minus = ("ATG" + "GAA" * 50 + "TAG").translate(comp)[::-1]  # 156 bp on -
    seq = ("CC" + plus + "CCCC" + minus + "CC").encode()
    genes = bench.orf_genes("x", seq, min_len=60)
    assert [(g.strand, g.cds) for g in genes] == [(1, ((2, 98),)), (-1, ((102, 258),))]
    (best,) = bench.orf_genes("x", seq, min_len=60, max_genes=1)
    assert (best.strand, best.cds) == (-1, ((102, 258),))
    assert bench.orf_genes("x", seq, min_len=200) == []


def test_quick_chunk_truth_is_clipped(data_root, tmp_path):
    ctx = harness.BenchContext(data_root=data_root, out=tmp_path, quick=True)
    ds = bench.load_chunk(ctx)
    assert [len(s) for _, s in ds.records] == [bench.QUICK_CHUNK_BASES]
    assert all(parts[-1][1] <= bench.QUICK_CHUNK_BASES for _, _, parts, _ in ds.transcripts)
    assert len(ds.exon) == len(ds.intron) == len(ds.keep) == bench.QUICK_CHUNK_BASES
    assert ds.exon[ds.keep].any() and ds.intron[ds.keep].any()
    # truth masks agree with the transcripts they came from
    cds = np.zeros(bench.QUICK_CHUNK_BASES, bool)
    for _, _, parts, _ in ds.transcripts:
        for s, e in parts:
            cds[s:e] = True
    assert np.array_equal(cds & ds.keep, ds.exon & ds.keep)
    assert {ctx.data_files[f]["role"] for f in (bench.CHUNK_FA, bench.CHUNK_GFF)} == {"validation"}


def test_quick_run_without_model(data_root, tmp_path):
    harness.run_benchmarks([bench.NAME], out=tmp_path, model=None, data_root=data_root,
                           quick=True, quiet=True)
    doc = json.loads((tmp_path / "metrics.json").read_text())
    m = doc["benchmarks"][bench.NAME]["metrics"]["datasets"]
    assert m["chunk"]["n_bases"] == bench.QUICK_CHUNK_BASES
    assert m["smallgenes"]["n_records"] == bench.QUICK_LOCI
    for ds in m.values():
        assert set(ds["methods"]) == {"orf-baseline", "decoder+oracle"}
        ceiling = ds["methods"]["decoder+oracle"]
        assert ceiling["exon"]["f1"] > 0.99 and ceiling["intron_chain"]["precision"] > 0.9
        base = ds["methods"]["orf-baseline"]
        assert 0 < base["exon"]["f1"] < ceiling["exon"]["f1"]
        assert base["intron_chain"]["n_pred"] == 0  # single-exon by construction
    for png in ("tracks.png", "scores_chunk.png", "scores_smallgenes.png"):
        assert (tmp_path / bench.NAME / png).stat().st_size > 10_000


def test_quick_run_with_model_same_with_and_without_cache(data_root, tmp_path, monkeypatch):
    # the second run reads the cached probabilities: every metric must be the same bytes
    import torch

    torch.set_num_threads(1)
    monkeypatch.setattr(bench, "QUICK_CHUNK_BASES", 12_000)
    monkeypatch.setattr(bench, "QUICK_LOCI", 6)
    first = harness.run_benchmarks([bench.NAME], out=tmp_path, model="embedded",
                                   data_root=data_root, quick=True, quiet=True)
    caches = sorted((tmp_path / bench.NAME).glob("probs_*.npz"))
    assert len(caches) == 2
    second = harness.run_benchmarks([bench.NAME], out=tmp_path, model="embedded",
                                    data_root=data_root, quick=True, quiet=True)
    assert harness.differences(harness.stable_view(first), harness.stable_view(second)) == []
    report = (tmp_path / "report.md").read_text()
    assert report.count("probabilities read from the cache") == 2
    res = second["benchmarks"][bench.NAME]
    methods = res["metrics"]["datasets"]["smallgenes"]["methods"]
    assert set(methods) == {"decoder+model", "argmax", "orf-baseline", "decoder+oracle"}
    for r in res["rows"]:
        assert r["value"] is None or 0.0 <= r["value"] <= 1.0
    assert any(r["method"] == "decoder+model" and r["metric"] == "exon F1" for r in res["rows"])
