"""Benchmark ``mpra-saturation``: saturation-mutagenesis MPRA of regulatory elements.

Kircher et al. 2019 (Nat Commun; the CAGI5 regulation challenge data): every SNV and 1-bp
deletion of promoters and enhancers, with the log2 expression effect (``Coefficient``) measured
by a massively parallel reporter assay. The table lists each element twice, with GRCh37 and with
GRCh38 coordinates (the same measurements); one release is used per element (GRCh37 when
present). Rows without a position are skipped.

No flanking genome ships, so each element's reference is rebuilt from the table itself (the Ref
base at every Pos; a gap becomes N; two rows disagreeing on a base raise) and written to
``elements_reference.fa`` in the benchmark folder. The prediction is genoctx's ``GCX_DLL``
(:func:`genoctx.heads.variant.score_variants`, alt − ref log-likelihood, both strands averaged)
with the whole element as the window; a deletion shortens the alt window and is scored through
the whole-window likelihood. Reported: per-element Spearman and Pearson of DLL against the
measured effect, for SNVs and for all variants, and their medians over elements.

Baseline (no model): the substitution class, transition 0 > transversion −1 > deletion −2
(larger change, lower predicted expression). No published anchor is quoted here.

Run: ``python -m genoctx.eval.benchmarks.mpra_saturation --out results/eval``
"""

from __future__ import annotations

import csv
import gzip
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genoctx.errors import InputError
from genoctx.eval.harness import BenchContext, BenchResult, Row, main_module_entry, savefig
from genoctx.eval.metrics import pearson, spearman
from genoctx.eval.plots import pyplot

NAME = "mpra-saturation"
DESCRIPTION = "Saturation-mutagenesis MPRA (Kircher 2019): per-element Spearman of DLL vs effect"

TABLE = "variants/mpra_saturation/elements.tsv.gz"
RELEASES = ("GRCh37", "GRCh38")   # preference order
QUICK_ELEMENTS = 2
QUICK_VARIANTS = 150
# The full run keeps at most this many variants per element: all alleles of evenly spaced
# positions (None: all). Scoring every one of the 44,647 variants with whole-element windows
# costs ~0.05 CPU s each for the shipped model (~40 CPU min on one thread), too long for a
# routine run on a shared 2-core box; 300 per element (~8,700 variants) takes ~8 CPU min.
MAX_VARIANTS: int | None = 300
_COLUMNS = ("Chrom", "Pos", "Ref", "Alt", "Coefficient", "Element", "Release")
_PURINES = frozenset("AG")


@dataclass(frozen=True)
class MpraVariant:
    pos: int            # 1-based, on the element's release
    ref: str
    alt: str            # "" for a 1-bp deletion (written "-" in the table)
    effect: float       # Coefficient (log2 RNA/DNA change)

    @property
    def is_snv(self) -> bool:
        return len(self.alt) == 1


@dataclass
class Element:
    name: str
    chrom: str
    release: str
    start: int                     # 1-based position of seq[0]
    seq: str
    missing: int                   # gap bases written as N
    variants: list[MpraVariant] = field(default_factory=list)


def rebuild_reference(bases: list[tuple[int, str]]) -> tuple[int, str, int]:
    """``(start, sequence, missing)`` from ``(1-based pos, ref base)`` pairs; gaps become N.

    Raises:
        InputError: two pairs give different bases for one position, or a base is not ACGT.
    """
    if not bases:
        raise InputError("no positions to rebuild a reference from")
    seen: dict[int, str] = {}
    for pos, base in bases:
        base = base.upper()
        if base not in ("A", "C", "G", "T"):
            raise InputError(f"Ref at {pos} is {base!r}; expected one base A, C, G or T")
        if seen.setdefault(pos, base) != base:
            raise InputError(f"rows disagree on the reference base at {pos}: "
                             f"{seen[pos]} vs {base}")
    lo, hi = min(seen), max(seen)
    seq = "".join(seen.get(p, "N") for p in range(lo, hi + 1))
    return lo, seq, hi - lo + 1 - len(seen)


def read_elements(path: Path) -> tuple[list[Element], dict]:
    """Elements (one release each, sorted by name) with their variants, plus skip counts."""
    rows: dict[tuple[str, str], list[dict]] = {}
    skipped = 0
    with gzip.open(path, "rt", newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        missing = [c for c in _COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path.name}: missing column(s) {', '.join(missing)}")
        for r in reader:
            if r["Pos"] in ("", "NA") or r["Ref"] in ("", "NA"):
                skipped += 1
                continue
            rows.setdefault((r["Element"], r["Release"]), []).append(r)
    elements = []
    names = sorted({e for e, _ in rows})
    for name in names:
        release = next((r for r in RELEASES if (name, r) in rows), None)
        if release is None:
            raise InputError(f"element {name}: no rows with release {' or '.join(RELEASES)}")
        elements.append(_element(name, release, rows[(name, release)]))
    stats = {"rows_without_position": skipped,
             "releases_listed": {n: sorted(r for e, r in rows if e == n) for n in names}}
    return elements, stats


def _element(name: str, release: str, rows: list[dict]) -> Element:
    chroms = {r["Chrom"] for r in rows}
    if len(chroms) != 1:
        raise InputError(f"element {name} ({release}) spans chromosomes {sorted(chroms)}")
    start, seq, missing = rebuild_reference([(int(r["Pos"]), r["Ref"]) for r in rows])
    variants = []
    for r in rows:
        ref, alt = r["Ref"].upper(), r["Alt"].upper()
        if alt == "-":
            alt = ""
        elif alt not in ("A", "C", "G", "T") or alt == ref:
            raise InputError(f"element {name} at {r['Pos']}: Alt {r['Alt']!r} is neither a "
                             f"base other than Ref {ref} nor '-' (1-bp deletion)")
        variants.append(MpraVariant(int(r["Pos"]), ref, alt, float(r["Coefficient"])))
    variants.sort(key=lambda v: (v.pos, v.alt))
    return Element(name, chroms.pop(), release, start, seq, missing, variants)


def cap_sites(variants: list[MpraVariant], limit: int | None) -> list[MpraVariant]:
    """All variants of evenly spaced positions, at most ``limit`` in all (sites stay whole, so
    they share their reference window)."""
    if limit is None or len(variants) <= limit:
        return variants
    sites = sorted({v.pos for v in variants})
    k = max(1, len(sites) * limit // len(variants))
    while True:
        keep = {sites[i] for i in np.unique(np.linspace(0, len(sites) - 1, k).round().astype(int))}
        out = [v for v in variants if v.pos in keep]
        if len(out) <= limit or k == 1:
            return out
        k -= 1


def substitution_class(v: MpraVariant) -> float:
    """The baseline: transition 0, transversion −1, deletion −2."""
    if not v.is_snv:
        return -2.0
    return 0.0 if (v.ref in _PURINES) == (v.alt in _PURINES) else -1.0


# ----------------------------------------------------------------------------- scoring

def write_reference(elements: list[Element], path: Path) -> Path:
    """The rebuilt references as FASTA (one record per element)."""
    from genoctx.io.atomic import atomic_open

    with atomic_open(path, "w") as fh:
        for e in elements:
            fh.write(f">{e.name} chr{e.chrom}:{e.start}-{e.start + len(e.seq) - 1} {e.release} "
                     f"missing={e.missing}\n")
            for i in range(0, len(e.seq), 60):
                fh.write(e.seq[i:i + 60] + "\n")
    return path


def dll_scores(model, fasta, elements: list[Element], quiet: bool) -> dict[str, np.ndarray]:
    """GCX_DLL of every variant, the whole element as the window."""
    from genoctx.heads.variant import score_variants
    from genoctx.io.vcf import Variant
    from genoctx.progress import progress_bar

    out = {}
    with progress_bar("mpra DLL", sum(len(e.variants) for e in elements), quiet) as bar:
        for e in elements:
            vs = [Variant(e.name, v.pos - e.start, v.ref, v.alt, None, None, (), i, 1, True)
                  for i, v in enumerate(e.variants)]
            out[e.name] = np.array([s for _, s in score_variants(
                model, fasta, vs, context=2 * len(e.seq) + 1, progress=bar.advance)], float)
    return out


def _correlations(pred: np.ndarray, effect: np.ndarray) -> dict:
    if len(pred) < 3:
        return {"spearman": None, "pearson": None}
    return {"spearman": spearman(pred, effect), "pearson": pearson(pred, effect)}


def element_metrics(e: Element, dll: np.ndarray | None) -> dict:
    effect = np.array([v.effect for v in e.variants])
    snv = np.array([v.is_snv for v in e.variants])
    base = np.array([substitution_class(v) for v in e.variants])
    out = {"release": e.release, "length": len(e.seq), "missing": e.missing,
           "n": len(e.variants), "n_snv": int(snv.sum()), "n_del": int((~snv).sum()),
           "baseline": {"all": _correlations(base, effect),
                        "snv": _correlations(base[snv], effect[snv])}}
    if dll is not None:
        out["dll"] = {"all": _correlations(dll, effect),
                      "snv": _correlations(dll[snv], effect[snv])}
    return out


def _median(per: dict, method: str, subset: str, stat: str) -> float | None:
    vals = [m[method][subset][stat] for m in per.values() if method in m]
    vals = [v for v in vals if v is not None and np.isfinite(v)]
    return float(np.median(vals)) if vals else None


# ----------------------------------------------------------------------------- run

def _plot(ctx: BenchContext, per: dict) -> Path:
    plt = pyplot()
    names = list(per)
    series = [("dll", "snv", "genoctx DLL, SNVs"), ("dll", "all", "genoctx DLL, all"),
              ("baseline", "all", "substitution class, all")]
    series = [s for s in series if s[0] in per[names[0]]]
    fig, ax = plt.subplots(figsize=(6.4, 0.22 * len(names) + 1.4))
    h = 0.8 / len(series)
    y = np.arange(len(names))
    top = 0.3
    for i, (method, subset, label) in enumerate(series):
        vals = np.array([per[n][method][subset]["spearman"] for n in names], dtype=float)
        top = max(top, float(np.nanmax(np.abs(vals), initial=0.0)))
        ax.barh(y + (i - (len(series) - 1) / 2) * h, vals, h, label=label)
    ax.axvline(0, color="0.3", lw=0.8)
    ax.set_yticks(y, names, fontsize=7)
    ax.invert_yaxis()
    ax.set(xlabel="Spearman with measured effect (Coefficient)", xlim=(-1.1 * top, 1.1 * top),
           title="Saturation MPRA: per-element Spearman")
    ax.legend(fontsize=7, loc="lower right")
    return savefig(fig, ctx.bench_dir(NAME) / "per_element.png")


def data_files(quick: bool) -> tuple[str, ...]:
    """The manifest files :func:`run` reads (checked before any benchmark runs)."""
    return (TABLE,)


def run(ctx: BenchContext) -> BenchResult:
    from genoctx.io.fasta import FastaFile

    elements, stats = read_elements(ctx.data_file(TABLE))
    total = {"variants": sum(len(e.variants) for e in elements)}
    if ctx.quick:
        elements = sorted(elements, key=lambda e: (len(e.seq), e.name))[:QUICK_ELEMENTS]
        limit = QUICK_VARIANTS
    else:
        limit = MAX_VARIANTS
    for e in elements:
        e.variants = cap_sites(e.variants, limit)
    dll = None
    if ctx.model is not None:
        ref = write_reference(elements, ctx.bench_dir(NAME) / "elements_reference.fa")
        with FastaFile(ref) as fasta:
            dll = dll_scores(ctx.backbone(), fasta, elements, ctx.quiet)
    per = {e.name: element_metrics(e, None if dll is None else dll[e.name]) for e in elements}
    medians = {f"{method}_{subset}_{stat}": _median(per, method, subset, stat)
               for method in ("dll", "baseline") for subset in ("snv", "all")
               for stat in ("spearman", "pearson")}
    metrics = {"quick": ctx.quick, "max_variants_per_element": limit,
               "n_elements": len(elements), "n_variants": sum(len(e.variants) for e in elements),
               "n_variants_in_table": total["variants"], **stats,
               "median": {k: v for k, v in medians.items() if v is not None},
               "per_element": per}
    return BenchResult(metrics=metrics, rows=_rows(metrics), plots=[_plot(ctx, per)],
                       notes=_notes(metrics))


def _rows(metrics: dict) -> list[Row]:
    ds = f"Kircher 2019 saturation MPRA ({metrics['n_elements']} elements)"
    med = metrics["median"]
    rows = []
    for method, label in (("dll", "genoctx GCX_DLL (whole element)"),
                          ("baseline", "substitution class (ts 0 / tv −1 / del −2)")):
        for subset, what in (("snv", "SNVs"), ("all", "SNVs + deletions")):
            for stat in ("spearman", "pearson"):
                key = f"{method}_{subset}_{stat}"
                if key in med:
                    rows.append(Row(ds, label, f"median {stat.capitalize()}, {what}", med[key]))
    return rows


def _notes(metrics: dict) -> list[str]:
    gaps = ", ".join(f"{n} {m['missing']}" for n, m in metrics["per_element"].items()
                     if m["missing"]) or "none"
    notes = [
        (f"{metrics['n_variants']} of {metrics['n_variants_in_table']} variants scored in "
         f"{metrics['n_elements']} elements (one release each, GRCh37 where listed; the table "
         f"repeats every element with GRCh38 coordinates); {metrics['rows_without_position']} "
         "rows without a position (both releases) skipped."),
        (f"References rebuilt from the table's Ref column (gap bases written as N: {gaps}); no "
         "genomic flank ships, so the window is the whole element."),
        ("A deletion's alt window is one base shorter, so its DLL lacks one log-likelihood "
         "term; the 'all' correlations mix both kinds within an element."),
    ]
    if metrics["max_variants_per_element"] is not None:
        notes.append(f"Capped at {metrics['max_variants_per_element']} variants per element "
                     "(all alleles of evenly spaced positions)"
                     + (": quick subset, smoke test only." if metrics["quick"] else "."))
    if "dll_snv_spearman" not in metrics["median"]:
        notes.append("No model (--model none): baseline only.")
    return notes


if __name__ == "__main__":
    main_module_entry(NAME)
