"""Plots shared by the benchmarks, the Snakemake report and the notebooks (matplotlib).

Every function takes plain data and returns a matplotlib Figure; callers save it with
:func:`genoctx.eval.harness.savefig` (deterministic PNG bytes).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pyplot():
    # No backend is forced: headless runs fall back to Agg by themselves, and notebooks keep
    # their inline backend.
    import matplotlib.pyplot as plt

    return plt


def roc_figure(curves: dict[str, tuple[np.ndarray, np.ndarray]], title: str = ""):
    """ROC curves: name → (labels 0/1, scores); AUROC in the legend."""
    from genoctx.eval.metrics import auroc, roc_curve

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.6, 4.4))
    for name, (y, s) in curves.items():
        fpr, tpr = roc_curve(y, s)
        ax.plot(fpr, tpr, lw=1.5, label=f"{name} ({auroc(y, s):.3f})")
    ax.plot([0, 1], [0, 1], color="0.7", lw=0.8, ls="--")
    ax.set(xlabel="false positive rate", ylabel="true positive rate", title=title,
           xlim=(0, 1), ylim=(0, 1.01))
    ax.legend(loc="lower right", fontsize=8, title="AUROC", title_fontsize=8)
    return fig


def grouped_bars(values: dict[str, dict[str, float]], ylabel: str, title: str = "",
                 ylim: tuple[float, float] | None = (0, 1.12)):
    """Bars per group (outer key, x axis) and series (inner key, colours)."""
    plt = pyplot()
    groups = list(values)
    series = list(dict.fromkeys(s for g in groups for s in values[g]))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(groups) * max(1, len(series)) / 2 + 2), 3.6))
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for i, s in enumerate(series):
        ys = [values[g].get(s, np.nan) for g in groups]
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, ys, width, label=s)
        for b, y in zip(bars, ys):
            if np.isfinite(y):
                ax.annotate(f"{y:.3f}", (b.get_x() + b.get_width() / 2, y), ha="center",
                            va="bottom", fontsize=6, rotation=90, xytext=(0, 2),
                            textcoords="offset points")
    ax.set_xticks(x, groups, fontsize=8, rotation=20 if len(groups) > 3 else 0)
    ax.set(ylabel=ylabel, title=title)
    if ylim:
        ax.set_ylim(*ylim)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def _feature_lane(ax, feats: Sequence, lo: int, hi: int, y: float, color: str) -> None:
    for f in feats:
        a, b = max(f.start, lo), min(f.end, hi)
        if b <= a:
            continue
        ax.add_patch(pyplot().Rectangle((a, y - 0.3), b - a, 0.6, color=color, lw=0))
        # strand arrow at the 3' end
        tip = b if f.strand == 1 else a
        ax.annotate("", (tip, y), (tip - f.strand * min(200, (b - a) / 2), y),
                    arrowprops={"arrowstyle": "->", "lw": 0.6, "color": "k"})


def track_figure(contig: str, lo: int, hi: int, *, truth: Sequence = (), predicted: Sequence = (),
                 tracks: dict[str, np.ndarray] | None = None, title: str = ""):
    """Annotated vs predicted features of ``contig:lo-hi`` over per-base probability tracks.

    ``truth`` and ``predicted`` hold objects with contig/start/end/strand (0-based half-open);
    ``tracks`` maps a name to a per-base array covering ``lo:hi``.
    """
    plt = pyplot()
    tracks = tracks or {}
    fig, axes = plt.subplots(2, 1, figsize=(9, 3.8), sharex=True,
                             gridspec_kw={"height_ratios": [1, 1.6]})
    ax = axes[0]
    lanes = [("annotated", truth, "tab:green"), ("predicted", predicted, "tab:blue")]
    for i, (name, feats, color) in enumerate(lanes):
        _feature_lane(ax, [f for f in feats if f.contig == contig], lo, hi, len(lanes) - i, color)
    ax.set_yticks([len(lanes) - i for i in range(len(lanes))], [n for n, _, _ in lanes])
    ax.set_ylim(0.3, len(lanes) + 0.7)
    ax.set_title(title or f"{contig}:{lo + 1:,}-{hi:,}", fontsize=9)
    ax = axes[1]
    x = np.arange(lo, hi)
    for name, values in tracks.items():
        ax.plot(x, values, lw=0.7, label=name)
    ax.set(xlim=(lo, hi), ylim=(-0.02, 1.02), ylabel="probability", xlabel=f"{contig} position")
    if tracks:
        ax.legend(fontsize=7, ncol=min(4, len(tracks)), loc="upper right")
    return fig
