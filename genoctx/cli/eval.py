"""``genoctx eval``: run benchmarks, or score any annotation, into metrics.json + report.md + PNGs."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import typer

from genoctx.cli.common import model_choice

EPILOG = """Benchmarks: annotation-bacteria, annotation-eukaryote, brca1-sge, mpra-saturation,
promoters, dnabert-promoter (or 'all').

Examples:

  genoctx eval annotation-bacteria brca1-sge --out results/eval

  genoctx eval --check-reproducible annotation-bacteria --quick

  genoctx eval --predictions prodigal.gff3 --truth genome.gbff.gz --out results/prodigal

  genoctx eval --truth my_genome.gff3 --fasta my_genome.fa --out results/mine
"""


def eval_command(
    benchmarks: list[str] | None = typer.Argument(None, help="Benchmark names, or 'all'."),
    model: str = typer.Option("embedded", "--model", callback=model_choice,
                              help="'embedded', a checkpoint directory, "
                              "or 'none' (baselines only)."),
    data_root: Path | None = typer.Option(None, "--data-root", help="Shared data folder (default: "
                                          "$GENOCTX_DATA_ROOT or ../shared/data)."),
    out: Path = typer.Option(Path("results/eval"), "--out", "-o", help="Output folder."),
    device: str = typer.Option("cpu", "--device", help="cpu (reproducible), auto or cuda."),
    seed: int = typer.Option(0, "--seed", help="Seed for splits, subsets and model init."),
    quick: bool = typer.Option(False, "--quick", help="Small deterministic subsets (smoke test; "
                               "marked as such in the report)."),
    check_reproducible: bool = typer.Option(False, "--check-reproducible", help="Run twice and "
                                            "fail (exit 1) on any difference in the metrics."),
    predictions: Path | None = typer.Option(None, "--predictions", help="GFF3, GTF or GenBank of "
                                            "any tool to score against --truth."),
    truth: Path | None = typer.Option(None, "--truth", help="Truth annotation (GenBank, GFF3 or "
                                      "GTF; gzip, xz or bzip2 allowed)."),
    fasta: Path | None = typer.Option(None, "--fasta", help="FASTA of the truth's genome: with "
                                      "--truth alone, the model annotates it and is scored."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars or summary."),
) -> None:
    """Evaluate the model on held-out benchmarks, or score an annotation against a truth."""
    from genoctx.cli.common import resolve_device
    from genoctx.errors import InputError
    from genoctx.eval import harness

    names = list(dict.fromkeys(benchmarks or []))  # each benchmark once, in the order given
    if "all" in names:
        names = list(harness.BENCHMARKS)
    model_arg = None if model == "none" else model
    device = resolve_device(device)
    from genoctx.cli.app import ARGV

    # the whole command line, shell-quoted: options before `eval` (--debug) and after it alike;
    # sys.argv where run() was not this module's (`python -m genoctx.cli.app` runs a copy)
    argv = ARGV or sys.argv[1:]
    command = shlex.join(["genoctx", *argv]) if "eval" in argv else None
    kwargs = {"model": model_arg, "device": device, "seed": seed, "quick": quick, "quiet": quiet,
              "command": command}

    if predictions is not None or truth is not None or fasta is not None:
        from genoctx.eval.custom import model_job, predictions_job
        from genoctx.io.dataroot import default_data_root

        if names:
            raise InputError("give benchmark names or --truth/--predictions, not both")
        if truth is None:
            raise InputError("--predictions and --fasta need --truth (the annotation to score against)")
        if predictions is not None:
            job = ("predictions", predictions_job(predictions, truth, fasta))
            kwargs["model"] = None  # nothing of the model is used
        elif fasta is not None:
            job = ("model-on-truth", model_job(truth, fasta))
        else:
            raise InputError("with --truth, give --predictions (score a GFF3, GTF or GenBank) or "
                             "--fasta (score the model on that genome)")
        root = Path(data_root) if data_root else default_data_root()

        def run(target: Path) -> dict:
            return harness.run_jobs([job], out=target, data_root=root, **kwargs)
    else:
        if not names:
            raise InputError("name benchmarks to run (" + ", ".join(harness.BENCHMARKS)
                             + ", or 'all'), or use --predictions/--truth")
        for n in names:
            harness.benchmark_module(n)  # unknown names fail before any work

        def run(target: Path) -> dict:
            return harness.run_benchmarks(names, out=target, data_root=data_root, **kwargs)

    if check_reproducible:
        kwargs["fresh"] = True  # each run computes the model's outputs: no cache is read
        first = run(out / "run1")
        second = run(out / "run2")
        diffs = harness.differences(harness.stable_view(first), harness.stable_view(second))
        if diffs:
            typer.echo(f"NOT reproducible: {len(diffs)} difference(s) between {out / 'run1'} and "
                       f"{out / 'run2'}:", err=True)
            for d in diffs[:50]:
                typer.echo(f"  {d}", err=True)
            raise typer.Exit(1)
        typer.echo(f"reproducible: two runs gave identical metrics ({out / 'run1'}, "
                   f"{out / 'run2'})", err=True)
        return
    doc = run(out)
    if not quiet:
        _summary(doc)
        typer.echo(f"wrote {out / 'metrics.json'} and {out / 'report.md'}", err=True)


def _summary(doc: dict) -> None:
    if (doc.get("manifest") or {}).get("quick"):
        typer.echo("# --quick: small subsets for a smoke test, not the reported numbers",
                   err=True)
    for name, bench in doc["benchmarks"].items():
        for r in bench["rows"]:
            v = r["value"]
            val = "n/a" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))
            anchor = f"  [{r['anchor']}]" if r.get("anchor") else ""
            typer.echo(f"{name}\t{r['dataset']}\t{r['method']}\t{r['metric']}\t{val}{anchor}")


def register(app: typer.Typer) -> None:
    app.command("eval", epilog=EPILOG)(eval_command)
