"""One table (a row per sample) and one figure across the samples of the workflow (rule ``report``).

Columns (empty when a sample lacks that stage): the annotated sequence (contigs, bases, shards,
the domain its genes were decoded for: archaea, bacteria, or auto where each shard named it),
the merged annotation (genes, RNAs, genes per kb, mean gene score), the scored variants
(records, scored, REF mismatches, median GCX_DLL), the evaluation against the truth
(``genoctx eval`` rows: gene sensitivity / precision / F1, per-base CDS F1) and the read
support of the predicted genes (fraction with reads, median mean depth).
"""

# No `from __future__` imports: Snakemake runs this file after a preamble of its own.

import csv
import json
import math
import statistics
import sys
from pathlib import Path

COLUMNS = ("sample", "contigs", "bases", "shards", "domain", "genes", "rnas", "genes_per_kb",
           "mean_gene_score", "variants", "scored", "ref_mismatch", "median_dll",
           "gene_sensitivity", "gene_precision", "gene_f1", "cds_base_f1",
           "genes_with_reads", "median_gene_depth")
EVAL_METRICS = {"gene sensitivity": "gene_sensitivity", "gene precision": "gene_precision",
                "gene f1": "gene_f1", "per-base CDS F1": "cds_base_f1"}
RNA_TYPES = ("tRNA", "tmRNA", "rRNA", "ncRNA")  # the RNA feature rows annotate writes


def annotation_summary(gff3: str | Path) -> dict:
    lengths, genes, rnas, scores = {}, 0, 0, []
    with open(gff3) as fh:
        for line in fh:
            if line.startswith("##sequence-region"):
                _, name, _, end = line.split()
                lengths[name] = int(end)
                continue
            col = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(col) != 9:
                continue
            if col[2] == "CDS":
                genes += 1
                if col[5] != ".":
                    scores.append(float(col[5]))
            elif col[2] in RNA_TYPES:
                rnas += 1
    bases = sum(lengths.values())
    return {"contigs": len(lengths), "bases": bases, "genes": genes, "rnas": rnas,
            "genes_per_kb": genes / (bases / 1000) if bases else None,
            "mean_gene_score": statistics.fmean(scores) if scores else None}


def variant_summary(vcf: str | Path) -> dict:
    import pysam

    n = scored = mismatch = 0
    dll = []
    with pysam.VariantFile(str(vcf)) as vf:
        for rec in vf:
            n += 1
            mismatch += "GCX_REF_MISMATCH" in rec.filter
            values = [v for v in (rec.info.get("GCX_DLL") or ()) if v is not None]
            scored += bool(values)
            dll += values
    return {"variants": n, "scored": scored, "ref_mismatch": mismatch,
            "median_dll": statistics.median(dll) if dll else None, "_dll": dll}


def eval_summary(metrics_json: str | Path) -> dict:
    doc = json.loads(Path(metrics_json).read_text())
    out = {}
    for bench in doc["benchmarks"].values():
        for row in bench["rows"]:
            if row["metric"] in EVAL_METRICS:
                out[EVAL_METRICS[row["metric"]]] = row["value"]
    return out


def reads_summary(tsv: str | Path) -> dict:
    with open(tsv) as fh:
        depths = [float(r["mean_depth"]) for r in csv.DictReader(fh, delimiter="\t")
                  if r["mean_depth"]]
    if not depths:
        return {}
    return {"genes_with_reads": sum(d > 0 for d in depths) / len(depths),
            "median_gene_depth": statistics.median(depths)}


def sample_row(s: dict) -> dict:
    row = {"sample": s["sample"], **annotation_summary(s["gff3"]),
           "shards": len(list(Path(s["shards"]).glob("*.bed"))), "domain": _domain(s)}
    if s["vcf"]:
        row.update(variant_summary(s["vcf"]))
    if s["metrics"]:
        row.update(eval_summary(s["metrics"]))
    if s["reads"]:
        row.update(reads_summary(s["reads"]))
    return row


def _domain(s: dict) -> str:
    """The domain file's word (rule sample_domain), or the configured domain itself."""
    given = s.get("domain", "")
    return Path(given).read_text().strip() if given.endswith(".txt") else given


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4f}"
    return str(v)


def write_table(rows: list[dict], path: str | Path) -> None:
    with open(path, "w", newline="") as fh:
        fh.write("\t".join(COLUMNS) + "\n")
        fh.writelines("\t".join(_cell(r.get(c)) for c in COLUMNS) + "\n" for r in rows)


def figure(rows: list[dict]):
    """Genes per kb, evaluation metrics, and the GCX_DLL distribution, per sample."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["sample"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    ax = axes[0]
    ax.bar(names, [r["genes_per_kb"] or 0 for r in rows], color="tab:blue")
    ax.set(ylabel="predicted genes per kb", title="annotation")
    ax = axes[1]
    evaluated = [r for r in rows if "gene_f1" in r]
    metrics = list(EVAL_METRICS.values())
    width = 0.8 / len(metrics)
    for i, m in enumerate(metrics):
        xs = [j + (i - (len(metrics) - 1) / 2) * width for j in range(len(evaluated))]
        ax.bar(xs, [r.get(m) or 0 for r in evaluated], width, label=m.replace("_", " "))
    ax.set_xticks(range(len(evaluated)), [r["sample"] for r in evaluated])
    ax.set(ylim=(0, 1.05), title="against the truth annotation")
    if evaluated:
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    else:
        ax.text(0.5, 0.5, "no sample has a truth annotation", ha="center",
                transform=ax.transAxes)
    ax = axes[2]
    scored = [r for r in rows if r.get("_dll")]
    if scored:
        ax.boxplot([r["_dll"] for r in scored], tick_labels=[r["sample"] for r in scored])
        ax.axhline(0, color="0.6", lw=0.8, ls="--")
    else:
        ax.text(0.5, 0.5, "no scored variants", ha="center", transform=ax.transAxes)
    ax.set(ylabel="GCX_DLL (alt - ref log-likelihood)", title="variants")
    for ax in axes:
        ax.tick_params(axis="x", labelsize=8, labelrotation=20)
    fig.tight_layout()
    return fig


def main(smk) -> None:
    from genoctx.eval.harness import savefig

    rows = [sample_row(s) for s in smk.params.samples]
    write_table(rows, smk.output.table)
    savefig(figure(rows), Path(smk.output.figure))
    print(f"{len(rows)} samples", file=sys.stderr)


if "snakemake" in globals():
    from _smk import run_logged

    run_logged(main, snakemake)  # noqa: F821 (injected by Snakemake)
