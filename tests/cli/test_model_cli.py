"""``genoctx model info`` and ``genoctx embed``, run in-process."""

import json

import numpy as np
import pytest
import torch

from genoctx.model import checkpoint
from genoctx.model.config import ModelConfig, get_config
from genoctx.model.model import GenoCtxModel
from genoctx.tokenize.nucleotide import encode

CONTIG = "gi|45478711|ref|NC_005816.1|"


@pytest.fixture(autouse=True)
def _one_thread():
    """Small tensors: one thread avoids OpenMP barrier stalls on a shared 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def small_ckpt(tmp_path_factory):
    cfg = ModelConfig(name="cli-test", d_model=32, num_layers=2, num_heads=2, num_kv_heads=1,
                      head_dim=16, block_size=128, top_k_blocks=2, topk_window_blocks=2,
                      num_experts=4, top_k=2, expert_dim=16)
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("ckpt") / "model"
    GenoCtxModel(cfg).save_pretrained(path)
    return path


def test_info_json_tiny(cli):
    code, out, _ = cli(["model", "info", "--config", "tiny", "--json"])
    assert code == 0
    info = json.loads(out)
    cfg = get_config("tiny")
    assert info["total_params"] == cfg.num_params()
    assert info["active_params"] == cfg.num_active_params()
    assert (info["num_experts"], info["top_k"]) == (16, 2)
    assert info["weight_bytes_bf16"] == 2 * cfg.num_params()


def test_info_json_glm(cli):
    code, out, _ = cli(["model", "info", "--config", "glm-5.3-flash", "--json"])
    assert code == 0
    info = json.loads(out)
    assert abs(info["total_params"] - 320e9) <= 0.03 * 320e9
    assert info["active_params"] <= 30e9
    assert (info["num_experts"], info["top_k"]) == (128, 8)
    assert info["active_params"] == info["routed_active_params"] + info["always_on_params"]


def test_info_text_shows_the_arithmetic(cli):
    code, out, _ = cli(["model", "info", "-c", "glm-5.3-flash"])
    assert code == 0
    assert "active-parameter arithmetic" in out and "8/128 = 6.25%" in out
    assert "cannot be met" in out and "activation memory at 1,048,576 tokens" in out


def test_info_from_a_checkpoint_and_errors(cli, small_ckpt):
    code, out, _ = cli(["model", "info", "--model", small_ckpt, "--json"])
    assert code == 0 and json.loads(out)["name"] == "cli-test"
    code, _, err = cli(["model", "info", "--config", "tiny", "--model", small_ckpt])
    assert code == 2 and "not both" in err
    code, _, err = cli(["model", "info", "--config", "gigantic"])
    assert code == 2 and "choose one of" in err and "Traceback" not in err


def test_info_counts_a_config_of_a_million_layers_without_building_them(cli, small_ckpt,
                                                                        tmp_path):
    """The meta-device cross-check builds one and two layers, not all of them (it hung)."""
    deep = tmp_path / "deep"
    deep.mkdir()
    for f in small_ckpt.iterdir():
        (deep / f.name).write_bytes(f.read_bytes())
    meta = json.loads((deep / "config.json").read_text())
    meta["config"]["num_layers"] = 10**6
    (deep / "config.json").write_text(json.dumps(meta))
    code, out, err = cli(["model", "info", "--model", deep, "--json"])
    assert code == 0, err
    info = json.loads(out)
    cfg = ModelConfig(**meta["config"])
    assert info["num_layers"] == 10**6 and info["total_params"] == cfg.num_params()
    with torch.device("meta"):  # the extrapolation is exact: compare with a module of 3 layers
        three = GenoCtxModel(ModelConfig(**{**meta["config"], "num_layers": 3}), backend="torch")
    per_layer = (cfg.num_params() - sum(p.numel() for p in three.parameters())) // (10**6 - 3)
    assert per_layer == sum(cfg.layer_params().values())


def test_model_info_reads_a_checkpoint_named_by_one_of_its_files_or_in_any_case(cli,
                                                                              small_ckpt):
    code, want, err = cli(["model", "info", "--model", small_ckpt])
    assert code == 0, err
    for name in ("config.json", "model.safetensors", "model.safetensors.sha256"):
        assert cli(["model", "info", "--model", small_ckpt / name])[1] == want
    code, _, err = cli(["model", "info", "--model", small_ckpt / "nothing" / ".." / "x.txt"])
    assert code == 2 and "not found" in err
    code, _, err = cli(["model", "info", "--model", "EMBEDDED"])
    assert code == 0 or "no trained weights ship" in err


def test_embed_region(cli, small_ckpt, example_fasta, tmp_path):
    out = tmp_path / "emb.npy"
    code, stdout, err = cli(["embed", example_fasta, "--region", f"{{{CONTIG}}}:101-700",
                             "--model", small_ckpt, "--segment-len", "256", "--out", out])
    assert code == 0, err
    emb = np.load(out)
    assert emb.shape == (600, 64) and emb.dtype == np.float32
    seq = example_fasta.read_text().split("\n", 1)[1].replace("\n", "")[100:700]
    model = GenoCtxModel.from_pretrained(small_ckpt)
    want = model.embed(torch.from_numpy(encode(seq).astype(np.int64))[None])[0].numpy()
    np.testing.assert_allclose(emb, want, atol=1e-5)
    assert "600 bp" in err and not stdout  # stdout may be the data (--out /dev/stdout)

    mean_out = tmp_path / "mean.npy"
    code, _, _ = cli(["embed", example_fasta, "--model", small_ckpt, "--pool", "mean",
                      "--out", mean_out, "-q"])  # the file's only record
    assert code == 0
    assert np.load(mean_out).shape == (64,)


@pytest.mark.parametrize("name, delimiter", [("emb.tsv", "\t"), ("emb.csv", ",")])
def test_embed_to_text_holds_the_npy_values(cli, small_ckpt, example_fasta, tmp_path, name,
                                            delimiter):
    args = ["embed", example_fasta, "--region", f"{{{CONTIG}}}:101-300", "--model", small_ckpt,
            "--segment-len", "256", "-q", "--out"]
    assert cli(args + [tmp_path / "emb.npy"])[0] == 0
    assert cli(args + [tmp_path / name])[0] == 0
    header = (tmp_path / name).read_text().splitlines()[0]
    assert header.startswith("#fwd_0" + delimiter) and header.endswith(delimiter + "rev_31")
    text = np.loadtxt(tmp_path / name, delimiter=delimiter, ndmin=2)
    np.testing.assert_allclose(text, np.load(tmp_path / "emb.npy"), rtol=1e-6, atol=1e-7)


def test_embed_refuses_names_of_formats_it_does_not_write(cli, small_ckpt, example_fasta,
                                                         tmp_path):
    """x.tsv.gz or x.parquet would get .npy bytes under that name; - would make a file of
    that name. Each is refused before the model runs, and nothing is written."""
    for name, want in (("e.tsv.gz", "not compressed"), ("e.parquet", "writes .npy"),
                       ("e", "writes .npy"), ("-", "/dev/stdout")):
        code, _, err = cli(["embed", example_fasta, "--model", small_ckpt, "-q",
                            "--out", tmp_path / name if name != "-" else "-"])
        assert code == 2 and want in err, (name, err)
    assert list(tmp_path.iterdir()) == []


def test_embed_refuses_a_region_beyond_the_memory(cli, small_ckpt, example_fasta, tmp_path,
                                                  monkeypatch):
    import os

    real = os.sysconf
    monkeypatch.setattr(os, "sysconf", lambda k: 1000 if k == "SC_PHYS_PAGES" else real(k))
    code, _, err = cli(["embed", example_fasta, "--model", small_ckpt, "-q",
                        "--out", tmp_path / "e.npy"])
    assert code == 2 and "shorter --region" in err and "GiB" in err
    assert not (tmp_path / "e.npy").exists()


def test_embed_errors_leave_no_output(cli, small_ckpt, example_fasta, tmp_path):
    out = tmp_path / "e.npy"
    code, _, err = cli(["embed", example_fasta, "--model", small_ckpt, "--segment-len", "100",
                        "--out", out, "-q"])
    assert code == 2 and "multiple of block_size" in err
    code, _, err = cli(["embed", example_fasta, "--region", "chrX:1-10", "--model", small_ckpt,
                        "--out", out, "-q"])
    assert code == 2 and "unknown contig" in err
    two = tmp_path / "two.fa"
    two.write_text(">empty\n>a\nACGTACGT\n>b\nGGGGCCCC\n")
    code, _, err = cli(["embed", two, "--model", small_ckpt, "--out", out, "-q"])
    assert code == 2 and "choose one with --region" in err
    assert "--region a or a:1-8)" in err  # an example that exists: not the empty record
    prot = tmp_path / "prot.fa"
    prot.write_text(">RS4_ECOLI\nMARYLGPKLKLSRREGTDLFLKSGVRAIDTKCKIEQAPGQHGARKPRLSDYGVQLREKQK\n")
    code, _, err = cli(["embed", prot, "--model", small_ckpt, "--out", out, "-q"])
    assert code == 2 and "looks like a protein sequence" in err
    code, _, err = cli(["embed", example_fasta, "--model", small_ckpt, "--out", tmp_path, "-q"])
    assert code == 2 and "is a folder" in err and len(err.strip().splitlines()) == 1
    if not (checkpoint.embedded_dir() / checkpoint.WEIGHTS_NAME).exists():
        code, _, err = cli(["embed", example_fasta, "--out", out, "-q"])
        assert code == 2 and "no trained weights ship" in err
    assert not out.exists() and not list(tmp_path.glob(".e.npy*"))
