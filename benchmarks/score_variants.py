"""Variant scoring throughput on the BRCA1 saturation-editing SNVs (Findlay et al. 2018).

Run from the repository root (reads the shared data folder, writes only to a temp folder and to
the ``score_variants`` section of docs/benchmarks.md)::

    python benchmarks/score_variants.py                 # a spread of ~150 SNVs, 1024 and 256
    python benchmarks/score_variants.py --all           # all 3,893 (long on 2 CPU cores)
    python benchmarks/score_variants.py --no-write      # print without touching the docs

A VCF is built from the TSV in a temp folder (REF/ALT on the NG_005905.2 strand; the function
scores and classes are never read) and scored end to end with ``score_vcf`` (what
``genoctx score-variants`` runs: survey, gene prediction around the variants, scoring, writing).
The model is the embedded checkpoint when one ships, else a random-init ``tiny`` model: this
measures speed (variants/s), not quality. A second, smaller run times the scoring alone, with the
shared prefix and with whole windows, on the same variants.
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/tokenize.py shadows the standard library's `tokenize` (imported by torch through
# inspect): move this folder from the front of sys.path to the back before importing anything.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse  # noqa: E402
import csv  # noqa: E402
import gzip  # noqa: E402
import resource  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

from _report import machine, md_table, write_section  # noqa: E402

from genoctx.cli.score_variants import score_vcf  # noqa: E402
from genoctx.errors import GenoctxError  # noqa: E402
from genoctx.io.dataroot import resolve_data_root  # noqa: E402

TSV = "variants/brca1_sge/brca1_findlay2018_on_NG_005905.2.tsv"
FASTA = "variants/brca1_sge/NG_005905.2_BRCA1_RefSeqGene.fasta.gz"


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def read_snvs(root: Path) -> list[tuple[int, str, str]]:
    """(1-based NG position, ref, alt) of every SNV, on the NG_005905.2 (gene) strand."""
    with open(root / TSV) as fh:
        rows = [(int(r["ng_pos"]), r["ref_gene"], r["alt_gene"])
                for r in csv.DictReader(fh, delimiter="\t")]
    return sorted(rows)


def spread(snvs: list, limit: int | None) -> list:
    """All SNVs of evenly spaced sites, about ``limit`` in all (sites keep their 1-3 ALTs)."""
    if limit is None or limit >= len(snvs):
        return snvs
    sites = sorted({p for p, _, _ in snvs})
    step = max(1, round(len(snvs) / limit))
    keep = set(sites[::step])
    return [s for s in snvs if s[0] in keep]


def write_inputs(root: Path, tmp: Path, snvs: list) -> tuple[Path, Path]:
    fasta = tmp / "NG_005905.2.fa"
    with gzip.open(root / FASTA, "rt") as src:
        text = src.read()
    name = text[1:].split(None, 1)[0]
    fasta.write_text(text)
    length = len("".join(text.split("\n")[1:]))
    vcf = tmp / "brca1.vcf"
    lines = ["##fileformat=VCFv4.2", f"##contig=<ID={name},length={length}>",
             "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO"]
    lines += [f"{name}\t{p}\t.\t{r}\t{a}\t.\t.\t." for p, r, a in snvs]
    vcf.write_text("\n".join(lines) + "\n")
    return fasta, vcf


def model_dir(tmp: Path) -> tuple[str, str]:
    """('embedded', label) when a checkpoint ships, else a saved random-init tiny model."""
    from genoctx.model import checkpoint
    from genoctx.model.model import GenoCtxModel

    try:
        checkpoint.resolve_checkpoint("embedded")
        return "embedded", "embedded checkpoint"
    except GenoctxError:
        torch.manual_seed(0)
        GenoCtxModel.from_config("tiny").save_pretrained(tmp / "tiny")
        return str(tmp / "tiny"), "random-init tiny (4 layers; no embedded checkpoint yet)"


def run(root: Path, tmp: Path, snvs: list, model: str, context: int, batch: int) -> dict:
    """End to end: what ``genoctx score-variants`` does."""
    fasta, vcf = write_inputs(root, tmp, snvs)
    t0, c0 = time.perf_counter(), cpu_seconds()
    summary = score_vcf(vcf, fasta, tmp / "out.vcf.gz", model=model, context=context,
                        batch_size=batch, device="cpu", quiet=True)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    assert summary.scored == len(snvs), summary
    return {"variants": len(snvs), "sites": len({p for p, _, _ in snvs}), "wall": wall,
            "cpu": cpu}


def run_scoring(root: Path, tmp: Path, snvs: list, model: str, context: int, batch: int,
                share: bool) -> dict:
    """Scoring alone (library), with or without the shared prefix."""
    from genoctx.heads.variant import score_variants
    from genoctx.io.fasta import FastaFile
    from genoctx.io.vcf import iter_variants
    from genoctx.model.model import GenoCtxModel

    fasta, vcf = write_inputs(root, tmp, snvs)
    net = GenoCtxModel.from_pretrained(model)
    with FastaFile(fasta) as fa:
        t0, c0 = time.perf_counter(), cpu_seconds()
        scores = [s for _, s in score_variants(net, fa, iter_variants(vcf, fa), context=context,
                                               batch_size=batch, share_prefix=share)]
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    assert all(s is not None for s in scores)
    return {"variants": len(snvs), "sites": len({p for p, _, _ in snvs}), "wall": wall,
            "cpu": cpu}


def row(label: str, r: dict, total: int) -> list:
    rate = r["variants"] / r["wall"]
    return [label, r["variants"], r["sites"], f"{r['wall']:.1f}", f"{r['cpu']:.1f}",
            f"{rate:.2f}", f"{total / rate / 60:.1f}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=150, help="about this many SNVs (whole sites)")
    ap.add_argument("--all", action="store_true", help="score all 3,893 SNVs (every context)")
    ap.add_argument("--full-context", type=int, default=0,
                    help="also score all 3,893 SNVs end to end at this context (0: skip)")
    ap.add_argument("--ablation", type=int, default=30, help="SNVs in the prefix ablation (0: skip)")
    ap.add_argument("--contexts", default="1024,256", help="comma-separated window sizes; the "
                    "first is also used for the ablation")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=0,
                    help="torch intra-op threads (0: torch's default); on a shared 2-core "
                    "machine 1 thread avoids spinning threads fighting other jobs")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    root = resolve_data_root()
    snvs = read_snvs(root)
    contexts = [int(c) for c in args.contexts.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        model, label = model_dir(tmp)
        main_set = spread(snvs, None if args.all else args.limit)
        for context in contexts:
            r = run(root, tmp, main_set, model, context, args.batch_size)
            rows.append(row(f"end to end, context {context}", r, len(snvs)))
            print(rows[-1], flush=True)
        if args.full_context:
            r = run(root, tmp, snvs, model, args.full_context, args.batch_size)
            rows.append(row(f"end to end, context {args.full_context}, all SNVs", r, len(snvs)))
            print(rows[-1], flush=True)
        if args.ablation:
            small = spread(snvs, args.ablation)
            for share in (True, False):
                r = run_scoring(root, tmp, small, model, contexts[0], args.batch_size, share)
                how = "shared prefix" if share else "whole windows"
                rows.append(row(f"scoring only, context {contexts[0]}, {how}",
                                r, len(snvs)))
                print(rows[-1], flush=True)
    cmd = "python benchmarks/score_variants.py" + (" --all" if args.all else
                                                   f" --limit {args.limit}")
    body = "\n".join([
        "## score_variants — BRCA1 SGE SNVs (NG_005905.2), `genoctx score-variants` pipeline",
        "",
        (f"Command: `{cmd} --contexts {args.contexts} --full-context {args.full_context} "
         f"--ablation {args.ablation} --batch-size {args.batch_size} --threads {args.threads}`  "),
        f"Machine: {machine()}  ",
        (f"Model: {label}. Windows of context − 1 bases for SNVs (equal flanks), both strands; "
         f"{torch.get_num_threads()} torch thread(s); CPU time is summed over threads; "
         "variants/s is per wall second."),
        "",
        md_table(["run", "SNVs", "sites", "wall s", "CPU s", "variants/s",
                  f"projected min for all {len(snvs):,}"], rows),
        "",
        ("Throughput is what the tiny model allows on these cores: each site costs one shared "
         "prefix and one suffix per allele (REF + ~2.9 ALTs) on each strand, so the cost grows "
         "with the context. With two or more torch threads the scoring batches run in worker "
         "threads of one core each (`genoctx.heads.variant.job_sums`). The shared cores' speed "
         "drifts with other jobs, so wall times are upper bounds; on a busy machine (load ~5 on "
         "2 cores) torch's 2 intra-op threads once ran 3–10× slower than 1 thread (spinning "
         "threads competing with the other jobs): pass `--threads 1` there."),
    ])
    print(body)
    if not args.no_write:
        write_section("score_variants", body)


if __name__ == "__main__":
    main()
