"""Registers, spills and instruction mix of the attention kernels, compiled for Hopper and
Blackwell here, without a GPU.

Triton compiles a kernel ahead of time for any NVIDIA target (``GPUTarget("cuda", 90)`` for
H100/H200, ``("cuda", 100)`` for B200) with the ptxas it ships. This script compiles each attention
kernel as genoctx launches it for the issue's benchmark shape (B1 H16 D64 bf16, block 512,
T = 1,048,576). That means its tile config (``kernels/_triton_utils.py``) and the specialisation
the JIT would see: 16-byte-aligned pointers, T / H / NB / block size multiples of 16, integer
arguments equal to 1 folded in. ``cuobjdump`` (also in the triton wheel) then reads the cubin:

* registers per thread (255 is the cap);
* spill instructions (``LDL``/``STL``, static count: a spill inside a loop runs every
  iteration);
* shared memory;
* tensor-core instructions (``HGMMA`` = Hopper wgmma, ``UTC*MMA`` = Blackwell tcgen05, ``HMMA``
  = the older mma.sync);
* ``MUFU.EX2`` (the exponentials);
* async copies (``LDGSTS`` = cp.async, ``UTMALDG`` = TMA).

None of this is a speed measurement. It shows what a GPU run cannot: where a kernel spills, and
that every kernel compiles for Blackwell with its native MMA. This Triton is the one installed
here (the H200 image has 3.6, which may allocate differently).

Run: ``python benchmarks/kernel_resources.py [--targets 90,100] [--no-write]`` (writes the
``kernel-resources`` section of docs/benchmarks.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.pop("TRITON_INTERPRET", None)  # compile for a GPU, not the interpreter

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

T, H, D, BS = 1 << 20, 16, 64, 512
NB = T // BS
# integer arguments that are multiples of 16 at this shape (the JIT marks them so)
DIVISIBLE = {"T", "H", "NB", "BS", "D", "E", "F", "sb_S", "ss_S", "sb_z", "ss_z", "s_we", "s_wd",
             "s_wf"}


def _specs():
    """(name, variant, kernel, tile kind or launch config, pointer dtypes, float args,
    constants, ints equal to 1)."""
    import importlib

    # (the packages export functions named like their modules)
    hyb = importlib.import_module("genoctx.kernels.hybrid.hybrid")
    loc = importlib.import_module("genoctx.kernels.local_attn.local_attn")

    bf, f32, i32 = "*bf16", "*fp32", "*i32"
    qkv = {"Q": bf, "K": bf, "V": bf}
    common = dict(HEAD_D=D, BLOCK_D=D, PREC="tf32")
    out = []
    for causal in (True, False):
        mode = "causal" if causal else "bidir"
        out += [
            ("local_attn fwd", mode, loc.local_attn_fwd_kernel, "local_fwd",
             {**qkv, "O": bf, "LSE": f32, "EXTRA": i32}, {"qk_scale"},
             dict(common, CAUSAL=causal, HAS_EXTRA=False, STORE_LSE=True), ()),
            ("local_attn dq", mode, loc.local_attn_bwd_kernel_dq, "local_bwd_dq",
             {**qkv, "DO": bf, "DQ": bf, "LSE": f32, "DELTA": f32, "EXTRA": i32},
             {"sm_scale", "qk_scale"}, dict(common, CAUSAL=causal, HAS_EXTRA=False), ()),
            ("local_attn dk/dv", mode, loc.local_attn_bwd_kernel_dkdv, "local_bwd_dkdv",
             {**qkv, "DO": bf, "DK": bf, "DV": bf, "LSE": f32, "DELTA": f32, "REV_OFF": i32,
              "REV_IDX": i32}, {"sm_scale", "qk_scale"},
             dict(common, CAUSAL=causal, HAS_EXTRA=False), ()),
        ]
    hyb_fwd_ptrs = {**qkv, "GATE": bf, "O": bf, "ODIFF": bf, "LSE": f32, "DEN": f32,
                    "S_BUF": f32, "Z_BUF": f32, "EXTRA": i32}
    for two in (False, True):
        out.append(("hybrid_attn fwd", "causal, " + ("two loops" if two else "one loop"),
                    hyb.hybrid_fwd_kernel, "hybrid_fwd2" if two else "hybrid_fwd", hyb_fwd_ptrs,
                    {"qk_scale", "eps"},
                    dict(common, CAUSAL=True, HAS_EXTRA=True, STORE_AUX=True, STATE_PREC="tf32",
                         TWO_LOOPS=two), ("STATE_STEP",)))
    rows = {"LSE": f32, "DELTA": f32, "DDEN": f32, "CN": f32, "GT": f32}
    out += [
        ("hybrid_attn fwd", "bidir", hyb.hybrid_fwd_kernel, "hybrid_fwd", hyb_fwd_ptrs,
         {"qk_scale", "eps"}, dict(common, CAUSAL=False, HAS_EXTRA=False, STORE_AUX=True,
                                   STATE_PREC="tf32", TWO_LOOPS=False), ()),
        ("hybrid_attn state", "causal", hyb.hybrid_chunk_state_kernel, "hybrid_state",
         {"K": bf, "V": bf, "S_BUF": f32, "Z_BUF": f32}, set(),
         dict(HEAD_D=D, BLOCK_D=D, PREC="tf32"), ("SLOT0", "SLOT_STEP")),
        ("hybrid_attn dq", "causal", hyb.hybrid_bwd_kernel_dq, "hybrid_bwd_dq",
         {**qkv, "DO": bf, "DQ": bf, **rows, "S_BUF": f32, "Z_BUF": f32, "EXTRA": i32},
         {"sm_scale", "qk_scale"},
         dict(common, CAUSAL=True, HAS_EXTRA=True, STATE_PREC="tf32"), ("STATE_STEP",)),
    ]
    for two in (False, True):
        out.append(("hybrid_attn dk/dv", "causal, " + ("two loops" if two else "one loop"),
                    hyb.hybrid_bwd_kernel_dkdv, "hybrid_bwd_dkdv2" if two else "hybrid_bwd_dkdv",
                    {**qkv, "DO": bf, "DK": bf, "DV": bf, **rows, "DS_BUF": f32, "DZ_BUF": f32,
                     "REV_OFF": i32, "REV_IDX": i32}, {"sm_scale", "qk_scale"},
                    dict(common, CAUSAL=True, HAS_EXTRA=True, STATE_PREC="tf32", TWO_LOOPS=two),
                    ()))
    # linear attention (chunk 64) and the MoE grouped matmul, with their own launch configs
    import torch

    lin = importlib.import_module("genoctx.kernels.linear_attn.linear_attn")
    moe = importlib.import_module("genoctx.kernels.moe.moe")
    lin_ptr = {"q": bf, "k": bf, "v": bf, "o": bf, "do": bf, "dq": bf, "dk": bf, "dv": bf,
               "rden": f32, "gden": f32, "S_start": f32, "z_start": f32, "seg_S": f32,
               "seg_z": f32, "dseg_S": f32, "dseg_z": f32, "dS_end": f32, "dz_end": f32}
    for kernel, pass_ in ((lin.linear_attn_fwd_kernel_segsum, "fwd"),
                          (lin.linear_attn_fwd_kernel, "fwd"),
                          (lin.linear_attn_bwd_kernel_dq, "bwd"),
                          (lin.linear_attn_bwd_kernel_dkdv, "bwd")):
        cfg = lin._launch_cfg(D, D, 64, torch.bfloat16, pass_)
        consts = {k: v for k, v in cfg.items() if k in kernel.arg_names}
        if "CAUSAL" in kernel.arg_names:
            consts["CAUSAL"] = True
        label = f"C64 w{cfg['num_warps']} s{cfg['num_stages']}"
        out.append(("linear_attn " + kernel.__name__.removeprefix("linear_attn_"), "causal",
                    kernel, {"num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"],
                             "label": label}, lin_ptr, {"eps"}, consts, ()))
    gmm = moe._gmm_cfg(torch.bfloat16)
    out.append(("moe grouped_mm", "bf16", moe.grouped_mm_kernel,
                {"num_warps": gmm["num_warps"], "num_stages": gmm["num_stages"],
                 "label": f"{gmm['BM']}x{gmm['BN']}x{gmm['BK']} w{gmm['num_warps']} "
                          f"s{gmm['num_stages']}"},
                {"x": bf, "w": bf, "y": bf, "tile_expert": i32, "tile_row0": "*i64",
                 "row_end": "*i64"}, set(),
                {"BM": gmm["BM"], "BN": gmm["BN"], "BK": gmm["BK"], "PREC": "tf32"}, ()))
    return out


def _bin(name: str) -> str:
    import triton

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)


def compile_one(fn, kind, ptrs, floats, constants, ones, cc):
    """Compile ``fn`` for sm_``cc`` with ``kind``'s tiles; its resource row."""
    import triton
    from genoctx.kernels._triton_utils import tile_config
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    constants = dict(constants)
    if isinstance(kind, dict):  # a kernel with its own launch config
        num_warps, num_stages, label = kind["num_warps"], kind["num_stages"], kind["label"]
    else:
        tiles = tile_config(kind, block_size=BS, head_dim=D, arch=cc)
        num_warps, num_stages = tiles.num_warps, tiles.num_stages
        label = f"{tiles.block_m}x{tiles.block_n} w{num_warps} s{num_stages}"
        if kind == "hybrid_state":
            constants["BLOCK_T"] = tiles.block_m
        else:
            constants.update(BLOCK_M=tiles.block_m, BLOCK_N=tiles.block_n)
    constants.update({name: 1 for name in ones})
    sig = {}
    for name in fn.arg_names:
        if name in constants:
            sig[name] = "constexpr"
        elif name in ptrs:
            sig[name] = ptrs[name]
        else:
            sig[name] = "fp32" if name in floats else "i32"
    missing = [n for n in constants if n not in fn.arg_names]
    if missing:
        raise ValueError(f"{fn.__name__} has no argument {missing}")
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n, t in sig.items()
             if t.startswith("*") or n in DIVISIBLE}
    src = ASTSource(fn=fn, signature=sig, constexprs=constants, attrs=attrs)
    t0 = time.perf_counter()
    ck = triton.compile(src, target=GPUTarget("cuda", cc, 32),
                        options={"num_warps": num_warps, "num_stages": num_stages})
    seconds = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        cubin.write_bytes(ck.asm["cubin"])
        usage = subprocess.run([_bin("cuobjdump"), "--dump-resource-usage", str(cubin)],
                               capture_output=True, text=True, check=True).stdout
        sass = subprocess.run([_bin("cuobjdump"), "-sass", str(cubin)],
                              capture_output=True, text=True, check=True).stdout
    # a kernel the compiler reduced to a trap (its LLVM body is llvm.trap alone) would fault
    trap_only = "llvm.trap" in ck.asm["llir"] and not any(
        op in sass for op in ("HGMMA", "HMMA", "MMA", "LDG"))
    ops = re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", sass, re.M)

    def count(*names):
        return sum(1 for op in ops if op in names)

    return {
        "tiles": label,
        "regs": int(re.search(r"REG:(\d+)", usage).group(1)),
        "spills": count("LDL", "STL"),
        "shared_kib": ck.metadata.shared / 1024,
        "wgmma": count("HGMMA"),
        "tcgen05": sum(1 for op in ops if op.startswith("UTC") and op.endswith("MMA")),
        "mma_sync": count("HMMA"),
        "ex2": sum(1 for op in ops if op == "MUFU"),  # MUFU.EX2 and the rare other MUFU ops
        "async_copies": count("LDGSTS", "UTMALDG"),
        "compile_s": seconds,
        "trap_only": trap_only,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="90,100", help="compute capabilities, e.g. 90,100")
    ap.add_argument("--head-dim", type=int, default=64, choices=(32, 48, 64, 128),
                    help="head dim D of every kernel (64: the benchmark shape)")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--check", action="store_true",
                    help="exit non-zero unless every kernel compiles to the target's own "
                         "tensor-core MMA (wgmma on sm_90, tcgen05 on sm_100) and not to a trap")
    args = ap.parse_args()
    global D
    D = args.head_dim
    import triton
    from _report import write_section  # noqa: PLC0415

    targets = [int(t) for t in args.targets.split(",")]
    rows = []
    for name, variant, fn, kind, ptrs, floats, constants, ones in _specs():
        for cc in targets:
            r = compile_one(fn, kind, ptrs, floats, constants, ones, cc)
            rows.append({"kernel": name, "variant": variant, "sm": cc, **r})
            print(f"{name:18s} {variant:22s} sm_{cc} {r['tiles']:14s} regs {r['regs']:3d} "
                  f"spills {r['spills']:3d} smem {r['shared_kib']:5.1f} KiB wgmma {r['wgmma']} "
                  f"tcgen05 {r['tcgen05']} mma.sync {r['mma_sync']} MUFU {r['ex2']} async "
                  f"{r['async_copies']} ({r['compile_s']:.1f} s)", flush=True)
    cmd = "python benchmarks/kernel_resources.py" + (
        f" --targets {args.targets}" if args.targets != "90,100" else "") + (
        f" --head-dim {D}" if D != 64 else "")
    lines = [
        f"## kernel-resources{'' if D == 64 else f'-d{D}'} — attention kernels compiled for "
        "sm_90 / sm_100 (no GPU)", "",
        f"Command: `{cmd}` · compiled here ({platform.machine()}, no GPU) with triton "
        f"{triton.__version__} and its ptxas; read back with its cuobjdump. Shape: B1 H16 D{D} "
        "bf16, block 512, T = 1,048,576, each kernel with its tile config "
        "(`kernels/_triton_utils.py`) and the JIT's specialisation. Not speed: registers per "
        "thread (cap 255), spill instructions (LDL/STL, static count), shared memory, "
        "tensor-core instructions (wgmma on Hopper, tcgen05 on Blackwell, mma.sync), MUFU "
        "(exponentials) and async copies (cp.async, TMA), static counts in the cubin.", "",
        "| kernel | variant | target | tiles | regs | spill instr | shared KiB | wgmma | "
        "tcgen05 | mma.sync | MUFU | async copies |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['variant']} | sm_{r['sm']} | {r['tiles']} | "
                     f"{r['regs']} | {r['spills']} | {r['shared_kib']:.0f} | {r['wgmma']} | "
                     f"{r['tcgen05']} | {r['mma_sync']} | {r['ex2']} | {r['async_copies']} |"
                     + (" **compiles to a trap**" if r["trap_only"] else ""))
    if not args.no_write:
        write_section("kernel-resources" + ("" if D == 64 else f"-d{D}"), "\n".join(lines))
    else:
        print("\n".join(lines))
    bad = [f"{r['kernel']} ({r['variant']}) on sm_{r['sm']}: " + (
        "compiles to a trap" if r["trap_only"] else "no native tensor-core MMA")
        for r in rows if r["trap_only"] or not (r["wgmma"] if r["sm"] == 90 else
                                                r["tcgen05"] if r["sm"] >= 100 else True)]
    for line in bad:
        print("FAIL:", line)
    if args.check and bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
