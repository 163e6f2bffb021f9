"""CPU speed and memory of the tiny model over 1,048,576 tokens (segmented inference).

Each measurement runs in its own subprocess, which reports its wall time and its peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss`` at exit), so one run's memory never hides
another's. The weights are random (a speed benchmark: the work per token does not depend on
them beyond routing balance). Dense attention is not run at 1M tokens; causal SDPA is timed at a
few lengths and extrapolated quadratically.

    python benchmarks/model_cpu.py                 # writes the model_cpu section
    python benchmarks/model_cpu.py --tokens 65536  # a quick look, no section written
"""

from __future__ import annotations

import sys

# Sibling scripts (benchmarks/tokenize.py) would shadow standard modules of the same name.
_HERE = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
sys.path[:] = [p for p in sys.path if p not in ("", ".", _HERE)]

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

TARGET_S = 60.0
TARGET_RSS_GB = 4.0
SEGMENT_LEN = 16384


def _tokens(n: int, seed: int = 0):
    """``[1, n]`` token ids: the start of a real assembly when the data root has one, else
    uniform random bases. Returns ``(tokens, description)``."""
    import numpy as np
    import torch

    try:
        from genoctx.io.dataroot import data_file, load_manifest
        from genoctx.io.fasta import FastaFile
        from genoctx.tokenize.nucleotide import ENCODE_TABLE

        rel = min(p for p in load_manifest() if p.startswith("genomes/unannotated/"))
        with FastaFile(data_file(rel)) as fa:
            contig = max(fa.contigs, key=fa.lengths.get)
            if fa.lengths[contig] >= n:
                ids = fa.fetch_array(contig, 0, n, table=ENCODE_TABLE)
                tokens = torch.from_numpy(ids.astype(np.int64))[None]
                return tokens, f"{rel} ({contig}), first {n:,} bp"
    except Exception:  # noqa: BLE001 - any missing piece: fall back to random bases
        pass
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, 8, (1, n), generator=g), f"{n:,} uniform random bases"


def worker(task: str, n: int, threads: int, segment_len: int) -> dict:
    """One measurement, in this process: ``log_likelihood`` or ``embed`` over ``n`` tokens."""
    import torch

    from genoctx.model.model import GenoCtxModel

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GenoCtxModel.from_config("tiny").eval()
    tokens, source = _tokens(n)
    fn = model.log_likelihood if task == "log_likelihood" else model.embed
    fn(tokens[:, : 2 * segment_len], segment_len=segment_len)  # warm-up: allocator, kernels
    cpu0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    out = fn(tokens, segment_len=segment_len)
    wall = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    assert torch.isfinite(out.sum())  # NaN/inf propagate; no temporary the size of ``out``
    cpu = cpu1.ru_utime - cpu0.ru_utime + cpu1.ru_stime - cpu0.ru_stime
    return {"task": task, "tokens": n, "threads": threads, "segment_len": segment_len,
            "wall_s": wall, "cpu_s": cpu, "tokens_per_s": n / wall, "output_shape": list(out.shape),
            "source": source, "backend": model.backend,
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def run_subprocess(task: str, n: int, threads: int, segment_len: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", task, "--tokens", str(n),
           "--threads", str(threads), "--segment-len", str(segment_len)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def dense_sdpa_extrapolation(target: int, lengths=(4096, 8192, 16384)) -> list[list]:
    """Time one causal dense-SDPA layer of the tiny shapes; extrapolate ``a·T²`` to ``target``."""
    import torch
    import torch.nn.functional as F

    from genoctx.model.config import get_config

    cfg = get_config("tiny")
    rows = []
    with torch.inference_mode():
        for T in lengths:
            q, k, v = (torch.randn(1, cfg.num_heads, T, cfg.head_dim) for _ in range(3))
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
            t0 = time.perf_counter()
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
            rows.append((T, time.perf_counter() - t0))
    a = rows[-1][1] / rows[-1][0] ** 2  # the largest length: least overhead-dominated
    out = [[f"{T:,}", f"{s * 1e3:.1f} ms", f"{s * cfg.num_layers:.3f} s"] for T, s in rows]
    extrapolated = a * target ** 2
    out.append([f"{target:,} (extrapolated T²)", f"{extrapolated:.0f} s",
                f"{extrapolated * cfg.num_layers:.0f} s"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=1 << 20)
    ap.add_argument("--threads", type=int, nargs="+", default=None,
                    help="torch threads per run (default: the machine's cores, then 1)")
    ap.add_argument("--tasks", nargs="+", default=["log_likelihood", "embed"])
    ap.add_argument("--segment-len", type=int, default=SEGMENT_LEN)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.tokens, args.threads[0], args.segment_len)))
        return

    spec = importlib.util.spec_from_file_location("_report", Path(__file__).parent / "_report.py")
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    machine, md_table, write_section = report.machine, report.md_table, report.write_section

    cores = len(os.sched_getaffinity(0))
    threads = args.threads or sorted({cores, 1}, reverse=True)
    load_before = os.getloadavg()
    results = []
    for task in args.tasks:
        for t in threads:
            r = run_subprocess(task, args.tokens, t, args.segment_len)
            results.append(r)
            print(json.dumps(r), flush=True)
    load_after = os.getloadavg()
    dense = dense_sdpa_extrapolation(args.tokens)
    for row in dense:
        print(" | ".join(row))
    if args.tokens != 1 << 20:
        return
    rows = [[r["task"], f"{r['tokens']:,}", r["threads"], f"{r['wall_s']:.1f}",
             f"{r['cpu_s']:.1f}", f"{r['tokens_per_s']:,.0f}", f"{r['peak_rss_gb']:.2f}",
             "yes" if r["wall_s"] <= TARGET_S and r["peak_rss_gb"] <= TARGET_RSS_GB else "no"]
            for r in results]
    body = "\n".join([
        "## model_cpu: tiny model, 1,048,576 tokens on CPU",
        "",
        f"Command: `python benchmarks/model_cpu.py` · {machine()}",
        f"Input: {results[0]['source']}; random-init weights (speed only); backend "
        f"`{results[0]['backend']}`; segments of {args.segment_len:,} tokens; fp32, "
        "`torch.inference_mode`. `embed` runs both strands (2 × 1,048,576 tokens; with 2 "
        "threads one worker thread per strand, with 1 one batch) and "
        "returns 1 GiB of embeddings. Each row is a fresh subprocess; peak RSS is its "
        "`ru_maxrss`.",
        f"Target: ≤ {TARGET_S:.0f} s and ≤ {TARGET_RSS_GB:.0f} GB peak RSS. Load average "
        f"(1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after: other jobs shared "
        "these cores when it is above ~0.5, and with two threads a busy core stalls every "
        "OpenMP barrier, which is why the one-thread rows can be faster.",
        "",
        md_table(["task", "tokens", "threads", "wall s", "CPU s", "tokens/s", "peak RSS GB",
                  "target met"], rows),
        "",
        "Dense causal attention (`F.scaled_dot_product_attention`, 2 heads × 32, fp32, one "
        "thread pool) at the same width, for comparison; extrapolated as a·T² from the largest "
        "measured length:",
        "",
        md_table(["tokens", "one layer", f"{4} layers"], dense),
    ])
    write_section("model_cpu", body)


if __name__ == "__main__":
    main()
