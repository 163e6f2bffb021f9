"""Fit the decoder's cross-genome weights on TRAIN-role genomes and write :mod:`_fitted`.

What is fitted (everything else is self-trained per genome at call time):

* the universal start prior: start codon, RBS class and composition frequencies at annotated
  starts and at all candidate starts of annotated ORFs;
* start-choice weights: a conditional logit over the candidate starts of each annotated ORF;
* gene weights: a logistic regression "is this ORF an annotated gene" on each ORF's best start;
* the gene bias, re-tuned for gene-level F1 of the full decoder, and a Platt calibration of the
  reported score on the decoder's own calls.

Genomes of one species share one unit of weight (four Chlamydia strains count as one genome).
Run: ``python -m genoctx.heads.decoder_fit --data-root ../shared/data`` (a few minutes).
"""

from __future__ import annotations

import argparse
import pprint
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from genoctx.heads.decoder import FEATURES, START_PARTS, DecoderParams, GenomeDecoder
from genoctx.heads.orfs import EDGE_START
from genoctx.heads.start_model import PWM_OFFSETS, StartCounts, rbs_classes

SEQUENCE_FEATURES = ("coding", "coding_per_codon", "start", "log_length", "partial")
# Weights of the neural head's evidence until a trained head's probabilities on the train genomes
# are available to fit them: a confident head (per-base log-odds ±6, ±18 per codon) moves a
# gene's log-odds by about ±9 and outweighs the self-trained coding score when placing starts.
NEURAL_GENE_WEIGHT = 0.5
NEURAL_START_WEIGHT = 0.1  # relative to the coding score's weight


@dataclass
class TrainGenome:
    """One annotated genome: records, truth CDS (contig, start, end, strand) and its weight."""

    name: str
    records: list[tuple[str, bytes]]
    truth: list[tuple[str, int, int, int]]
    weight: float = 1.0
    probs: dict | None = None


@dataclass
class _Table:
    """Candidate features and labels of one genome (all strands concatenated)."""

    gene: np.ndarray       # [N, len(FEATURES)]
    parts: np.ndarray      # [N, len(START_PARTS)]
    orf: np.ndarray        # [N] global ORF id
    orf_true: np.ndarray   # [N] the ORF's stop is annotated
    start_true: np.ndarray  # [N] the candidate is exactly an annotated gene
    stype: np.ndarray
    conflict: np.ndarray   # [N] overlaps an annotated gene beyond the decoder's overlap limits
    counts: StartCounts    # start counts at annotated starts vs candidates of annotated ORFs
    weight: float


def _truth_keys(dec: GenomeDecoder, truth) -> list[tuple[set, set]]:
    """Per strand: annotated stop ends and (start, end) pairs in strand coordinates."""
    out = []
    for s in dec.strands:
        ends, pairs = set(), set()
        for contig, lo, hi, st in truth:
            if contig != s.contig or st != s.strand:
                continue
            a, b = (lo, hi) if st == 1 else (s.length - hi, s.length - lo)
            ends.add(b)
            pairs.add((a, b))
        out.append((ends, pairs))
    return out


def _coverage(dec: GenomeDecoder, truth) -> list[np.ndarray]:
    """Per strand: cumulative count of bases covered by annotated genes on (this, other) strand."""
    out = []
    for s in dec.strands:
        cov = np.zeros((2, s.length + 1), dtype=np.int64)
        for contig, lo, hi, st in truth:
            if contig != s.contig:
                continue
            a, b = (lo, hi) if s.strand == 1 else (s.length - hi, s.length - lo)
            row = 0 if st == s.strand else 1
            cov[row, a] += 1
            cov[row, b] -= 1
        cov = (np.cumsum(cov, axis=1)[:, :-1] > 0).astype(np.int64)
        out.append(np.concatenate([np.zeros((2, 1), np.int64), np.cumsum(cov, axis=1)], axis=1))
    return out


def genome_table(dec: GenomeDecoder, truth, weight: float) -> _Table:
    """Features of every candidate of a trained decoder with truth labels."""
    cols = {k: [] for k in ("gene", "parts", "orf", "otrue", "strue", "stype", "conflict")}
    counts, offset, p = None, 0, dec.params
    covs = _coverage(dec, truth)
    for si, (s, (ends, pairs)) in enumerate(zip(dec.strands, _truth_keys(dec, truth))):
        c, cov = s.cand, covs[si]
        ot = np.isin(c.end, np.fromiter(ends, dtype=np.int64, count=len(ends)))
        st = np.array([(a, b) in pairs for a, b in zip(c.start.tolist(), c.end.tolist())], bool)
        same = cov[0, c.end] - cov[0, c.start]
        opp = cov[1, c.end] - cov[1, c.start]
        gene, parts = dec.features(si)
        for k, v in (("gene", gene), ("parts", parts), ("orf", c.orf.astype(np.int64) + offset),
                     ("otrue", ot), ("strue", st), ("stype", c.stype),
                     ("conflict", (same > p.max_same_overlap) | (opp > p.max_tail_overlap))):
            cols[k].append(v)
        offset += s.length + 10
        rbs = rbs_classes(s.sdlen, c.start, dec.start_model.rbs_llr)
        sc = StartCounts.count(c.stype[ot], rbs[ot], s.bases_NP[ot], st[ot])
        counts = sc if counts is None else counts + sc
    cat = {k: np.concatenate(v) for k, v in cols.items()}
    return _Table(cat["gene"], cat["parts"], cat["orf"], cat["otrue"], cat["strue"],
                  cat["stype"], cat["conflict"], counts, weight)
def _newton(loss_grad_hess, w0: np.ndarray, iters: int = 50) -> np.ndarray:
    w = w0.copy()
    for _ in range(iters):
        loss, g, h = loss_grad_hess(w)
        step = np.linalg.solve(h + 1e-9 * np.eye(len(w)), g)
        t = 1.0
        while t > 1e-4 and loss_grad_hess(w - t * step)[0] > loss:
            t *= 0.5
        w = w - t * step
        if np.abs(t * step).max() < 1e-7:
            break
    return w


def fit_logistic(x_NF: np.ndarray, y_N: np.ndarray, w_N: np.ndarray, l2: float = 1e-3) -> np.ndarray:
    """Weighted L2-regularised logistic regression; returns [F + 1] (last = bias)."""
    mu, sd = x_NF.mean(0), x_NF.std(0) + 1e-9
    z = np.hstack([(x_NF - mu) / sd, np.ones((len(x_NF), 1))])
    w_N = w_N / w_N.sum()

    def lgh(w):
        m = z @ w
        p = 1.0 / (1.0 + np.exp(-m))
        loss = np.sum(w_N * (np.logaddexp(0, m) - y_N * m)) + 0.5 * l2 * w[:-1] @ w[:-1]
        g = z.T @ (w_N * (p - y_N)) + l2 * np.r_[w[:-1], 0]
        h = (z * (w_N * p * (1 - p))[:, None]).T @ z + l2 * np.diag(np.r_[np.ones(len(w) - 1), 0])
        return loss, g, h

    w = _newton(lgh, np.zeros(z.shape[1]))
    coef = w[:-1] / sd
    return np.r_[coef, w[-1] - coef @ mu]


def fit_conditional_logit(x_NF: np.ndarray, group_N: np.ndarray, y_N: np.ndarray,
                          w_G: np.ndarray, l2: float = 1e-3) -> np.ndarray:
    """Softmax-within-group regression (one positive per group, groups contiguous); [F]."""
    starts = np.flatnonzero(np.r_[True, group_N[1:] != group_N[:-1]])
    sd = x_NF.std(0) + 1e-9
    z = x_NF / sd
    w_G = w_G / w_G.sum()

    def lgh(w):
        m = z @ w
        mx = np.maximum.reduceat(m, starts)
        gid = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(m)]))
        e = np.exp(m - mx[gid])
        zsum = np.add.reduceat(e, starts)
        p = e / zsum[gid]
        loss = np.sum(w_G * (np.log(zsum) + mx - np.add.reduceat(m * y_N, starts)))
        ez = np.add.reduceat(p[:, None] * z, starts)
        g = ((np.add.reduceat(y_N[:, None] * z, starts) - ez) * -w_G[:, None]).sum(0)
        wp = w_G[gid] * p
        h = (z * wp[:, None]).T @ z - (ez * w_G[:, None]).T @ ez
        return loss + 0.5 * l2 * w @ w, g + l2 * w, h + l2 * np.eye(len(w))

    return _newton(lgh, np.zeros(z.shape[1])) / sd


def fit_start_prior(tables: list[_Table]) -> dict:
    """Universal start frequencies: each genome's normalised counts, averaged by weight."""
    total = sum(t.weight for t in tables)
    acc = None
    for t in tables:
        n = t.counts.normalized()
        scaled = StartCounts(*(getattr(n, f) * (t.weight / total) for f in n.__dataclass_fields__))
        acc = scaled if acc is None else acc + scaled
    return {f: np.round(getattr(acc, f), 6).tolist() for f in acc.__dataclass_fields__}


def fit_start_weights(tables: list[_Table], neural: bool = False) -> tuple[float, ...]:
    """START_PARTS weights of a conditional logit over the starts of annotated ORFs (coding = 1)."""
    use = len(START_PARTS) if neural else len(START_PARTS) - 1
    xs, gs, ys, ws = [], [], [], []
    goff = 0
    for t in tables:
        m = t.orf_true & (t.stype != EDGE_START)
        orf, y = t.orf[m], t.start_true[m]
        good = np.isin(orf, orf[y])  # ORFs whose annotated start is one of the candidates
        orf, y, x = orf[good], y[good], t.parts[m][good][:, :use]
        _, gid = np.unique(orf, return_inverse=True)
        ng = int(gid.max()) + 1 if len(gid) else 0
        xs.append(x), ys.append(y.astype(float)), gs.append(gid + goff)
        ws.append(np.full(ng, t.weight / max(ng, 1)))
        goff += ng
    x, g, y = np.concatenate(xs), np.concatenate(gs), np.concatenate(ys)
    order = np.argsort(g, kind="stable")
    theta = fit_conditional_logit(x[order], g[order], y[order], np.concatenate(ws))
    # kept in nats: the DP adds log P(start) / P(best start) to the gene's log-odds
    neural = [NEURAL_START_WEIGHT * theta[0]] * (len(START_PARTS) - use)
    return tuple(float(v) for v in np.round(list(theta) + neural, 5))


def best_starts(t: _Table, start_weights) -> np.ndarray:
    """Index of the best candidate (by start-choice score) of each ORF of a table."""
    choice = t.parts @ np.asarray(start_weights)
    order = np.lexsort((-choice, t.orf))
    first = np.r_[True, t.orf[order][1:] != t.orf[order][:-1]]
    return order[first]


def fit_gene_weights(tables: list[_Table], start_weights, use: tuple[str, ...] = SEQUENCE_FEATURES,
                     in_play: bool = True) -> tuple[float, ...]:
    """Logistic weights over FEATURES and a bias (features not in ``use`` keep their default).

    With ``in_play``, ORFs that overlap an annotated gene beyond the overlap limits are left out:
    the dynamic programme already rules them out, so the classifier should learn the rest.
    """
    cols = [FEATURES.index(f) for f in use]
    xs, ys, ws = [], [], []
    for t in tables:
        b = best_starts(t, start_weights)
        if in_play:
            b = b[t.orf_true[b] | ~t.conflict[b]]
        x = t.gene[b].copy()
        x[:, FEATURES.index("start")] = t.parts[b, 1:4] @ np.asarray(start_weights[1:4])
        xs.append(x[:, cols]), ys.append(t.orf_true[b].astype(float))
        ws.append(np.full(len(b), t.weight / len(b)))
    w = fit_logistic(np.concatenate(xs), np.concatenate(ys), np.concatenate(ws))
    out = np.zeros(len(FEATURES) + 1)
    out[FEATURES.index("neural_per_codon")] = NEURAL_GENE_WEIGHT
    out[cols] = w[:-1]
    out[-1] = w[-1]
    return tuple(float(v) for v in np.round(out, 6))


def gene_f1(dec: GenomeDecoder, chosen, truth) -> tuple[float, float, float]:
    """(sensitivity, precision, F1) of decoded genes against truth, matching strand + stop."""
    keys = _truth_keys(dec, truth)
    tp = n_pred = 0
    for s, c, (ends, _) in zip(dec.strands, chosen, keys):
        tp += int(np.isin(s.cand.end[c], np.fromiter(ends, np.int64, len(ends))).sum())
        n_pred += len(c)
    n_true = len({(c, st, hi if st == 1 else lo) for c, lo, hi, st in truth})
    sens, prec = tp / max(n_true, 1), tp / max(n_pred, 1)
    return sens, prec, 2 * sens * prec / max(sens + prec, 1e-12)


BIAS_SHIFTS = tuple(np.arange(-1.0, 3.01, 0.25))


def tune_bias(decoders: list[tuple[GenomeDecoder, list, float]], params: DecoderParams,
              offsets=BIAS_SHIFTS) -> tuple[float, list]:
    """Bias shift maximising the weighted gene-level F1 of the final decode; (shift, table)."""
    rows = []
    for off in offsets:
        gw = list(params.gene_weights)
        gw[-1] += off
        p = replace(params, gene_weights=tuple(gw))
        f1 = []
        for dec, truth, w in decoders:
            dec.params = p
            f1.append((w, gene_f1(dec, dec.decode(), truth)[2]))
        rows.append((float(off), sum(w * f for w, f in f1) / sum(w for w, _ in f1)))
    for dec, _, _ in decoders:
        dec.params = params
    return max(rows, key=lambda r: r[1])[0], rows


def fit_calibration(decoders: list[tuple[GenomeDecoder, list, float]]) -> tuple[float, float]:
    """Platt scaling (a, b) of the decoder's own calls: P(annotated | log-odds x) = σ(a·x + b)."""
    xs, ys, ws = [], [], []
    for dec, truth, w in decoders:
        chosen = dec.decode()
        for si, ((ends, _), c) in enumerate(zip(_truth_keys(dec, truth), chosen)):
            xs.append(dec.dp_scores(si)[c])
            ys.append(np.isin(dec.strands[si].cand.end[c], np.fromiter(ends, np.int64, len(ends))))
        n = sum(len(c) for c in chosen)
        ws.append(np.full(n, w / max(n, 1)))
    a, b = fit_logistic(np.concatenate(xs)[:, None], np.concatenate(ys).astype(float),
                        np.concatenate(ws), l2=0.0)
    return round(float(a), 5), round(float(b), 5)


def species_key(name: str) -> str:
    """Genus and species of a genome file name, lower case: ``escherichia_coli``."""
    return "_".join(Path(name).name.split("_")[:2]).lower()


def species_weights(names: list[str]) -> list[float]:
    """1 / (number of genomes of the same genus and species) for each file name."""
    keys = [species_key(n) for n in names]
    return [1.0 / keys.count(k) for k in keys]


def fit(genomes: list[TrainGenome], rounds: int = 2, log=print) -> DecoderParams:
    """Fit start prior, start weights, gene weights, bias and calibration on ``genomes``.

    The ORF scorer (:mod:`genoctx.heads.orf_scorer`) is left out: it is fitted afterwards, on
    the decoder these weights make.
    """
    params = DecoderParams(orf_scorer=False)
    if len(params.start_prior["pwm_pos"]) != len(PWM_OFFSETS):  # the PWM layout changed
        flat = [[0.25, 0.25, 0.25, 0.25, 0.0]] * len(PWM_OFFSETS)
        params = replace(params, start_prior={**params.start_prior, "pwm_pos": flat, "pwm_all": flat})
    decoders = []
    for r in range(rounds + 1):
        decoders, tables = [], []
        for g in genomes:
            dec = GenomeDecoder(g.records, g.probs, params)
            dec.train()
            decoders.append((dec, g.truth, g.weight))
            tables.append(genome_table(dec, g.truth, g.weight))
        if r == rounds:
            break
        neural = any(g.probs for g in genomes)
        sw = fit_start_weights(tables, neural=neural)
        use = SEQUENCE_FEATURES + (("neural_per_codon",) if neural else ())
        params = replace(params, start_prior=fit_start_prior(tables), start_weights=sw,
                         gene_weights=fit_gene_weights(tables, sw, use))
        log(f"round {r}: start weights {sw}; gene weights {params.gene_weights}")
    shift, rows = tune_bias(decoders, params)
    gw = list(params.gene_weights)
    gw[-1] = round(gw[-1] + shift, 6)
    params = replace(params, gene_weights=tuple(gw))
    log("bias shift vs weighted F1: " + ", ".join(f"{o:+.2f}:{f:.4f}" for o, f in rows))
    for dec, _, _ in decoders:
        dec.params = params
    cal = fit_calibration(decoders)  # of the decoder without the scorer, as fitted here
    params = replace(params, calibration=cal, calibration_no_scorer=cal)
    return params


def write_fitted(params: DecoderParams, path: Path, provenance: str) -> None:
    """Write the fitted values as the Python module :mod:`genoctx.heads._fitted`."""
    def fmt(v):
        return repr(tuple(v)) if isinstance(v, (tuple, list)) else repr(v)

    prior = pprint.pformat(params.start_prior, width=99, compact=True, sort_dicts=False)
    path.write_text(
        '"""Decoder weights fitted on the train genomes by :mod:`genoctx.heads.decoder_fit`.\n\n'
        + textwrap.fill(f"Generated; do not edit. {provenance}", 99) + '\n"""\n\n'
        f"# {', '.join(START_PARTS)}\n"
        f"START_WEIGHTS = {fmt(params.start_weights)}\n"
        f"# {', '.join(FEATURES)}, bias\n"
        f"GENE_WEIGHTS = {fmt(params.gene_weights)}\n"
        "# p = sigmoid(a * log-odds + b)\n"
        f"CALIBRATION = {fmt(params.calibration)}\n"
        f"START_PRIOR = {prior}\n")


def load_train_genomes(data_root=None) -> list[TrainGenome]:
    """The manifest's TRAIN-role bacterial genomes, each file checked by the role guard."""
    from genoctx.io.annotation import read_genes
    from genoctx.io.dataroot import load_manifest, resolve_data_root, trainable_sequences

    root = resolve_data_root(data_root)
    paths = sorted(e.path for e in load_manifest(root).values()
                   if e.path.startswith("genomes/bacteria/") and e.role == "train")
    out = []
    for rel, w in zip(paths, species_weights(paths)):
        path = root / rel
        _, records = trainable_sequences(path, root, source=rel)
        truth = [(g.contig, g.start, g.end, g.strand) for g in read_genes(path)]
        out.append(TrainGenome(Path(rel).name, records, truth, w))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None, help="shared data folder (default: auto)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("_fitted.py")),
                    help="module to write (default: genoctx/heads/_fitted.py)")
    args = ap.parse_args(argv)
    genomes = load_train_genomes(args.data_root)
    print(f"{len(genomes)} train genomes: " + ", ".join(f"{g.name} ({g.weight:.2f})" for g in genomes))
    params = fit(genomes)
    write_fitted(params, Path(args.out),
                 f"Train genomes: {', '.join(g.name for g in genomes)}.")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
