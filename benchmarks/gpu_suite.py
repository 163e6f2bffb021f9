"""GPU suite for the Triton kernels: correctness in bf16, then speed at B1 H16 D64 up to T = 1M.

Usage (on a CUDA machine, from the repository root)::

    python benchmarks/gpu_suite.py              # the kernels: T = 131,072 and 1,048,576 (~4 min)
    python benchmarks/gpu_suite.py --app        # ... and genoctx annotate + training steps
    python benchmarks/gpu_suite.py --quick      # T = 16,384 and 131,072, fewer check cases
    python benchmarks/gpu_suite.py --only linear_attn,fla   # comma-separated name filters
    python benchmarks/gpu_suite.py --sweep      # also sweep linear_attn's and the hybrid's tiles
    python benchmarks/gpu_suite.py --only time_attention --T 1048576   # one section, one T
    python benchmarks/gpu_suite.py --from-json gpu_suite.json   # re-render docs from a saved run
    python benchmarks/gpu_suite.py --from-json a.json,b.json    # ... from runs merged in order
    python benchmarks/gpu_suite.py --smoke      # no GPU: every section on the CPU, tiny shapes

``--smoke`` runs every section's code on the CPU (Triton's interpreter, fp32, T of a few hundred to
1,024, one or two heads, the pPCP1 example for time_annotate; FlexAttention forward only, eager) and exits non-zero on any failure or failed
check. It measures nothing worth keeping and never writes docs/benchmarks.md; it exists so that a
bug in the suite's own code is found here rather than on a lent GPU's minutes
(``tests/kernels/test_gpu_suite_smoke.py`` runs it).

Budget (the H200 run of 2026-12-04): the kernel sections take about 4 minutes -- checks ~1 minute,
T = 131,072 ~2 minutes (mostly compiles and fla's autotuner on its first call), T = 1M ~30 s with
FlexAttention's compiles (it runs at the largest T only). ``--app`` adds time_annotate and
time_train, ~3-4 more minutes (most of it compiling the model's kernels on their first calls);
``--only time_annotate`` runs one of them alone. ``--only check`` runs the correctness part alone.

Sections (each in its own try/except: a failure is recorded and the suite goes on):

1. ``check_*``: every kernel (local_attn, linear_attn, block_topk, moe ops, hybrid_attn) against
   its fp32 reference with fresh random bf16 inputs, forward and every gradient, as relative RMS
   error; the bound is 2x the error of plain PyTorch in bf16 on the same inputs plus a floor.
   Fresh outputs are NaN-filled (``GENOCTX_KERNEL_DEBUG=1``) so unwritten elements fail.
2. ``time_*``: forward and forward+backward (CUDA events via ``triton.testing.do_bench``, median)
   and peak memory beside the alternatives: SDPA flash dense causal (T <= 131,072), block-diagonal
   SDPA, FlexAttention (block-512, local halo, sliding-window-1024), fla ``chunk_linear_attn``.
3. ``time_annotate``: ``genoctx annotate`` on a whole genome with the model on the GPU (the
   issue's target: E. coli in <= 2 s), and its parts: the model's probabilities, the gene
   decoder, the RNA-gene finders. The genome is ``--annotate-fasta`` (FASTA or GenBank), else
   E. coli K-12 from the data root when there is one; skipped (with a note) otherwise.
   ``time_train``: 30 steps of ``genoctx train``'s loop with the ``lm`` recipe's model and
   loss on the GPU (8 windows of 8,192 bases of the same genome): loss and seconds per step.
4. A table printed last, written to ``docs/benchmarks.md`` (section ``gpu_suite``) and, when
   ``$OUT`` is set, to ``$OUT/gpu_suite.json`` and ``$OUT/gpu_suite.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Python puts this script's folder first on sys.path, where benchmarks/tokenize.py would shadow
# the standard library's tokenize (torch's import reaches it through linecache).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

REPO = _HERE.parent
GiB = 1024 ** 3
SMOKE = "--smoke" in sys.argv[1:]
if SMOKE:  # before anything imports triton: the kernels run on its CPU interpreter
    os.environ["TRITON_INTERPRET"] = "1"


def _load_report():
    """benchmarks/_report.py, loaded by path (the folder is not on sys.path, see above)."""
    spec = importlib.util.spec_from_file_location("_report", _HERE / "_report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _bootstrap() -> None:
    """Make ``genoctx.kernels`` importable from a plain checkout (no ``pip install -e``)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    try:
        importlib.import_module("genoctx.kernels.linear_attn.reference")
    except ImportError:
        import genoctx
        spec = importlib.util.spec_from_file_location(
            "genoctx.kernels", REPO / "kernels" / "__init__.py",
            submodule_search_locations=[str(REPO / "kernels")])
        mod = importlib.util.module_from_spec(spec)
        sys.modules["genoctx.kernels"] = mod
        spec.loader.exec_module(mod)
        genoctx.kernels = mod


_bootstrap()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

RESULTS: dict = {"meta": {}, "checks": [], "timings": [], "failures": [], "notes": [],
                 "annotate": [], "train": []}
ECOLI = "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"
EXAMPLE = REPO / "data" / "examples" / "Yersinia_pestis_pPCP1_NC_005816.fna"
OUT = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
# where and in what precision the suite runs: a CUDA GPU in bf16, or (--smoke) the CPU in fp32
DEV = "cpu" if SMOKE else "cuda"
LOWP = torch.float32 if SMOKE else torch.bfloat16
HEADS = 1 if SMOKE else 16


def _sync() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def _free() -> None:
    if DEV == "cuda":
        torch.cuda.empty_cache()


def _reset_peak() -> None:
    if DEV == "cuda":
        torch.cuda.reset_peak_memory_stats()


def _peak_gib() -> float:
    return torch.cuda.max_memory_allocated() / GiB if DEV == "cuda" else float("nan")


def _allocated_gib() -> float:
    return torch.cuda.memory_allocated() / GiB if DEV == "cuda" else float("nan")


# ------------------------------------------------------------------------------------------------
# bookkeeping
# ------------------------------------------------------------------------------------------------

def _save() -> None:
    """Dump what we have so far; called after every section so a timeout keeps partial results."""
    if OUT is not None:
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / "gpu_suite.json").write_text(json.dumps(RESULTS, indent=1, default=str))


def run_section(name: str, fn, *args) -> None:
    t0 = time.time()
    print(f"== {name}", flush=True)
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001 - the suite records every failure and goes on
        tb = traceback.format_exc()
        print(tb, flush=True)
        RESULTS["failures"].append({"section": name, "error": f"{type(exc).__name__}: {exc}",
                                    "traceback": tb[-4000:]})
    finally:
        _sync()
        _free()
        print(f"   {name}: {time.time() - t0:.1f} s", flush=True)
        _save()


def rel_rms(x: torch.Tensor, ref: torch.Tensor) -> float:
    x, ref = x.double(), ref.double()
    if not torch.isfinite(x).all():
        return float("inf")
    return ((x - ref).pow(2).mean().sqrt() / ref.pow(2).mean().sqrt().clamp_min(1e-30)).item()


def record_check(kernel: str, case: str, names, ours, lowp, ref, floor: float = 1e-3) -> None:
    """Compare each output/gradient; bound = 2 x plain-PyTorch bf16 error + floor."""
    for name, a, b, r in zip(names, ours, lowp, ref):
        if r is None:
            continue
        err, base = rel_rms(a, r), rel_rms(b, r) if b is not None else float("nan")
        bound = 2 * base + floor if math.isfinite(base) else 10 * floor
        row = dict(kernel=kernel, case=case, quantity=name, err=err, torch_bf16_err=base,
                   bound=bound, ok=bool(err <= bound))
        RESULTS["checks"].append(row)
        flag = "ok " if row["ok"] else "BAD"
        print(f"   {flag} {kernel:12s} {case:38s} {name:8s} err {err:.2e}  torch-bf16 {base:.2e}",
              flush=True)


def grads(out, inputs, grad_out):
    need = [t for t in inputs if t is not None and t.requires_grad]
    g = iter(torch.autograd.grad(out, need, grad_out, allow_unused=True))
    return [next(g) if (t is not None and t.requires_grad) else None for t in inputs]


def leaf(x: torch.Tensor, dtype=None) -> torch.Tensor:
    return x.detach().to(dtype or x.dtype).requires_grad_()


# ------------------------------------------------------------------------------------------------
# plain-PyTorch low-precision baselines (what "plain PyTorch in bf16" computes)
# ------------------------------------------------------------------------------------------------

def linear_lowp(q, k, v, causal, state, C=64, eps=1e-6):
    """The reference's chunked formula with features and matmuls in the input dtype (state fp32)."""
    dt = q.dtype
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    B, T, H, D = q.shape
    S = state[0] if state is not None else q.new_zeros(B, H, D, v.shape[-1], dtype=torch.float32)
    z = state[1] if state is not None else q.new_zeros(B, H, D, dtype=torch.float32)
    if not causal:
        S = S + torch.einsum("bthd,bthe->bhde", fk, v).float()
        z = z + fk.float().sum(1)
        num = torch.einsum("bthd,bhde->bthe", fq, S.to(dt))
        den = torch.einsum("bthd,bhd->bth", fq, z.to(dt))[..., None] + eps
        return num / den, (S, z)
    out = []
    for c0 in range(0, T, C):
        qc, kc, vc = fq[:, c0:c0 + C], fk[:, c0:c0 + C], v[:, c0:c0 + C]
        n = qc.shape[1]
        tril = torch.ones(n, n, device=q.device, dtype=dt).tril()
        a = torch.einsum("bqhd,bkhd->bhqk", qc, kc) * tril
        num = torch.einsum("bqhd,bhde->bqhe", qc, S.to(dt)) + torch.einsum("bhqk,bkhe->bqhe", a, vc)
        den = torch.einsum("bqhd,bhd->bqh", qc, z.to(dt)) + a.sum(-1).transpose(1, 2)
        out.append(num / (den[..., None] + eps))
        S = S + torch.einsum("bkhd,bkhe->bhde", kc, vc).float()
        z = z + kc.float().sum(1)
    return torch.cat(out, 1), (S, z)


def local_mask(T, block_size, causal, extra, B, H, device):
    """Dense [B, H, T, T] boolean mask of the local_attn contract (for SDPA baselines)."""
    NB = (T + block_size - 1) // block_size
    i = torch.arange(NB, device=device)
    blk = ((i[:, None] - i[None, :]).abs() <= 1)[None, None].expand(B, H, NB, NB).clone()
    if extra is not None:
        from genoctx.kernels._triton_utils import sanitize_extra_blocks
        ex = sanitize_extra_blocks(extra, batch=B, heads=H, num_blocks=NB, causal=causal,
                                   device=device).long()
        for slot in range(ex.shape[-1]):  # one-hot per slot: a scatter would let -1 overwrite
            e = ex[..., slot]
            blk |= F.one_hot(e.clamp_min(0), NB).bool() & (e >= 0)[..., None]
    tok = torch.arange(T, device=device) // block_size
    m = blk[:, :, tok][:, :, :, tok]
    if causal:
        m &= torch.ones(T, T, dtype=torch.bool, device=device).tril()
    return m


def local_lowp(q, k, v, block_size, causal, extra):
    B, T, H, D = q.shape
    m = local_mask(T, block_size, causal, extra, B, H, q.device)
    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                       attn_mask=m)
    return o.transpose(1, 2)


# ------------------------------------------------------------------------------------------------
# 1. correctness
# ------------------------------------------------------------------------------------------------

def _rand_qkv(B, T, H, D, E=None, dtype=None):
    dev, dtype = DEV, dtype or LOWP
    return (torch.randn(B, T, H, D, device=dev, dtype=dtype),
            torch.randn(B, T, H, D, device=dev, dtype=dtype),
            torch.randn(B, T, H, E or D, device=dev, dtype=dtype))


def _rand_extra(B, H, NB, nx):
    """Distinct random key blocks per row (the local_attn contract), about a quarter set to -1."""
    ex = torch.rand(B, H, NB, NB, device=DEV).argsort(-1)[..., :nx]
    return torch.where(torch.rand(ex.shape, device=DEV) < 0.25, -1, ex)


def check_linear_attn(quick: bool) -> None:
    from genoctx.kernels.linear_attn.linear_attn import linear_attn
    from genoctx.kernels.linear_attn.reference import linear_attn_reference
    cases = [(1, 65536, 4, 64, 64, 64, True, True), (2, 8191, 2, 128, 64, 32, False, True),
             (1, 16384, 16, 32, 32, 64, True, False), (1, 4097, 4, 64, 64, 128, True, True)]
    if quick:
        cases = cases[1:3]
    if SMOKE:
        cases = [(1, 300, 2, 32, 32, 64, True, True), (2, 130, 1, 64, 32, 32, False, False)]
    names = ["o", "S_f", "z_f", "dq", "dk", "dv", "dS0", "dz0"]
    for B, T, H, D, E, C, causal, init in cases:
        q, k, v = _rand_qkv(B, T, H, D, E)
        st = None
        if init:
            st = (torch.rand(B, H, D, E, device=DEV) * 4, torch.rand(B, H, D, device=DEV) * 8)
        do = torch.randn(B, T, H, E, device=DEV, dtype=LOWP)
        dS, dz = torch.randn(B, H, D, E, device=DEV), torch.randn(B, H, D, device=DEV)
        results = []
        for kind in ("ours", "lowp", "ref"):
            dt = torch.float32 if kind == "ref" else LOWP
            x = [leaf(t, dt) for t in (q, k, v)]
            s0 = tuple(leaf(t) for t in st) if st is not None else None
            if kind == "ours":
                o, (S, z) = linear_attn(*x, causal=causal, initial_state=s0,
                                        output_final_state=True, chunk_size=C)
            elif kind == "lowp":
                o, (S, z) = linear_lowp(*x, causal, s0, C)
            else:
                o, (S, z) = linear_attn_reference(*x, causal=causal, initial_state=s0,
                                                  output_final_state=True, chunk_size=C)
            loss = (o.float() * do.float()).sum() + (S * dS).sum() + (z * dz).sum()
            g = grads(loss, x + list(s0 or (None, None)), None)
            results.append([o, S, z] + g)
        case = (f"B{B} T{T} H{H} D{D} E{E} C{C} {'causal' if causal else 'bidir'}"
                f"{' +state' if init else ''}")
        record_check("linear_attn", case, names, *results)


def check_local_attn(quick: bool) -> None:
    from genoctx.kernels.local_attn.local_attn import local_attn
    from genoctx.kernels.local_attn.reference import local_attn_reference
    cases = [(1, 4096, 4, 64, 512, True, 0), (2, 3001, 2, 64, 128, False, 3),
             (1, 4096, 4, 128, 256, True, 4)]
    if quick:
        cases = cases[:2]
    if SMOKE:
        cases = [(1, 300, 2, 32, 64, True, 2), (1, 200, 1, 64, 64, False, 0)]
    for B, T, H, D, bs, causal, nx in cases:
        q, k, v = _rand_qkv(B, T, H, D)
        NB = (T + bs - 1) // bs
        extra = _rand_extra(B, H, NB, nx) if nx else None
        do = torch.randn_like(q)
        results = []
        for kind in ("ours", "lowp", "ref"):
            x = [leaf(t, torch.float32 if kind == "ref" else None) for t in (q, k, v)]
            if kind == "ours":
                o = local_attn(*x, block_size=bs, causal=causal, extra_blocks=extra)
            elif kind == "lowp":
                o = local_lowp(*x, bs, causal, extra)
            else:
                o = local_attn_reference(*x, block_size=bs, causal=causal, extra_blocks=extra)
            results.append([o] + grads(o, x, do.to(o.dtype)))
        case = f"B{B} T{T} H{H} D{D} bs{bs} {'causal' if causal else 'bidir'} extra{nx}"
        record_check("local_attn", case, ["o", "dq", "dk", "dv"], *results)


@contextlib.contextmanager
def _env(**values):
    """Set environment variables inside the ``with`` (the kernels read some at each launch)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def check_hybrid_attn(quick: bool) -> None:
    from genoctx.kernels.hybrid.hybrid import hybrid_attn
    from genoctx.kernels.hybrid.reference import hybrid_attn_reference
    cases = [(1, 8192, 4, 64, 512, True, 2, True), (1, 3001, 2, 64, 128, False, 0, False)]
    if quick:
        cases = cases[:1]
    if SMOKE:
        cases = [(1, 300, 2, 32, 64, True, 1, True), (1, 200, 1, 32, 64, False, 0, False)]
    # the causal cases again with the two-loop forward (hybrid.LOOPS)
    cases = [(*c, "one") for c in cases] + [(*c, "two") for c in cases if c[5]]
    for B, T, H, D, bs, causal, nx, init, loops in cases:
        q, k, v = _rand_qkv(B, T, H, D)
        gate = torch.rand(B, T, H, device=DEV, dtype=LOWP)
        NB = (T + bs - 1) // bs
        extra = _rand_extra(B, H, NB, nx) if nx else None
        st = None
        if init:
            st = (torch.rand(B, H, D, D, device=DEV) * 4, torch.rand(B, H, D, device=DEV) * 8)
        do = torch.randn_like(q)
        results = []
        for kind in ("ours", "lowp", "ref"):
            dt = torch.float32 if kind == "ref" else LOWP
            x = [leaf(t, dt) for t in (q, k, v, gate)]
            s0 = tuple(leaf(t) for t in st) if st is not None else None
            if kind == "ours":
                with _env(GENOCTX_HYBRID_LOOPS=loops):
                    o, _ = hybrid_attn(*x, block_size=bs, causal=causal, extra_blocks=extra,
                                       initial_state=s0, output_final_state=True)
            elif kind == "lowp":
                g = x[3][..., None]
                o = g * local_lowp(*x[:3], bs, causal, extra) + (1 - g) * linear_lowp(
                    *x[:3], causal, s0, bs)[0]
            else:
                o, _ = hybrid_attn_reference(*x, block_size=bs, causal=causal, extra_blocks=extra,
                                             initial_state=s0, output_final_state=True)
            results.append([o] + grads(o, x + list(s0 or (None, None)), do.to(o.dtype)))
        case = (f"B{B} T{T} H{H} D{D} bs{bs} {'causal' if causal else 'bidir'} extra{nx}"
                f"{' +state' if init else ''}{' two loops' if loops == 'two' else ''}")
        record_check("hybrid_attn", case, ["o", "dq", "dk", "dv", "dgate", "dS0", "dz0"], *results)


def check_block_topk(quick: bool) -> None:
    from genoctx.kernels.block_score.block_score import block_topk
    from genoctx.kernels.block_score.reference import block_topk_reference
    cases = [(1, 65536, 4, 64, 512, 8, True, None), (2, 30001, 2, 64, 128, 6, False, 16),
             (1, 131072, 4, 64, 64, 16, True, 64)]
    if quick:
        cases = cases[:2]
    if SMOKE:
        cases = [(1, 1000, 2, 32, 64, 4, True, None), (1, 700, 1, 32, 32, 3, False, 8)]
    for B, T, H, D, bs, K, causal, W in cases:
        NB = (T + bs - 1) // bs
        nsel = torch.randint(0, K + 1, (B, H, NB), device=DEV)
        for dt in dict.fromkeys((torch.float32, LOWP)):
            q, k, _ = _rand_qkv(B, T, H, D, dtype=dt)
            kw = dict(block_size=bs, top_k=K, causal=causal, window_blocks=W, num_selected=nsel)
            i1, s1 = block_topk(q, k, **kw)
            i2, s2 = block_topk_reference(q, k, **kw)
            match = 1.0 - (i1 != i2).sum().item() / i1.numel()
            fin = torch.isfinite(s2)
            serr = rel_rms(s1[fin], s2[fin]) if fin.any() else 0.0
            ok = (match == 1.0 if dt == torch.float32 else match >= 0.999) and serr < 1e-5
            case = (f"B{B} T{T} H{H} bs{bs} K{K} W{W} {'causal' if causal else 'bidir'} "
                    f"{str(dt)[6:]}")
            RESULTS["checks"].append(dict(kernel="block_topk", case=case, quantity="indices",
                                          err=1 - match, torch_bf16_err=float("nan"),
                                          bound=0.0 if dt == torch.float32 else 1e-3, ok=ok,
                                          score_err=serr))
            print(f"   {'ok ' if ok else 'BAD'} block_topk   {case:38s} index match {match:.6f} "
                  f"score err {serr:.1e}", flush=True)


def check_moe(quick: bool) -> None:
    from genoctx.kernels.moe import moe as M
    from genoctx.kernels.moe import reference as R
    sizes = [(4096, 4, 16, 256, 512), (3001, 2, 7, 128, 96)]
    for N, K, E, D, Fd in ([(200, 2, 4, 32, 48), (101, 3, 5, 16, 32)] if SMOKE else sizes):
        x = torch.randn(N, D, device=DEV, dtype=LOWP)
        w = torch.randn(E, D, Fd, device=DEV, dtype=LOWP) / D ** 0.5
        idx = torch.rand(N, E, device=DEV).topk(K, -1).indices
        tw = torch.rand(N, K, device=DEV).softmax(-1)
        dy = torch.randn(N, Fd, device=DEV, dtype=LOWP)
        xp, order, counts = M.moe_permute(x, idx, E)
        xp2, order2, counts2 = R.moe_permute(x, idx, E)
        exact = torch.equal(xp, xp2) and torch.equal(order, order2) and torch.equal(counts, counts2)
        RESULTS["checks"].append(dict(kernel="moe_permute", case=f"N{N} K{K} E{E}",
                                      quantity="exact", err=0.0 if exact else 1.0, ok=exact,
                                      torch_bf16_err=float("nan"), bound=0.0))
        for impl in ("auto", "triton"):
            try:
                _check_moe_impl(M, R, impl, x, w, idx, tw, dy, E)
            except Exception as exc:  # noqa: BLE001
                RESULTS["failures"].append({"section": f"check_moe impl={impl}",
                                            "error": f"{type(exc).__name__}: {exc}",
                                            "traceback": traceback.format_exc()[-3000:]})
                print(traceback.format_exc(), flush=True)


def _check_moe_impl(M, R, impl, x, w, idx, tw, dy, E):
    """permute -> grouped_mm(impl) -> unpermute, output and gradients of x, w, topk_weight."""
    (N, K), (D, Fd) = idx.shape, w.shape[1:]
    results = []
    for kind in ("ours", "lowp", "ref"):
        dt = torch.float32 if kind == "ref" else LOWP
        xs, ws, tws = leaf(x, dt), leaf(w, dt), leaf(tw)
        if kind == "ours":
            a, o_, c_ = M.moe_permute(xs, idx, E)
            y = M.moe_unpermute(M.grouped_mm(a, ws, c_, impl=impl), o_, tws)
        else:
            a, o_, c_ = R.moe_permute(xs, idx, E)
            y = R.moe_unpermute(R.grouped_mm_reference(a, ws, c_), o_, tws)
        results.append([y] + grads(y, [xs, ws, tws], dy.to(y.dtype)))
    record_check("moe", f"N{N} K{K} E{E} D{D} F{Fd} gmm={impl}", ["y", "dx", "dw", "dtopk_w"],
                 *results)


# ------------------------------------------------------------------------------------------------
# 2. timings
# ------------------------------------------------------------------------------------------------

def bench(fn, ms_budget: float = 150.0) -> float:
    if SMOKE:  # one call, timed on the clock: the code path is what is checked
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    import triton.testing
    return float(triton.testing.do_bench(fn, warmup=25, rep=ms_budget, return_mode="median"))


def time_entry(group, name, T, fwd, inputs, *, flops_fwd, bytes_fwd, bytes_bwd, backward=True):
    """Median ms of forward and forward+backward, peak GiB of forward+backward, one table row."""
    row = dict(group=group, impl=name, T=T)
    try:
        _sync()
        row["fwd_ms"] = bench(lambda: fwd())
        if backward:
            out0 = fwd()
            out0 = out0[0] if isinstance(out0, tuple) else out0
            do = torch.randn_like(out0)
            del out0

            def step():
                o = fwd()
                o = o[0] if isinstance(o, tuple) else o
                torch.autograd.grad(o, inputs, do)
            row["fwdbwd_ms"] = bench(step, 300.0)
            _sync()
            _free()
            base = _allocated_gib()
            _reset_peak()
            if not SMOKE:  # no peak memory to read on the CPU
                step()
        else:
            _sync()
            _free()
            base = _allocated_gib()
            _reset_peak()
            fwd()
        _sync()
        row["peak_gib"] = _peak_gib()
        # what the op itself needs: the peak above the tensors alive before it ran (the inputs,
        # grad_out, a FlexAttention block mask); the issue's fla figure (26 GiB) counts this way
        row["extra_gib"] = row["peak_gib"] - base
        row["tflops_fwd"] = flops_fwd / row["fwd_ms"] / 1e9
        row["gbs_fwd"] = bytes_fwd / row["fwd_ms"] / 1e6
        if "fwdbwd_ms" in row:
            row["tflops_fwdbwd"] = 3.5 * flops_fwd / row["fwdbwd_ms"] / 1e9
            row["gbs_fwdbwd"] = (bytes_fwd + bytes_bwd) / row["fwdbwd_ms"] / 1e6
    except Exception as exc:  # noqa: BLE001
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
        RESULTS["failures"].append({"section": f"time {group}/{name} T={T}", "error": row["error"],
                                    "traceback": traceback.format_exc()[-3000:]})
    RESULTS["timings"].append(row)
    print("   " + _fmt_row(row), flush=True)
    _free()
    _save()


def _fmt_row(r) -> str:
    def f(key, spec):
        return format(r[key], spec) if key in r else "-"
    return (f"{r['group']:8s} {r['impl']:28s} T={r['T']:>8d} fwd {f('fwd_ms', '8.2f')} ms  "
            f"fwd+bwd {f('fwdbwd_ms', '8.2f')} ms  peak {f('peak_gib', '6.2f')} GiB "
            f"{r.get('error', '')}")


def _attn_inputs(T, H=None, D=64):
    q, k, v = (torch.randn(1, T, H or HEADS, D, device=DEV, dtype=LOWP).requires_grad_()
               for _ in range(3))
    return q, k, v


def wanted(name: str, only: list[str] | None) -> bool:
    """A section or row runs when no filter is given or one filter is a substring of its name."""
    return only is None or any(o in name for o in only)


def time_attention(T: int, only: list[str] | None, with_flex: bool) -> None:
    """Ours and the alternatives at B1 H16 D64 bf16 (one head in fp32 on the CPU: --smoke)."""
    H, D, BS = HEADS, 64, 512
    q, k, v = _attn_inputs(T, H, D)
    io = 2 * T * H * D  # bytes of one [1, T, 16, 64] bf16 tensor
    keys_local = 1.5 * BS  # causal halo: previous block plus half of the own block on average
    fl_local = 4 * H * T * keys_local * D
    C = 64
    fl_lin = 2 * H * T * (C * D + C * D + 3 * D * D)
    rows = []

    def want(name):
        return wanted(name, only) or wanted("time_attention", only)

    if want("local_attn"):
        from genoctx.kernels.local_attn.local_attn import local_attn
        rows.append(("local", "local_attn (ours, bs512)",
                     lambda: local_attn(q, k, v, block_size=BS), fl_local, 4 * io, 7 * io))
    if want("linear_attn"):
        from genoctx.kernels.linear_attn.linear_attn import linear_attn
        rows.append(("linear", "linear_attn (ours, C64)", lambda: linear_attn(q, k, v)[0],
                     fl_lin, 4 * io, 7 * io))
    hybrids = want("hybrid_attn") or want("hybrid_split")
    if hybrids:  # one gate for the fused kernel and the split
        gate = torch.rand(1, T, H, device=DEV, dtype=LOWP).requires_grad_()
    if want("hybrid_attn"):
        from genoctx.kernels.hybrid.hybrid import hybrid_attn
        rows.append(("hybrid", "hybrid_attn (ours, bs512)",
                     lambda: hybrid_attn(q, k, v, gate, block_size=BS)[0],
                     fl_local + fl_lin, 4 * io, 7 * io))

        def two_loops():
            with _env(GENOCTX_HYBRID_LOOPS="two"):
                return hybrid_attn(q, k, v, gate, block_size=BS)[0]
        rows.append(("hybrid_two", "hybrid_attn (ours, bs512, two loops)", two_loops,
                     fl_local + fl_lin, 4 * io, 7 * io))
    if hybrids:
        from genoctx.kernels.linear_attn.linear_attn import linear_attn as lin_op
        from genoctx.kernels.local_attn.local_attn import local_attn as loc_op
        from genoctx.model.attention import hybrid_from_branches
        split = hybrid_from_branches(loc_op, lin_op)
        rows.append(("hybrid_split", "hybrid split (ours: local + linear + lerp)",
                     lambda: split(q, k, v, gate, block_size=BS)[0], fl_local + fl_lin,
                     4 * io, 7 * io))
    if want("alternatives") or want("fla"):
        rows += _alternatives(q, k, v, T, BS, io, fl_lin, only)
    if with_flex and (want("alternatives") or want("flex")):
        # each block mask (~1 GiB at 1M) is built just before its row and freed after it, so
        # that none is alive while another row's peak memory is read
        rows = itertools.chain(rows, _flex_rows(*(x.transpose(1, 2) for x in (q, k, v)), T, BS,
                                                io))
    for group, name, fn, fl, bf, bb in rows:
        inputs = [q, k, v] + ([gate] if group.startswith("hybrid") else [])
        # FlexAttention has no backward on the CPU (--smoke): its forward is checked there
        backward = not (SMOKE and name.startswith("FlexAttention"))
        time_entry(group, name, T, fn, inputs, flops_fwd=fl, bytes_fwd=bf, bytes_bwd=bb,
                   backward=backward)
        del fn


def _alternatives(q, k, v, T, BS, io, fl_lin, only):
    H, D = q.shape[2], q.shape[3]
    rows = []
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    if wanted("alternatives", only) or wanted("time_attention", only):
        if T <= 131072:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            def dense():
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
            rows.append(("alt", "SDPA flash dense causal", dense, 2 * H * T * T * D, 4 * io,
                         7 * io))

        def blockdiag():
            NB = T // BS
            qb, kb, vb = (x.reshape(NB, BS, H, D).transpose(1, 2) for x in (q, k, v))
            return F.scaled_dot_product_attention(qb, kb, vb, is_causal=True)
        rows.append(("alt", f"SDPA block-diagonal {BS}", blockdiag, 4 * H * T * BS / 2 * D,
                     4 * io, 7 * io))
    try:
        from fla.ops.linear_attn import chunk_linear_attn

        def fla_fn():
            fq, fk = F.elu(q) + 1, F.elu(k) + 1
            return chunk_linear_attn(fq, fk, v, scale=1.0, normalize=True)[0]

        def fla_core():
            return chunk_linear_attn(q, k, v, normalize=True)[0]
        rows.append(("alt", "fla chunk_linear_attn (+elu+1)", fla_fn, fl_lin, 4 * io, 7 * io))
        rows.append(("alt", "fla chunk_linear_attn (bare)", fla_core, fl_lin, 4 * io, 7 * io))
    except ImportError as exc:
        RESULTS["notes"].append(f"fla not importable ({exc}); its rows are skipped")
    return rows


def _flex_rows(qt, kt, vt, T, BS, io):
    """FlexAttention rows; block masks are built from their tile structure (no T x T evaluation)."""
    from torch.nn.attention.flex_attention import flex_attention
    flex = torch.compile(flex_attention, dynamic=False)
    if SMOKE:  # eager, and without gradients: FlexAttention has no backward on the CPU
        flex = flex_attention
        qt, kt, vt = (x.detach() for x in (qt, kt, vt))
    H, D = qt.shape[1], qt.shape[3]
    TILE, per, win = 128, BS // 128, 1024 // 128
    m = torch.arange(T // TILE, device=DEV)[:, None]
    ar = torch.arange(2 * per, device=DEV)[None, :]

    def blockdiag_mask(b, h, qi, ki):
        return (qi // BS == ki // BS) & (ki <= qi)

    def halo_mask(b, h, qi, ki):
        return (qi // BS - ki // BS <= 1) & (ki <= qi)

    def swa_mask(b, h, qi, ki):
        return (qi - ki < 1024) & (ki <= qi)

    # (name, mask_mod, full kv tiles of q tile m, partial kv tiles of m, useful FLOPs)
    own = (m // per) * per + ar[:, :per]
    prev_own = (m // per - 1) * per + ar
    swa_full = m - 1 - torch.arange(win - 1, device=DEV)[None, :]
    specs = [("FlexAttention block-512", blockdiag_mask, own, m, 4 * H * T * BS / 2 * D),
             ("FlexAttention local halo 512", halo_mask, prev_own, m, 4 * H * T * 1.5 * BS * D),
             ("FlexAttention sliding-window 1024", swa_mask, swa_full,
              torch.cat([m - win, m], 1), 4 * H * T * 1024 * D)]
    for name, mask_mod, full, part, fl in specs:  # a generator: one mask alive at a time
        bm = _tile_block_mask(full, (full >= 0) & (full < m), part, part >= 0, mask_mod, T, TILE)
        yield ("alt", name, (lambda bm=bm: flex(qt, kt, vt, block_mask=bm)), fl, 4 * io, 7 * io)
        del bm
        _free()


def _tile_block_mask(full, full_ok, part, part_ok, mask_mod, T, TILE):
    """A BlockMask from per-q-tile candidate kv tiles ``[NT, W]`` and their validity."""
    from torch.nn.attention.flex_attention import BlockMask
    NT = T // TILE

    def pack(cand, ok):  # BlockMask wants [.., NT, NT] indices: listed tiles first, ascending
        cand, ok = torch.broadcast_tensors(cand, ok)
        rows = torch.arange(NT, device=cand.device)[:, None].expand_as(cand)
        dense = torch.zeros(NT, NT, dtype=torch.int32, device=cand.device)
        dense[rows[ok], cand[ok]] = 1
        idx = torch.argsort(dense, dim=-1, descending=True, stable=True)
        return dense.sum(-1).int()[None, None], idx.int().contiguous()[None, None]

    pn, pi = pack(part, part_ok)
    fn, fi = pack(full, full_ok)
    return BlockMask.from_kv_blocks(pn, pi, fn, fi, BLOCK_SIZE=TILE, mask_mod=mask_mod,
                                    seq_lengths=(T, T))


def sweep_linear_attn(T: int) -> None:
    """Chunk size and launch settings of linear_attn at B1 H16 D64 (the defaults come first)."""
    LA = importlib.import_module("genoctx.kernels.linear_attn.linear_attn")
    q, k, v = _attn_inputs(T)
    io = 2 * T * 16 * 64
    sweep = [(64, {}), (64, {"bwd": {"num_stages": 3}}), (64, {"bwd": {"num_warps": 8}}),
             (64, {"fwd": {"num_stages": 2}}), (64, {"programs_per_sm": 16}),
             (64, {"programs_per_sm": 4}), (32, {}), (128, {})]
    for C, tune in sweep:
        LA.TUNE.clear()
        LA.TUNE.update(tune)
        fl = 2 * 16 * T * (2 * C * 64 + 3 * 64 * 64)
        label = " ".join(f"{k}={v}" for k, v in tune.items()) or "defaults"
        time_entry("sweep", f"linear_attn C{C} {label}", T,
                   lambda C=C: LA.linear_attn(q, k, v, chunk_size=C)[0], [q, k, v], flops_fwd=fl,
                   bytes_fwd=4 * io, bytes_bwd=7 * io)
    LA.TUNE.clear()



def sweep_hybrid(T: int) -> None:
    """Tiles of the hybrid's two-loop kernels (GENOCTX_HYBRID_LOOPS=two; forward and dk/dv)
    at B1 H16 D64 bf16, block 512, causal: their defaults come first. Chosen so far by register
    use only (benchmarks/kernel_resources.py); this times them."""
    from genoctx.kernels._triton_utils import force_tiles
    from genoctx.kernels.hybrid.hybrid import hybrid_attn
    q, k, v = _attn_inputs(T)
    gate = torch.rand(1, T, HEADS, device=DEV, dtype=LOWP).requires_grad_()
    io = 2 * T * HEADS * 64
    fl = 4 * HEADS * T * 1.5 * 512 * 64 + 2 * HEADS * T * (2 * 64 * 64 + 3 * 64 * 64)
    fwd = [(128, 64, 8, 3), (128, 64, 8, 2), (64, 64, 4, 3), (128, 32, 8, 3)]
    dkdv = [(64, 64, 8, 2), (64, 64, 4, 3), (64, 64, 4, 2), (64, 128, 8, 2)]
    configs = [(f, dkdv[0]) for f in fwd] + [(fwd[0], d) for d in dkdv[1:]]
    for (fm, fn_, fw, fs), (dm, dn, dw, ds) in configs:
        def run(fm=fm, fn_=fn_, fw=fw, fs=fs, dm=dm, dn=dn, dw=dw, ds=ds):
            with _env(GENOCTX_HYBRID_LOOPS="two"), \
                    force_tiles("hybrid_fwd2", block_m=fm, block_n=fn_, num_warps=fw,
                                num_stages=fs), \
                    force_tiles("hybrid_bwd_dkdv2", block_m=dm, block_n=dn, num_warps=dw,
                                num_stages=ds):
                return hybrid_attn(q, k, v, gate, block_size=512)[0]
        time_entry("sweep", f"hybrid two loops fwd {fm}x{fn_} w{fw} s{fs}, dk/dv {dm}x{dn} "
                   f"w{dw} s{ds}", T, run, [q, k, v, gate], flops_fwd=fl, bytes_fwd=4 * io,
                   bytes_bwd=7 * io)


def time_block_topk(T: int) -> None:
    from genoctx.kernels.block_score.block_score import block_topk
    from genoctx.kernels.block_score.reference import block_topk_reference
    H, D, BS = HEADS, 64, 512
    q, k, _ = _attn_inputs(T, H, D)
    impls = [("block_topk (ours)", block_topk), ("block_topk_reference (torch)",
                                                 block_topk_reference)]
    with torch.no_grad():
        for name, fn in impls:
            def run(fn=fn):
                return fn(q, k, block_size=BS, top_k=8, window_blocks=64)
            time_entry("topk", name + " bs512 K8 W64", T, run, [],
                       flops_fwd=2 * H * (T / BS) * 128 * D, bytes_fwd=4 * T * H * D,
                       bytes_bwd=0, backward=False)


def time_moe(quick: bool) -> None:
    from genoctx.kernels.moe import moe as M
    from genoctx.kernels.moe import reference as R
    N, K, E, D, Fd = (8192, 4, 64, 1024, 2048) if quick else (32768, 4, 64, 1024, 2048)
    if SMOKE:
        N, K, E, D, Fd = 256, 2, 4, 32, 48
    x = torch.randn(N, D, device=DEV, dtype=LOWP).requires_grad_()
    w = (torch.randn(E, D, Fd, device=DEV, dtype=LOWP) / D ** 0.5).requires_grad_()
    idx = torch.rand(N, E, device=DEV).topk(K, -1).indices
    tw = torch.rand(N, K, device=DEV).softmax(-1).requires_grad_()
    Mrows = N * K
    xp, order, counts = M.moe_permute(x.detach(), idx, E)
    xp = xp.detach().requires_grad_()
    yp = torch.randn(Mrows, Fd, device=DEV, dtype=LOWP).requires_grad_()
    fl_gmm = 2 * Mrows * D * Fd
    tag = f"N{N} K{K} E{E} D{D} F{Fd}"
    gmm = [("grouped_mm torch._grouped_mm", lambda: M.grouped_mm(xp, w, counts, impl="torch")),
           ("grouped_mm triton", lambda: M.grouped_mm(xp, w, counts, impl="triton")),
           ("grouped_mm loop (reference)", lambda: R.grouped_mm_reference(xp, w, counts))]
    for name, fn in gmm:
        time_entry("moe", f"{name} {tag}", Mrows, fn, [xp, w], flops_fwd=fl_gmm,
                   bytes_fwd=2 * (Mrows * D + E * D * Fd + Mrows * Fd), bytes_bwd=0)
    byt = 2 * Mrows * D * 2
    for name, fn in [("moe_permute (ours)", lambda: M.moe_permute(x, idx, E)[0]),
                     ("moe_permute (reference)", lambda: R.moe_permute(x, idx, E)[0])]:
        time_entry("moe", f"{name} {tag}", Mrows, fn, [x], flops_fwd=0, bytes_fwd=byt,
                   bytes_bwd=byt)
    byt = 2 * (Mrows * Fd + N * Fd)
    for name, fn in [("moe_unpermute (ours)", lambda: M.moe_unpermute(yp, order, tw)),
                     ("moe_unpermute (reference)", lambda: R.moe_unpermute(yp, order, tw))]:
        time_entry("moe", f"{name} {tag}", Mrows, fn, [yp, tw], flops_fwd=2 * Mrows * Fd,
                   bytes_fwd=byt, bytes_bwd=2 * byt)


# ------------------------------------------------------------------------------------------------
# 3. report
# ------------------------------------------------------------------------------------------------

TARGETS = {  # (fwd ms, fwd+bwd ms, extra GiB) at T = 1M
    "local_attn (ours, bs512)": (5.5, 25.0, None),
    "linear_attn (ours, C64)": (8.0, 29.0, 16.0),
    "hybrid_attn (ours, bs512)": (10.0, 45.0, 20.0),
    "hybrid split (ours: local + linear + lerp)": (10.0, 45.0, 20.0),
    "hybrid_attn (ours, bs512, two loops)": (10.0, 45.0, 20.0),
}


def _genome_records(path: Path) -> list[tuple[str, bytes]]:
    """(name, bases) of a FASTA or GenBank file (gzip allowed)."""
    from genoctx.io.annotation import annotation_format, read_sequences_genbank

    try:
        genbank = annotation_format(path) == "genbank"
    except Exception:  # noqa: BLE001 - not an annotation file: read it as FASTA
        genbank = False
    if genbank:
        return [(c, s) for c, s in read_sequences_genbank(path) if len(s)]
    from genoctx.io.fasta import iter_records

    return [(c, s) for c, s in iter_records(path) if len(s)]


def _genome_path(path: Path | None, section: str) -> Path | None:
    """``path``, else E. coli K-12 from the data root; None (and a note) when there is neither."""
    if path is None:
        from genoctx.io.dataroot import resolve_data_root

        try:
            path = resolve_data_root(None) / ECOLI
        except Exception:  # noqa: BLE001 - no data root on this machine
            path = None
    if path is None or not Path(path).is_file():
        RESULTS["notes"].append(f"{section} skipped: no genome (give --annotate-fasta, or a "
                                f"data root with {ECOLI})")
        return None
    return Path(path)


def annotate_genome(path: Path | None, device: str = "cuda") -> None:
    """Time ``genoctx annotate`` (default outputs: GFF3, BED, bedGraph tracks, so the model runs)
    on a whole genome, end to end and by part; rows go to RESULTS["annotate"]."""
    import tempfile

    from genoctx.cli.common import available_cores
    from genoctx.heads.annotate import (annotate_fasta, call_bacterial, decoder_params,
                                        write_annotation)
    from genoctx.heads.annotation import load_annotation_model, predict_probs
    from genoctx.heads.decoder import call_genes_multi
    from genoctx.heads.rna_genes import available, find_rna_genes
    from genoctx.model import checkpoint
    from genoctx.tokenize import nucleotide as nt

    path = _genome_path(path, "time_annotate")
    if path is None:
        return
    records = _genome_records(Path(path))
    bases = sum(len(s) for _, s in records)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def timed(step, fn):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        RESULTS["annotate"].append({"genome": Path(path).name, "Mb": bases / 1e6, "step": step,
                                    "s": time.perf_counter() - t0})
        print(f"   annotate {step}: {RESULTS['annotate'][-1]['s']:.2f} s", flush=True)
        return out

    with tempfile.TemporaryDirectory() as tmp:
        fasta = Path(tmp) / "genome.fa"
        with open(fasta, "w") as fh:
            for name, seq in records:
                fh.write(f">{name}\n{seq.decode()}\n")
        workers = available_cores()
        # the first call compiles the model's Triton kernels (cached on disk for later processes)
        timed(f"annotate_fasta, first call (model on {device}, Triton compiles its kernels)",
              lambda: annotate_fasta(fasta, device=device, quiet=True, workers=workers))
        result = timed(f"annotate_fasta, kernels compiled ({workers} processes, genes "
                       "decoded beside the model)",
                       lambda: annotate_fasta(fasta, device=device, quiet=True, workers=workers,
                                              background_genes=True))
        timed(f"annotate_fasta, kernels compiled ({workers} processes, genes after the model)",
              lambda: annotate_fasta(fasta, device=device, quiet=True, workers=workers,
                                     background_genes=False))
        timed("write GFF3 + BED + bedGraph (3 tracks)",
              lambda: write_annotation(Path(tmp) / "out", result, ("gff3", "bed", "bedgraph"),
                                       workers=workers))
        backbone, head = load_annotation_model("embedded", device=device)
        timed("model probabilities only (all 17 classes to the host)", lambda: [
            predict_probs(backbone, head, nt.encode(s)) for _, s in records])
        from genoctx.heads.annotate import TRACKS

        timed("model tracks only (summed on the GPU, as annotate takes them)", lambda: [
            predict_probs(backbone, head, nt.encode(s), reduce=list(TRACKS.values()))
            for _, s in records])
        params = decoder_params(checkpoint.resolve_checkpoint("embedded"))
        timed(f"genes + RNA genes as annotate finds them ({workers} processes)",
              lambda: call_bacterial(records, params=params, workers=workers))
        from genoctx.heads import decoder

        loops = "C loops" if decoder._chain is not None else "Python loops: _native.c not built"
        timed(f"gene decoder only (sequence, one process, {loops})",
              lambda: call_genes_multi(records, procedure="auto"))
        if all(available().values()):
            timed("RNA-gene finders only (ARAGORN + barrnap)", lambda: find_rna_genes(records))
        # what a user runs: a fresh process (imports, checkpoint check, kernels from the disk
        # cache), default outputs
        cmd = [sys.executable, "-m", "genoctx", "annotate", str(fasta), "--out",
               str(Path(tmp) / "cli" / "genome"), "--device", device, "--quiet"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
        timed("genoctx annotate in a fresh process (end to end, kernels cached)",
              lambda: subprocess.run(cmd, check=True, env=env))


def train_steps(path: Path | None, device: str = "cuda") -> None:
    """``genoctx train``'s loop (the ``lm`` recipe's model and loss) on the GPU: windows of
    the genome (the same as time_annotate's), the loss of every step and the seconds per step;
    rows go to RESULTS["train"]. The shipped checkpoint's pretraining took 9.5 s per step of
    8 x 1,024 bases on 2 CPU cores (genoctx/weights/README.md)."""
    import csv
    import statistics
    import tempfile

    from genoctx.model.model import GenoCtxModel
    from genoctx.tokenize import nucleotide as nt
    from genoctx.train.corpus import Corpus, Record, WindowSampler
    from genoctx.train.loop import LoopConfig, train_loop

    path = _genome_path(path, "time_train")
    if path is None:
        return
    corpus = Corpus([Record(n, nt.encode(s)) for n, s in _genome_records(Path(path))])
    seq_len, batch, steps = (256, 2, 3) if SMOKE else (8192, 8, 30)
    sampler = WindowSampler(corpus, seq_len, seed=0)
    torch.manual_seed(0)
    model = GenoCtxModel.from_config("tiny", backend="auto").to(device)
    cfg = LoopConfig(steps=steps, lr=3e-3, warmup=5, log_every=1, ckpt_every=steps)

    starts = []  # each step starts after the last one's loss was read (a device sync)

    def step(_: int) -> dict:
        starts.append(time.perf_counter())
        ids, _ = sampler.sample(batch)
        return model.lm_loss(torch.from_numpy(ids).to(device))

    _reset_peak()
    with tempfile.TemporaryDirectory() as tmp:
        train_loop(model, step, sampler, Path(tmp), cfg, title="train", quiet=True)
        with open(Path(tmp) / "loss.csv") as fh:
            rows = list(csv.DictReader(fh))
    # the first steps compile the kernels: the median step after them
    per_step = statistics.median(b - a for a, b in zip(starts[1:], starts[2:]))
    RESULTS["train"].append({"genome": Path(path).name, "seq_len": seq_len, "batch": batch,
                             "steps": steps, "first_loss": float(rows[0]["lm"]),
                             "last_loss": float(rows[-1]["lm"]), "s_per_step": per_step,
                             "bases_per_s": seq_len * batch / max(per_step, 1e-9),
                             "peak_gib": _peak_gib()})
    print(f"   train: {RESULTS['train'][-1]}", flush=True)


def merge_runs(runs: list[dict]) -> dict:
    """One result from several runs, in order: a later run's timing rows replace the earlier
    rows of the same (impl, T); its annotate / train / check rows, when it has any, replace
    the earlier ones; notes and failures are kept from every run and each run's command is
    listed."""
    out = json.loads(json.dumps(runs[0]))
    out["meta"]["runs"] = [dict(r["meta"]) for r in runs]
    for later in runs[1:]:
        fresh = {(r["impl"], r["T"]) for r in later["timings"]}
        out["timings"] = [r for r in out["timings"] if (r["impl"], r["T"]) not in fresh]
        out["timings"] += later["timings"]
        for key in ("annotate", "train", "checks"):
            if later.get(key):
                out[key] = later[key]
        out["failures"] += later["failures"]
        out["notes"] += later["notes"]
    return out


def render(results: dict) -> str:
    md_table = _load_report().md_table
    meta = results["meta"]
    out = ["## gpu_suite — Triton kernels (and annotate, training) on one GPU", "",
           f"Card: **{meta.get('device', '?')}**; torch {meta.get('torch')}, triton "
           f"{meta.get('triton')}, fla {meta.get('fla', 'absent')}. "
           + ("Commands, in order (a later run's rows replace the same rows of an earlier "
              "one): " + "; ".join(f"`{m.get('command')}` ({m.get('date', '')}, "
                                    f"{m.get('wall_s', 0):.0f} s)" for m in meta["runs"])
              + "." if len(meta.get("runs", [])) > 1 else
              f"Command: `{meta.get('command')}` ({meta.get('date', '')}, "
              f"{meta.get('wall_s', 0):.0f} s)."), ""]
    checks = results["checks"]
    bad = [c for c in checks if not c["ok"]]
    out.append(f"### Correctness (bf16, relative RMS vs fp32 reference; bound = 2 x plain-PyTorch "
               f"bf16 error + 1e-3): {len(checks) - len(bad)}/{len(checks)} pass")
    out.append("")
    rows = [[c["kernel"], c["case"], c["quantity"], f"{c['err']:.2e}",
             f"{c['torch_bf16_err']:.2e}", "ok" if c["ok"] else "**FAIL**"] for c in checks]
    out += [md_table(["kernel", "case", "quantity", "error", "torch bf16 error", ""], rows), ""]
    out.append("### Speed (B1 H16 D64 bf16 unless stated; median of CUDA-event timings)")
    out.append("")
    rows = []
    ours = {}
    for r in results["timings"]:
        if "(ours" in r["impl"] and "fwd_ms" in r:
            ours.setdefault(r["T"], []).append(r)
    for r in results["timings"]:
        def g(key, spec):
            return format(r[key], spec) if key in r else "-"
        speed = ""
        if r["group"] == "alt" and "fwd_ms" in r:
            parts = []
            for o in ours.get(r["T"], []):
                if o["group"] in ("local", "linear", "hybrid"):
                    fb = (f"/{r['fwdbwd_ms'] / o['fwdbwd_ms']:.2f}x"
                          if "fwdbwd_ms" in r and "fwdbwd_ms" in o else "")
                    parts.append(f"{o['group']} {r['fwd_ms'] / o['fwd_ms']:.2f}x{fb}")
            speed = ", ".join(parts)
        rows.append([r["impl"], r["T"], g("fwd_ms", ".2f"), g("fwdbwd_ms", ".2f"),
                     g("tflops_fwd", ".1f"), g("gbs_fwd", ".0f"), g("peak_gib", ".2f"),
                     g("extra_gib", ".2f"), speed or r.get("error", "")])
    out += [md_table(["impl", "T", "fwd ms", "fwd+bwd ms", "fwd TFLOP/s", "fwd GB/s", "peak GiB",
                      "extra GiB", "ours faster by (fwd/fwd+bwd)"], rows), ""]
    out.append("TFLOP/s count useful work only (local: 1.5 x 512 keys per query; linear: chunk "
               "products); GB/s counts each input read once and each output written once. Peak "
               "GiB is torch.cuda.max_memory_allocated over one forward+backward, inputs and "
               "grad_out included (8 GiB of them at T = 1M); extra GiB is that peak less what "
               "was allocated before the step (inputs, grad_out, a FlexAttention block mask): "
               "what the op itself needs. 'ours faster by' = alternative time / our time.")
    tgt = []
    for r in results["timings"]:
        if r["impl"] in TARGETS and r["T"] == 1 << 20:
            f_t, fb_t, p_t = TARGETS[r["impl"]]
            tgt.append([r["impl"], f"{r.get('fwd_ms', float('nan')):.2f} / {f_t}",
                        f"{r.get('fwdbwd_ms', float('nan')):.2f} / {fb_t}",
                        (f"{r['extra_gib']:.2f}" if "extra_gib" in r else "-")
                        + f" / {p_t or '-'}",
                        f"{r.get('peak_gib', float('nan')):.2f}"])
    if tgt and any("extra_gib" not in r for r in results["timings"] if "peak_gib" in r):
        out += ["", "Rows with no extra GiB come from a run before the suite recorded it "
                "(2026-12-04); their peak includes every tensor alive at the time."]
    if tgt:
        out += ["", "### Targets at T = 1,048,576 (measured / target)", "",
                md_table(["kernel", "fwd ms", "fwd+bwd ms", "extra GiB", "peak GiB (inputs "
                          "and grad_out included)"], tgt)]
    if results.get("annotate"):
        rows = [[r["genome"], f"{r['Mb']:.2f}", r["step"], f"{r['s']:.2f}"]
                for r in results["annotate"]]
        out += ["", "### genoctx annotate on one genome (target: E. coli in <= 2 s on a GPU)", "",
                md_table(["genome", "Mb", "step", "wall s"], rows)]
    if results.get("train"):
        rows = [[r["genome"], f"{r['batch']} x {r['seq_len']:,}", str(r["steps"]),
                 f"{r['first_loss']:.3f} -> {r['last_loss']:.3f}", f"{r['s_per_step']:.3f}",
                 f"{r['bases_per_s']:,.0f}", f"{r['peak_gib']:.2f}"] for r in results["train"]]
        out += ["", "### Training steps (the lm recipe's model and loss; CPU: 9.5 s per 8 x 1,024)",
                "", md_table(["genome", "batch", "steps", "lm loss", "s/step", "bases/s",
                              "peak GiB"], rows)]
    if results["failures"]:
        out += ["", "### Failures", ""]
        out += [f"- {f['section']}: `{f['error'][:200]}`" for f in results["failures"]]
    if results.get("notes"):
        out += [""] + [f"- note: {n}" for n in results["notes"]]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="T = 16,384 and 131,072; fewer cases")
    ap.add_argument("--only", help="comma-separated filters; run only sections/rows whose name "
                                   "contains one (linear_attn, local_attn, hybrid_attn, "
                                   "block_topk, moe, alternatives, fla, sweep, check, time)")
    ap.add_argument("--sweep", action="store_true",
                    help="also sweep linear_attn's chunk size and launch settings and the hybrid's "
                         "two-loop tiles at the largest T")
    ap.add_argument("--T", help="comma-separated sequence lengths of the timings (default "
                                "131072,1048576; FlexAttention runs at the largest)")
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    ap.add_argument("--from-json", help="render saved gpu_suite.json files (comma-separated; a "
                                        "later run's rows replace the same rows of an earlier "
                                        "one) into docs and exit")
    ap.add_argument("--smoke", action="store_true",
                    help="no GPU: run every section on the CPU (Triton interpreter, fp32, tiny "
                         "shapes) to check the suite's own code; writes no docs")
    ap.add_argument("--app", action="store_true",
                    help="also time genoctx annotate on a genome and 30 training steps "
                         "(time_annotate, time_train: ~3-4 more minutes)")
    ap.add_argument("--annotate-fasta", type=Path, default=None,
                    help="genome for time_annotate (FASTA or GenBank; default: E. coli K-12 "
                         "from the data root)")
    args = ap.parse_args(argv)
    write_section = _load_report().write_section
    if args.from_json:
        runs = [json.loads(Path(f).read_text()) for f in args.from_json.split(",")]
        write_section("gpu_suite", render(merge_runs(runs)))
        return 0
    if args.smoke != SMOKE:  # SMOKE is read from sys.argv at import, before triton loads
        print("--smoke must be given on the command line", file=sys.stderr)
        return 2
    if not SMOKE and not torch.cuda.is_available():
        print("gpu_suite needs a CUDA GPU (--smoke runs its code on the CPU)", file=sys.stderr)
        return 2
    import triton
    t_start = time.time()
    meta = RESULTS["meta"]
    card = ("CPU, --smoke (Triton interpreter, fp32): not a measurement" if SMOKE
            else torch.cuda.get_device_name(0))
    meta.update(device=card, torch=torch.__version__,
                triton=triton.__version__, date=time.strftime("%Y-%m-%d %H:%M"),
                command="python benchmarks/gpu_suite.py "
                + " ".join(sys.argv[1:] if argv is None else argv))
    try:
        import fla
        meta["fla"] = getattr(fla, "__version__", "?")
    except ImportError:
        pass
    print(meta, flush=True)
    only = args.only.split(",") if args.only else None
    Ts = [16384, 131072] if args.quick else [131072, 1 << 20]
    if args.T:
        Ts = sorted(int(t) for t in args.T.split(","))
    if SMOKE:
        Ts = [1024]
    os.environ["GENOCTX_KERNEL_DEBUG"] = "1"
    torch.manual_seed(0)
    checks = [check_linear_attn, check_local_attn, check_hybrid_attn, check_block_topk, check_moe]
    for name, fn in ((f.__name__, f) for f in checks):
        if wanted(name, only):
            run_section(name, fn, args.quick)
    os.environ.pop("GENOCTX_KERNEL_DEBUG", None)
    for T in Ts:
        names = ("local_attn", "linear_attn", "hybrid_attn", "alternatives", "fla", "time",
                 "time_attention", "hybrid_split", "flex")
        if any(wanted(n, only) for n in names):
            run_section(f"time_attention T={T}", time_attention, T, only, T == Ts[-1])
        if wanted("time_block_topk", only):
            run_section(f"time_block_topk T={T}", time_block_topk, T)
    if wanted("time_moe", only):
        run_section("time_moe", time_moe, args.quick)
    if args.sweep:
        if wanted("sweep_linear_attn", only):
            run_section("sweep_linear_attn", sweep_linear_attn, Ts[-1])
        if wanted("sweep_hybrid", only):
            run_section("sweep_hybrid", sweep_hybrid, Ts[-1])
    # the app sections (annotate, training) run with --app, when --only names them, or --smoke
    app = args.app or SMOKE or only is not None
    if app and wanted("time_annotate", only):
        run_section("time_annotate", annotate_genome,
                    args.annotate_fasta or (EXAMPLE if SMOKE else None), DEV)
    if app and wanted("time_train", only):
        run_section("time_train", train_steps, args.annotate_fasta or (EXAMPLE if SMOKE else None),
                    DEV)
    meta["wall_s"] = time.time() - t_start
    text = render(RESULTS)
    print(text)
    if OUT is not None:
        (OUT / "gpu_suite.md").write_text(text)
    _save()
    if not args.no_doc and not SMOKE:
        write_section("gpu_suite", text)
    if SMOKE and RESULTS["failures"]:
        return 1
    return 1 if any(not c["ok"] for c in RESULTS["checks"]) else 0


if __name__ == "__main__":
    sys.exit(main())
