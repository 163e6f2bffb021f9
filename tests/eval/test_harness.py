"""The evaluation harness: manifest, role guard, reproducibility check, custom scoring, CLI."""

import json

import numpy as np
import pytest
from sklearn import metrics as skm

from genoctx.errors import DataRoleError, InputError
from genoctx.eval import harness
from genoctx.eval.custom import contig_aliases
from genoctx.eval.metrics import roc_curve

VALIDATION = "genomes/bacteria/Haemophilus_influenzae_Rd_KW20.gbff.gz"
TRAIN = "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"


def _job(rel):
    def run(ctx):
        path = ctx.data_file(rel)
        return harness.BenchResult(metrics={"size": path.stat().st_size, "nan": float("nan"),
                                            "arr": np.float32(0.5)},
                                   rows=[harness.Row("d", "m", "size", 1.0, "anchor")],
                                   notes=["a note"])
    return run


def test_manifest_is_complete(tmp_path, data_root):
    doc = harness.run_jobs([("toy", _job(VALIDATION))], out=tmp_path, model="embedded",
                           data_root=data_root, seed=7)
    m = doc["manifest"]
    for key in ("genoctx_version", "git_commit", "model", "seed", "versions", "device",
                "wall_s", "data_files", "command", "quick"):
        assert key in m, key
    assert m["seed"] == 7
    assert len(m["model"]["model_sha256"]) == 64
    assert m["data_files"][VALIDATION]["role"] == "validation"
    assert len(m["data_files"][VALIDATION]["sha256"]) == 64
    assert {"torch", "numpy", "python"} <= set(m["versions"])
    on_disk = json.loads((tmp_path / "metrics.json").read_text())
    assert on_disk == doc
    assert on_disk["benchmarks"]["toy"]["metrics"] == {
        "size": (data_root / VALIDATION).stat().st_size, "nan": None, "arr": 0.5}
    report = (tmp_path / "report.md").read_text()
    assert "| toy | d | m | size | 1.000 | anchor |" in report
    assert "a note" in report and VALIDATION in report


def test_refuses_train_files(tmp_path, data_root):
    with pytest.raises(DataRoleError, match="role 'train'"):
        harness.run_jobs([("toy", _job(TRAIN))], out=tmp_path, model=None, data_root=data_root)
    assert not (tmp_path / "metrics.json").exists()
    ctx = harness.BenchContext(data_root=data_root, out=tmp_path, model="embedded")
    with pytest.raises(DataRoleError, match="trained on it"):
        ctx.user_file(data_root / TRAIN)
    ctx.model = None  # scoring another tool's output on a train genome is allowed
    assert ctx.user_file(data_root / TRAIN) == data_root / TRAIN


def test_unknown_benchmark_fails_before_work(tmp_path):
    with pytest.raises(InputError, match="unknown benchmark"):
        harness.run_benchmarks(["annotation-bacteria", "nope"], out=tmp_path)
    assert not (tmp_path / "metrics.json").exists()


def test_differences_and_stable_view():
    a = {"manifest": {"wall_s": 1, "seed": 0}, "benchmarks": {"x": {"metrics": {"f1": 0.5},
                                                                    "wall_s": 3}}}
    b = {"manifest": {"wall_s": 2, "seed": 0}, "benchmarks": {"x": {"metrics": {"f1": 0.5},
                                                                    "wall_s": 9}}}
    assert harness.differences(harness.stable_view(a), harness.stable_view(b)) == []
    b["benchmarks"]["x"]["metrics"]["f1"] = 0.5000001
    diffs = harness.differences(harness.stable_view(a), harness.stable_view(b))
    assert diffs == ["/benchmarks/x/metrics/f1: 0.5 != 0.5000001"]


def test_roc_curve_matches_sklearn():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    s = np.round(rng.normal(size=300) + y, 1)  # ties
    fpr, tpr = roc_curve(y, s)
    f2, t2, _ = skm.roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, f2)
    np.testing.assert_allclose(tpr, t2)


def test_contig_aliases():
    truth = {"NC_005816.1", "NC_000913.3"}
    got = contig_aliases(["gi|45478711|ref|NC_005816.1|", "NC_000913", "chrX"], truth)
    assert got == {"gi|45478711|ref|NC_005816.1|": "NC_005816.1", "NC_000913": "NC_000913.3"}
    # the other way: a truth written from NCBI's FASTA names, predictions with the accession
    truth = {"gi|45478711|ref|NC_005816.1|", "gi|16082679|ref|NC_003131.1|"}
    got = contig_aliases(["NC_005816.1", "NC_003131", "chrX", "gi|1|ref|NC_9.1|"], truth)
    assert got == {"NC_005816.1": "gi|45478711|ref|NC_005816.1|",
                   "NC_003131": "gi|16082679|ref|NC_003131.1|"}
    # an ambiguous name keeps its own
    assert contig_aliases(["NC_000001"], {"NC_000001.1", "NC_000001.2"}) == {}
    # a version is dropped from accessions only: contig.2 is not contig.1
    assert contig_aliases(["contig.2", "NC_000913"], {"contig.1", "NC_000913.3"}) == {
        "NC_000913": "NC_000913.3"}


def _gff_from_truth(genes, path, drop=0, extra=()):
    lines = ["##gff-version 3"]
    for i, g in enumerate(genes[drop:]):
        lines.append(f"{g.contig}\ttool\tCDS\t{g.start + 1}\t{g.end}\t.\t{'+-'[g.strand < 0]}\t0\t"
                     f"ID=cds{i}")
    lines += extra
    path.write_text("\n".join(lines) + "\n")
    return path


def test_predictions_mode_scores_by_hand(tmp_path, cli, example_genbank, example_fasta):
    from genoctx.io.annotation import read_genes

    truth = read_genes(example_genbank)
    assert len(truth) == 10
    perfect = _gff_from_truth(truth, tmp_path / "perfect.gff3")
    code, out, err = cli(["eval", "--predictions", perfect, "--truth", example_genbank,
                          "--out", tmp_path / "p", "-q"])
    assert code == 0, err
    m = json.loads((tmp_path / "p" / "metrics.json").read_text())["benchmarks"]["predictions"]
    got = m["metrics"]["perfect.gff3"]
    assert (got["sensitivity"], got["precision"], got["start_agreement"]) == (1.0, 1.0, 1.0)
    assert got["per_base_cds"]["f1"] == 1.0
    # one gene missing and one invented (on a gi|-style name, mapped to the accession)
    g = truth[0]
    extra = [f"gi|45478711|ref|NC_005816.1|\ttool\tCDS\t1\t300\t.\t+\t0\tID=fake"]
    worse = _gff_from_truth(truth, tmp_path / "worse.gff3", drop=1, extra=extra)
    code, out, err = cli(["eval", "--predictions", worse, "--truth", example_genbank,
                          "--fasta", example_fasta, "--out", tmp_path / "w", "-q"])
    assert code == 0, err
    got = json.loads((tmp_path / "w" / "metrics.json").read_text())
    got = got["benchmarks"]["predictions"]["metrics"]["worse.gff3"]
    assert got["tp"] == 9 and got["n_pred"] == 10 and got["n_true"] == 10
    assert got["sensitivity"] == pytest.approx(0.9) and got["precision"] == pytest.approx(0.9)
    assert g.contig == "NC_005816.1"


def test_empty_predictions_are_scored_with_a_note(tmp_path, cli, example_genbank):
    empty = tmp_path / "empty.gff3"
    empty.write_text("##gff-version 3\n")
    code, _, err = cli(["eval", "--predictions", empty, "--truth", example_genbank,
                        "--out", tmp_path / "e", "-q"])
    assert code == 0, err
    bench = json.loads((tmp_path / "e" / "metrics.json").read_text())["benchmarks"]
    got = bench["predictions"]["metrics"]["empty.gff3"]
    assert got["n_pred"] == 0 and got["sensitivity"] == 0.0
    assert "holds no CDS to score" in (tmp_path / "e" / "report.md").read_text()


def test_predictions_mode_reads_genbank(tmp_path, cli, example_genbank, example_fasta):
    """A GenBank file of predictions (Prokka, Bakta, `genoctx annotate --formats gbk`) scores as
    its GFF3; the truth record itself scores 1.0."""
    assert cli(["annotate", example_fasta, "--formats", "gff3,gbk", "--model", "none",
                "--out", tmp_path / "a", "--quiet"])[0] == 0
    got = {}
    for pred in (tmp_path / "a.gff3", tmp_path / "a.gbk", example_genbank):
        out = tmp_path / f"r_{pred.suffix[1:]}"
        code, _, err = cli(["eval", "--predictions", pred, "--truth", example_genbank,
                            "--out", out, "-q"])
        assert code == 0, err
        m = json.loads((out / "metrics.json").read_text())["benchmarks"]["predictions"]["metrics"]
        got[pred.suffix] = m[pred.name]
    keys = ("tp", "n_pred", "n_true", "sensitivity", "precision", "start_agreement")
    assert [got[".gbk"][k] for k in keys] == [got[".gff3"][k] for k in keys]
    assert got[".gbk"]["n_pred"] >= 8
    assert (got[".gb"]["sensitivity"], got[".gb"]["precision"]) == (1.0, 1.0)


def test_predictions_gff3_gzip_scores_and_truth_rules(tmp_path, cli, example_genbank):
    """A gzipped GFF3 of predictions is read; a score that is not a number does not matter; a
    pseudo CDS and a joined one are left out as the truth leaves them out, so the truth's own
    genes plus those score 1.0 (not lower precision); a binary file is a one-line error."""
    import gzip

    from genoctx.io.annotation import read_genes

    truth = read_genes(example_genbank)
    g = truth[0]
    extra = [f"{g.contig}\ttool\tCDS\t2001\t2300\t.\t+\t0\tID=ps;pseudo=true",
             f"{g.contig}\ttool\tCDS\t3001\t3150\t.\t+\t0\tID=slip",
             f"{g.contig}\ttool\tCDS\t3150\t3300\t.\t+\t0\tID=slip"]
    plain = _gff_from_truth(truth, tmp_path / "p.gff3", extra=extra)
    text = plain.read_text().replace("\t.\t+\t0\tID=cds0", "\tNA\t+\t0\tID=cds0", 1)
    gz = tmp_path / "p.gff3.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    code, _, err = cli(["eval", "--predictions", gz, "--truth", example_genbank,
                        "--out", tmp_path / "o", "-q"])
    assert code == 0, err
    got = json.loads((tmp_path / "o" / "metrics.json").read_text())
    got = got["benchmarks"]["predictions"]["metrics"]["p.gff3.gz"]
    assert (got["n_pred"], got["sensitivity"], got["precision"]) == (len(truth), 1.0, 1.0)
    binary = tmp_path / "bin.gff"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    code, _, err = cli(["eval", "--predictions", binary, "--truth", example_genbank,
                        "--out", tmp_path / "b", "-q"])
    assert code == 2 and "not a GFF3 text file" in err and "Traceback" not in err


def test_predictions_across_the_origin_are_left_out_like_the_truths(tmp_path, cli,
                                                                     example_genbank):
    """A predicted CDS across pPCP1's origin (one row ending past 9,612, as `annotate
    --circular` writes it, or two pieces from the origin and to the end) is not a false positive:
    the truth leaves joined CDS out, so scoring leaves these out too, and says so."""
    from genoctx.io.annotation import annotation_lengths, read_genes

    truth = read_genes(example_genbank)
    c = truth[0].contig
    n = annotation_lengths(example_genbank)[c]
    extra = [f"{c}\ttool\tCDS\t{n - 98}\t{n + 100}\t.\t+\t0\tID=ring",
             f"{c}\ttool\tCDS\t{n - 200}\t{n}\t.\t-\t0\tID=two",
             f"{c}\ttool\tCDS\t1\t99\t.\t-\t0\tID=two"]
    pred = _gff_from_truth(truth, tmp_path / "ring.gff3", extra=extra)
    code, _, err = cli(["eval", "--predictions", pred, "--truth", example_genbank,
                        "--out", tmp_path / "o", "-q"])
    assert code == 0, err
    got = json.loads((tmp_path / "o" / "metrics.json").read_text())
    got = got["benchmarks"]["predictions"]["metrics"]["ring.gff3"]
    assert (got["n_pred"], got["sensitivity"], got["precision"]) == (len(truth), 1.0, 1.0)
    assert "2 predicted gene(s) across a contig's origin left out" in \
        (tmp_path / "o" / "report.md").read_text()


def test_predictions_mode_errors(tmp_path, cli, example_genbank):
    bad = tmp_path / "bad.gff3"
    bad.write_text("##gff-version 3\nother\tt\tCDS\t1\t30\t.\t+\t0\tID=a\n")
    code, _, err = cli(["eval", "--predictions", bad, "--truth", example_genbank, "--out", tmp_path])
    assert code == 2 and "share no contig names" in err
    code, _, err = cli(["eval", "--predictions", bad, "--out", tmp_path])
    assert code == 2 and "need --truth" in err
    code, _, err = cli(["eval", "annotation-bacteria", "--truth", example_genbank, "--out", tmp_path])
    assert code == 2 and "not both" in err
    code, _, err = cli(["eval", "--out", tmp_path])
    assert code == 2 and "name benchmarks" in err


def test_annotation_bacteria_quick_is_reproducible(tmp_path, cli, data_root):
    code, out, err = cli(["eval", "annotation-bacteria", "--model", "none", "--quick",
                          "--check-reproducible", "--out", tmp_path, "-q"])
    assert code == 0, err
    assert "reproducible" in err
    doc = json.loads((tmp_path / "run1" / "metrics.json").read_text())
    bench = doc["benchmarks"]["annotation-bacteria"]
    assert doc["manifest"]["quick"] is True
    rows = {(r["dataset"], r["method"], r["metric"]): r["value"] for r in bench["rows"]}
    for genome in ("Brucella_melitensis_16M", "Haemophilus_influenzae_Rd_KW20"):
        for tool in ("genoctx (sequence only)", "prodigal"):
            assert 0.8 < rows[(genome, tool, "gene f1")] <= 1.0
    assert (tmp_path / "run1" / "annotation-bacteria" / "gene_f1.png").stat().st_size > 1000
    assert "![tracks](annotation-bacteria/tracks.png)" in (tmp_path / "run1" / "report.md").read_text()


def test_model_on_truth_mode(tmp_path, cli, example_genbank, example_fasta):
    code, out, err = cli(["eval", "--truth", example_genbank, "--fasta", example_fasta,
                          "--out", tmp_path, "-q"])
    assert code == 0, err
    doc = json.loads((tmp_path / "metrics.json").read_text())
    m = doc["benchmarks"]["model-on-truth"]["metrics"]
    assert set(m) == {"genoctx (model)", "genoctx (sequence only)", "prodigal"}
    for tool, res in m.items():
        assert res["n_true"] == 10 and 0.5 < res["f1"] <= 1.0, tool
        assert 0.5 < res["per_base_cds"]["f1"] <= 1.0
    # genoctx's calls also scored as --min-score 0.5 and 0.6 would keep them
    from genoctx.heads.annotate import call_bacterial
    from genoctx.io.fasta import iter_records

    scores = [g.score for g in call_bacterial(list(iter_records(example_fasta)))[0]]
    seq_only = m["genoctx (sequence only)"]["by_min_score"]
    assert [seq_only[t]["n_pred"] for t in ("0.5", "0.6")] == [
        sum(s >= t for s in scores) for t in (0.5, 0.6)]
    assert "by_min_score" not in m["prodigal"]
    report = (tmp_path / "report.md").read_text()
    assert "gene f1, --min-score 0.6" in report
    assert doc["manifest"]["model"]["model_sha256"]
    assert (tmp_path / "model-on-truth" / "tracks.png").is_file()


def test_probs_cache_key_follows_weights_and_windows(tmp_path, monkeypatch):
    """The eval harness keys its cached head probabilities by backbone and head sha256, by
    predict_probs' version and by the window settings, so a new head or new window semantics
    never reads a stale cache."""
    import shutil

    import torch

    from genoctx.heads import annotation
    from genoctx.model import checkpoint

    ckpt = tmp_path / "ckpt"
    shutil.copytree(checkpoint.resolve_checkpoint("embedded"), ckpt)
    key = annotation.probs_cache_key(ckpt, 8192, 1024)
    assert annotation.probs_cache_key(ckpt, 8192, 1024) == key
    assert annotation.probs_cache_key(ckpt, 8192, 256) != key
    monkeypatch.setattr(annotation, "PROBS_VERSION", annotation.PROBS_VERSION + 1)
    assert annotation.probs_cache_key(ckpt, 8192, 1024) != key
    monkeypatch.undo()
    backbone, head = annotation.load_annotation_model(ckpt)
    with torch.no_grad():
        head.out.bias.add_(1.0)
    annotation.save_annotation_model(ckpt, backbone, head)
    assert annotation.probs_cache_key(ckpt, 8192, 1024) != key


def test_probs_cache_key_follows_the_configs(tmp_path):
    """config.json (rope_theta) and head.json change the probabilities as the weights do, so
    they change the cache key: a cache written before the edit is not read after it."""
    import shutil

    from genoctx.heads import annotation
    from genoctx.model import checkpoint

    ckpt = tmp_path / "ckpt"
    shutil.copytree(checkpoint.resolve_checkpoint("embedded"), ckpt)
    keys = {annotation.probs_cache_key(ckpt, 8192, 1024)}
    cfg = ckpt / "config.json"
    cfg.write_text(cfg.read_text().replace('"rope_theta": 1000000.0', '"rope_theta": 10000.0'))
    keys.add(annotation.probs_cache_key(ckpt, 8192, 1024))
    head = ckpt / "head.json"
    head.write_text(head.read_text().replace("}", ', "x": 1}'))
    keys.add(annotation.probs_cache_key(ckpt, 8192, 1024))
    assert len(keys) == 3


def test_bacterial_probability_cache_follows_the_genome_file(tmp_path):
    """annotation-bacteria's cached probabilities are named by the genome file's bytes too: a
    genome replaced under the same name (a new manifest) is not read from the old cache."""
    from types import SimpleNamespace

    from genoctx.eval.benchmarks import annotation_bacteria as ab
    from genoctx.model import checkpoint

    genome = tmp_path / "genomes" / "x.gbff.gz"
    genome.parent.mkdir()
    genome.write_bytes(b"first")
    ctx = SimpleNamespace(data_file=lambda rel: tmp_path / rel, device="cpu", quick=False)
    ckpt = checkpoint.resolve_checkpoint("embedded")
    first = ab.probs_cache_path(ctx, "genomes/x.gbff.gz", ckpt, tmp_path)
    assert first.name.startswith("x.") and first.name.endswith(".full.probs.npz")
    assert ab.probs_cache_path(ctx, "genomes/x.gbff.gz", ckpt, tmp_path) == first
    genome.write_bytes(b"second")
    assert ab.probs_cache_path(ctx, "genomes/x.gbff.gz", ckpt, tmp_path) != first
    ctx.quick = True
    assert ab.probs_cache_path(ctx, "genomes/x.gbff.gz", ckpt, tmp_path).name.endswith(
        ".quick.probs.npz")


def test_a_damaged_or_foreign_probability_cache_is_computed_again(tmp_path):
    """A cache file cut short (a run stopped while writing it) or holding other records reads
    as no cache; one written by save_probs_cache reads back whole, and never half-written."""
    import numpy as np

    from genoctx.heads.annotation import load_probs_cache, save_probs_cache

    probs = {"a": np.arange(12, dtype=np.float16).reshape(4, 3),
             "b": np.ones((2, 3), np.float16)}
    cache = tmp_path / "x.probs.npz"
    save_probs_cache(cache, probs)
    assert [p.name for p in tmp_path.iterdir()] == ["x.probs.npz"]
    got = load_probs_cache(cache, [("a", 4), ("b", 2)])
    assert got is not None and all(np.array_equal(got[k], probs[k]) for k in probs)
    assert load_probs_cache(cache, [("a", 5)]) is None  # other lengths
    assert load_probs_cache(cache, [("c", 2)]) is None  # another record
    cache.write_bytes(cache.read_bytes()[:200])  # cut short
    assert load_probs_cache(cache, [("a", 4)]) is None
    assert load_probs_cache(tmp_path / "missing.npz", [("a", 4)]) is None


def test_each_benchmark_keeps_its_own_report_when_another_runs_into_the_same_out(tmp_path,
                                                                                 data_root):
    def plotted(label):
        def run(ctx):
            png = ctx.bench_dir(label) / "bars.png"
            png.write_bytes(b"\x89PNG\r\n\x1a\n")
            return harness.BenchResult(metrics={"n": 1}, notes=[f"{label} note"],
                                       rows=[harness.Row("d", "m", label, 1.0, "anchor")],
                                       plots=[png])
        return run

    harness.run_jobs([("first", plotted("first"))], out=tmp_path, model=None,
                     data_root=data_root)
    harness.run_jobs([("second", plotted("second"))], out=tmp_path, model=None,
                     data_root=data_root)
    top = (tmp_path / "report.md").read_text()
    assert "second note" in top and "first note" not in top  # the top report is the last run's
    for label in ("first", "second"):
        own = (tmp_path / label / "report.md").read_text()
        assert f"{label} note" in own and f"| {label} |" in own
        assert "](bars.png)" in own  # plots linked from beside the report
        doc = json.loads((tmp_path / label / "metrics.json").read_text())
        assert list(doc["benchmarks"]) == [label]


def _size_job(ctx):
    return harness.BenchResult(metrics={"n": 1})


def test_manifest_pins_every_checkpoint_file_and_the_packaged_weights(tmp_path, data_root,
                                                                     monkeypatch):
    """Editing any checkpoint file that is read (decoder.json's neural weights, config.json's
    rope_theta, head.json), adding a decoder.json, or changing a packaged weight file of the
    decoders changes the manifest; the report lists them. (The manifest used to hash only the
    two safetensors.)"""
    import shutil

    from genoctx.heads import orf_scorer
    from genoctx.model import checkpoint

    ckpt = tmp_path / "ckpt"
    shutil.copytree(checkpoint.resolve_checkpoint("embedded"), ckpt)

    def manifest(tag):
        doc = harness.run_jobs([("toy", _size_job)], out=tmp_path / tag, model=str(ckpt),
                               data_root=data_root)
        return doc["manifest"]

    base = manifest("base")
    files = base["model"]["files"]
    assert set(files) >= {"config.json", "model.safetensors", "head.json", "head.safetensors",
                          "decoder.json"}
    assert base["model"]["head_sha256"] == files["head.safetensors"]
    assert base["model"]["path"] == str(ckpt.resolve())
    assert base["packaged_weights"]["orf_scorer.safetensors"]
    assert base["packaged_weights"]["meta_models.json"]
    seen = [base["model"]]
    for name, edit in (("decoder.json", ('"neural_gene_weight": 0.0', '"neural_gene_weight": 0.5')),
                       ("config.json", ('"rope_theta": 1000000.0', '"rope_theta": 10000.0')),
                       ("head.json", ("}", ', "x": 1}'))):
        text = (ckpt / name).read_text()
        assert edit[0] in text, name
        (ckpt / name).write_text(text.replace(edit[0], edit[1], 1))
        got = manifest(name)["model"]
        assert got not in seen, name
        assert got["model_sha256"] == base["model"]["model_sha256"]
        seen.append(got)
    (ckpt / "decoder.json").unlink()  # no decoder.json is a setting too (the defaults)
    assert manifest("nodecoder")["model"]["files"]["decoder.json"] is None
    report = (tmp_path / "base" / "report.md").read_text()
    assert f"| model: config.json | `{files['config.json']}` |" in report
    assert "genoctx/weights/orf_scorer.safetensors" in report
    # the ORF scorer the sequence-only decoder loads, changed
    weights = tmp_path / "weights"
    shutil.copytree(orf_scorer.WEIGHTS_DIR, weights)
    (weights / "orf_scorer.json").write_text("{}\n")
    monkeypatch.setattr(orf_scorer, "WEIGHTS_DIR", weights)
    got = manifest("orf")["packaged_weights"]
    assert got["orf_scorer.json"] != base["packaged_weights"]["orf_scorer.json"]
    assert got["orf_scorer.safetensors"] == base["packaged_weights"]["orf_scorer.safetensors"]


def _plotting(label, content=b"A", fail=False):
    def run(ctx):
        png = ctx.bench_dir(label) / "bars.png"
        png.write_bytes(b"\x89PNG\r\n\x1a\n" + content)
        if fail:
            raise RuntimeError(f"{label} failed")
        return harness.BenchResult(metrics={"content": content.decode()}, plots=[png],
                                   rows=[harness.Row("d", "m", label, 1.0)])
    return run


def test_a_failed_benchmark_leaves_its_folder_as_the_last_run_left_it(tmp_path, data_root):
    """A rerun into the same --out that fails part-way leaves no new plot beside the older
    metrics.json (it used to write its PNGs straight into out/NAME), and no temporary folder."""
    harness.run_jobs([("first", _plotting("first", b"A"))], out=tmp_path, model=None,
                     data_root=data_root)
    before = {p.name: p.read_bytes() for p in (tmp_path / "first").iterdir()}
    top = (tmp_path / "metrics.json").read_bytes()
    with pytest.raises(RuntimeError, match="first failed"):
        harness.run_jobs([("first", _plotting("first", b"B", fail=True))], out=tmp_path,
                         model=None, data_root=data_root)
    assert {p.name: p.read_bytes() for p in (tmp_path / "first").iterdir()} == before
    assert (tmp_path / "metrics.json").read_bytes() == top
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first", "metrics.json", "report.md"]
    # a run that succeeds replaces the folder whole
    harness.run_jobs([("first", _plotting("first", b"C"))], out=tmp_path, model=None,
                     data_root=data_root)
    assert (tmp_path / "first" / "bars.png").read_bytes().endswith(b"C")
    doc = json.loads((tmp_path / "first" / "metrics.json").read_text())
    assert doc["benchmarks"]["first"]["metrics"] == {"content": "C"}
    assert "![bars](first/bars.png)" in (tmp_path / "report.md").read_text()


def test_finished_benchmarks_are_kept_when_a_later_one_fails(tmp_path, data_root):
    """Each benchmark's metrics.json is written when it finishes; the top-level pair names the
    benchmarks that did not finish, so it never describes folders this run did not write."""
    out = tmp_path / "o"
    with pytest.raises(RuntimeError, match="boom failed"):
        harness.run_jobs([("ok", _plotting("ok")), ("boom", _plotting("boom", fail=True))],
                         out=out, model=None, data_root=data_root)
    own = json.loads((out / "ok" / "metrics.json").read_text())
    assert own["benchmarks"]["ok"]["metrics"] == {"content": "A"}
    assert (out / "ok" / "bars.png").is_file() and not (out / "boom").exists()
    top = json.loads((out / "metrics.json").read_text())
    assert list(top["benchmarks"]) == ["ok"] and top["manifest"]["unfinished"] == ["boom"]
    assert "unfinished run: boom" in (out / "report.md").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["metrics.json", "ok", "report.md"]


def test_inputs_are_checked_before_any_benchmark_runs(tmp_path, data_root):
    """A checkpoint without an annotation head, or a data file missing from the data root, is
    refused before the first benchmark runs (it used to run dnabert-promoter to the end, then
    refuse, and leave its plots behind)."""
    import shutil

    from genoctx.eval.benchmarks import brca1_sge, dnabert_promoter
    from genoctx.model import checkpoint

    nohead = tmp_path / "nohead"
    nohead.mkdir()
    for name in ("model.safetensors", "model.safetensors.sha256", "config.json"):
        shutil.copy(checkpoint.resolve_checkpoint("embedded") / name, nohead / name)
    out = tmp_path / "o1"
    with pytest.raises(InputError, match="annotation-bacteria needs a checkpoint with an "
                                         "annotation head"):
        harness.run_benchmarks(["dnabert-promoter", "annotation-bacteria"], out=out,
                               model=str(nohead), data_root=data_root, quick=True, quiet=True)
    assert not out.exists()
    # a data root that lacks the second benchmark's table
    root = tmp_path / "root"
    for rel in ("MANIFEST.tsv", dnabert_promoter.DATA, brca1_sge.FASTA):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).symlink_to(data_root / rel)
    out = tmp_path / "o2"
    with pytest.raises(InputError, match=f"data file {brca1_sge.TSV} not found"):
        harness.run_benchmarks(["dnabert-promoter", "brca1-sge"], out=out, model=None,
                               data_root=root, quick=True, quiet=True)
    assert not out.exists()


def test_a_rerun_still_reads_the_cached_probabilities_of_the_folder_it_replaces(tmp_path,
                                                                                 data_root):
    """Benchmarks write into a temporary folder; the caches of the folder it replaces come
    along (the model's probabilities are not computed again), the old folder's other files
    do not."""
    def job(ctx):
        d = ctx.bench_dir("b")
        cache = d / "x.probs.npz"
        hit = cache.is_file()
        if not hit:
            np.savez(cache, a=np.arange(3))
        (d / f"plot_{int(hit)}.png").write_bytes(b"png")
        return harness.BenchResult(metrics={"hit": hit})

    first = harness.run_jobs([("b", job)], out=tmp_path, model=None, data_root=data_root)
    second = harness.run_jobs([("b", job)], out=tmp_path, model=None, data_root=data_root)
    assert first["benchmarks"]["b"]["metrics"] == {"hit": False}
    assert second["benchmarks"]["b"]["metrics"] == {"hit": True}
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [
        "metrics.json", "plot_1.png", "report.md", "x.probs.npz"]


def _recorded_source(package_parent):
    """``[git_commit, package_sha256]`` as the harness of the package copied under
    ``package_parent`` records them (run in a fresh interpreter, as a user's would be)."""
    import os
    import subprocess
    import sys

    code = ("import json; from genoctx.eval import harness as h; "
            "print(json.dumps([h._git_commit(), getattr(h, '_package_sha256', lambda: None)()]))")
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=package_parent, env=env)
    return json.loads(res.stdout)


def _copy_package(dest):
    import shutil
    from pathlib import Path

    import genoctx

    src = Path(genoctx.__file__).resolve().parent
    shutil.copytree(src, dest / "genoctx", ignore=shutil.ignore_patterns(
        "__pycache__", "*.safetensors", "*.png"))


def _git(repo, *args):
    import subprocess

    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def test_git_commit_is_genoctx_own_checkout_only(tmp_path):
    """Installed (not editable) in a virtual environment inside a user's git project, genoctx
    records no commit (it recorded the user's HEAD) but the sha256 of its package's files."""
    proj = tmp_path / "proj"
    site = proj / ".venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (proj / "analysis.py").write_text("print(1)\n")
    _git(proj, "init", "-q")
    _git(proj, "add", "analysis.py")
    _git(proj, "commit", "-qm", "user's work")
    _copy_package(site)
    commit, digest = _recorded_source(site)
    assert commit is None
    assert digest and len(digest) == 64


def test_git_dirty_counts_untracked_package_files(tmp_path):
    """In genoctx's own checkout, a new untracked module (a new benchmark) marks the commit
    -dirty (``--untracked-files=no`` hid it), and the package sha256 says what changed."""
    repo = tmp_path / "genoctx-src"
    repo.mkdir()
    _copy_package(repo)
    _git(repo, "init", "-q")
    _git(repo, "add", "genoctx")
    _git(repo, "commit", "-qm", "genoctx")
    head = _git(repo, "rev-parse", "HEAD")
    clean, digest = _recorded_source(repo)
    assert clean == head
    (repo / "genoctx" / "eval" / "benchmarks" / "extra.py").write_text("NAME = 'x'\n")
    dirty, digest2 = _recorded_source(repo)
    assert dirty == head + "-dirty"
    assert digest2 != digest


def test_the_recorded_command_keeps_global_options_and_every_argument(tmp_path, cli, data_root,
                                                                       monkeypatch):
    """`genoctx --debug eval ... --seed 3 --out 'my out'` is recorded whole and shell-quoted
    (it was recorded as `genoctx eval dnabert-promoter`, which reruns another run), with the
    data root and the working folder."""
    import shlex
    import sys

    out = tmp_path / "my out"
    argv = ["--debug", "eval", "dnabert-promoter", "--quick", "--model", "none", "--seed", "3",
            "--data-root", str(data_root), "--out", str(out), "-q"]
    monkeypatch.setattr(sys, "argv", ["genoctx", *argv])  # as the console script runs it
    code, _, err = cli(argv)
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())["manifest"]
    assert m["command"] == shlex.join(["genoctx", *argv])
    assert shlex.split(m["command"])[-2] == str(out)
    assert m["data_root"] == str(data_root.resolve())
    assert m["cwd"]
    assert f"- command: `{m['command']}`" in (out / "report.md").read_text()


def test_each_benchmark_copy_carries_its_own_manifest(tmp_path, data_root):
    """out/NAME/metrics.json and report.md list only the data files that benchmark read and
    its own timing (they carried the whole run's: every benchmark's files)."""
    other = "genomes/bacteria/Brucella_melitensis_16M.gbff.gz"

    def reads(*rels):
        def run(ctx):
            for rel in rels:
                ctx.data_file(rel)
            return harness.BenchResult(metrics={"n": len(rels)})
        return run

    doc = harness.run_jobs([("a", reads(VALIDATION)), ("b", reads(other, VALIDATION))],
                           out=tmp_path, model=None, data_root=data_root)
    assert set(doc["manifest"]["data_files"]) == {VALIDATION, other}
    assert doc["manifest"]["benchmarks"] == ["a", "b"]
    own_a = json.loads((tmp_path / "a" / "metrics.json").read_text())["manifest"]
    own_b = json.loads((tmp_path / "b" / "metrics.json").read_text())["manifest"]
    assert set(own_a["data_files"]) == {VALIDATION} and own_a["benchmarks"] == ["a"]
    assert set(own_b["data_files"]) == {other, VALIDATION} and own_b["benchmarks"] == ["b"]
    assert own_a["wall_s"] == doc["benchmarks"]["a"]["wall_s"]
    assert other not in (tmp_path / "a" / "report.md").read_text()
    assert other in (tmp_path / "b" / "report.md").read_text()


def test_module_entry_errors_are_one_line_with_status_2(tmp_path, capsys, data_root):
    """`python -m genoctx.eval.benchmarks.X` with a missing data root or model says so in one
    line and exits 2, as `genoctx eval` does (it printed a traceback, status 1)."""
    for args, said in ((["--data-root", str(tmp_path / "nowhere"), "--model", "none"],
                        "does not exist"),
                       (["--data-root", str(data_root), "--model", str(tmp_path / "nomodel")],
                        "not found")):
        with pytest.raises(SystemExit) as stop:
            harness.main_module_entry("dnabert-promoter",
                                      [*args, "--quick", "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert stop.value.code == 2
        assert err.startswith("genoctx: error: ") and said in err and err.count("\n") == 1
