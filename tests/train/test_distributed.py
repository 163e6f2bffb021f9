"""Data-parallel training over torch.distributed (gloo, CPU): processes launched by torchrun."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from genoctx.errors import InputError
from genoctx.model.config import get_config
from genoctx.model.model import GenoCtxModel
from genoctx.tokenize import nucleotide as nt
from genoctx.train import corpus as corpus_mod
from genoctx.train.distributed import DataParallel, from_env

# no load-balance term: it is computed per process, every other term is a mean over tokens
SMALL = dict(d_model=32, num_layers=1, num_heads=2, num_kv_heads=1, head_dim=16,
             num_experts=8, top_k=2, expert_dim=32, aux_loss_coef=0.0)


def _torchrun(args: list[str], cwd, n: int = 2) -> subprocess.CompletedProcess:
    # --standalone: a rendezvous on this machine at a free port
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           str(n), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)


def _batch(example_fasta, size: int = 4) -> np.ndarray:
    seq = b"".join(example_fasta.read_bytes().split(b"\n")[1:])
    sampler = corpus_mod.WindowSampler(corpus_mod.Corpus([corpus_mod.Record("p", nt.encode(seq))]),
                                       128, seed=3)
    return sampler.sample(size)[0]


def test_synced_gradients_are_those_of_the_whole_batch(tmp_path, example_fasta):
    """Two processes, each with half of a batch: after sync_grads every parameter's gradient
    is the one process's gradient on the whole batch. A gradient that is None on every
    process (an expert no token reached) stays None."""
    ids = _batch(example_fasta)
    np.save(tmp_path / "ids.npy", ids)
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(f"""
        import numpy as np, torch
        from safetensors.torch import save_file
        from genoctx.model.config import get_config
        from genoctx.model.model import GenoCtxModel
        from genoctx.train.distributed import from_env, shutdown
        dp = from_env()
        torch.manual_seed(0)
        model = GenoCtxModel.from_config(get_config("tiny", **{SMALL!r}), backend="torch")
        ids = np.load({str(tmp_path / "ids.npy")!r})
        model.lm_loss(torch.from_numpy(ids[dp.rows(len(ids))]))["loss"].backward()
        dp.sync_grads(model.parameters())
        grads = {{k: p.grad for k, p in model.named_parameters() if p.grad is not None}}
        save_file(grads, {str(tmp_path)!r} + f"/grads{{dp.rank}}.safetensors")
        # None on every process stays None (the optimiser skips it); None on one counts as 0
        params = list(model.parameters())
        for p in params:
            p.grad = torch.full_like(p, float(dp.rank + 1))
        params[0].grad = None
        if dp.rank == 1:
            params[1].grad = None
        dp.sync_grads(params)
        assert params[0].grad is None
        assert torch.all(params[1].grad == 0.5) and torch.all(params[2].grad == 1.5)
        shutdown()
    """))
    res = _torchrun([str(script)], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    torch.manual_seed(0)
    model = GenoCtxModel.from_config(get_config("tiny", **SMALL), backend="torch")
    model.lm_loss(torch.from_numpy(ids))["loss"].backward()
    want = {k: p.grad for k, p in model.named_parameters() if p.grad is not None}
    for rank in (0, 1):
        got = load_file(str(tmp_path / f"grads{rank}.safetensors"))
        assert set(got) == set(want)
        for k in want:
            torch.testing.assert_close(got[k], want[k], rtol=1e-4, atol=1e-6, msg=k)
    # the gradients really come from both halves: one half alone gives others
    model.zero_grad(set_to_none=True)
    model.lm_loss(torch.from_numpy(ids[:2]))["loss"].backward()
    half = {k: p.grad for k, p in model.named_parameters() if p.grad is not None}
    assert any(not torch.allclose(half[k], want[k], atol=1e-5) for k in want if k in half)


def test_train_under_torchrun_follows_the_one_process_run(tmp_path, data_root):
    """`torchrun -m genoctx train` on two processes, each with half of every batch: the logged
    language-model loss follows the one-process run's, only the first process writes, and
    the run record says how it ran."""
    args = ["train", "--recipe", "lm", "--steps", "3", "--batch-size", "4", "--seq-len", "128",
            "--threads", "1", "--quiet", "--data-root", str(data_root)]
    one = subprocess.run([sys.executable, "-m", "genoctx", *args, "--out", "one"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    two = _torchrun(["-m", "genoctx", *args, "--out", "two"], tmp_path)
    assert two.returncode == 0, two.stderr[-3000:]
    assert two.stdout.count("checkpoint written") == 1  # the first process speaks for all
    rows = {run: (tmp_path / run / "loss.csv").read_text().splitlines() for run in ("one", "two")}
    assert len(rows["two"]) == 2  # header + the last step, written once
    head = rows["one"][0].split(",")
    lm = {run: float(r[-1].split(",")[head.index("lm")]) for run, r in rows.items()}
    assert lm["two"] == pytest.approx(lm["one"], abs=2e-3)
    record = json.loads((tmp_path / "two" / "export" / "TRAINING.json").read_text())
    assert record["processes"] == 2 and record["batch_per_process"] == 2
    assert record["command"].startswith("torchrun --nnodes 1 --nproc_per_node 2 -m genoctx train")
    one_w = load_file(str(tmp_path / "one" / "export" / "model.safetensors"))
    two_w = load_file(str(tmp_path / "two" / "export" / "model.safetensors"))
    assert max((one_w[k] - two_w[k]).abs().max().item() for k in one_w) < 5e-3
    # a batch that does not split over the processes: a clear error, before any work
    odd = [("3" if a == "4" else a) for a in args]  # --batch-size 3
    bad = _torchrun(["-m", "genoctx", *odd, "--out", "bad"], tmp_path)
    assert bad.returncode != 0 and "multiple of the process count" in bad.stdout + bad.stderr
    assert not (tmp_path / "bad" / "export").exists()


def test_one_process_without_torchrun(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    dp = from_env()
    assert dp == DataParallel() and dp.main and dp.rows(3) == slice(0, 3)
    with pytest.raises(InputError, match="multiple"):
        DataParallel(1, 2).rows(3)
    assert DataParallel(1, 4).rows(8) == slice(2, 4)


def test_a_run_resumes_on_another_number_of_processes(tmp_path, data_root):
    """The sampler stream and the state are global: two steps on two processes, resumed on one
    process, reach the one-process run (its loss to the load-balance term's difference)."""
    args = ["train", "--recipe", "lm", "--steps", "4", "--batch-size", "2", "--seq-len", "128",
            "--threads", "1", "--quiet", "--data-root", str(data_root)]
    first = _torchrun(["-m", "genoctx", *args, "--stop-after", "2", "--out", "run"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    for out in ("run", "one"):
        res = subprocess.run([sys.executable, "-m", "genoctx", *args, "--out", out],
                             cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
    rows = {out: (tmp_path / out / "loss.csv").read_text().splitlines() for out in ("run", "one")}
    assert [r.split(",")[0] for r in rows["run"]] == ["step", "2", "4"]
    head = rows["one"][0].split(",")
    lm = {out: float(r[-1].split(",")[head.index("lm")]) for out, r in rows.items()}
    assert lm["run"] == pytest.approx(lm["one"], abs=2e-3)


def test_a_time_limit_stops_a_run_of_two_processes_and_exports_it(tmp_path, data_root):
    """Out of time after the first step, both processes stop there (the run ends rather than
    hanging on a collective one of them skipped), and the export's record says how many steps
    were done."""
    args = ["train", "--recipe", "lm", "--steps", "4", "--batch-size", "2", "--seq-len", "128",
            "--threads", "1", "--quiet", "--data-root", str(data_root), "--time-limit", "1e-9",
            "--out", "run"]
    res = _torchrun(["-m", "genoctx", *args], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    record = json.loads((tmp_path / "run" / "export" / "TRAINING.json").read_text())
    assert record["steps_done"] == 1 and record["loop"]["time_limit"] == 1e-9
    rows = (tmp_path / "run" / "loss.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["step", "1"]
