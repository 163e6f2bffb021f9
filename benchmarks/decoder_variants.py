"""Decoder ablations on the TRAIN genomes of decoder_dev.py: one variant per run, mean at the end.

Usage: ``python benchmarks/decoder_variants.py VARIANT [GENOME ...]`` where VARIANT is ``base``
(the shipped decoder) or comma-separated ``key=value`` settings:

* ``gene_bias=X`` — the gene log-odds bias (shipped: 0.0);
* ``share=X`` — share of the codon-pair score in the coding score (shipped:
  decoder.PAIR_SHARE, 0.75; 0.5 before the fourth revision);
* ``table=prodigal`` — use Prodigal's own trained dicodon table (pyrodigal
  ``TrainingInfo.coding_statistics``) as the codon-pair score: a diagnostic, never shipped;
* ``dc=exact`` — Prodigal's unsmoothed codon-pair estimate (log p/q, −5 where unseen, clip ±5);
* ``seedpair=1`` — fit the codon-pair table once, on the GC-frame seed genes;
* ``rounds=N`` — training rounds after the seed (shipped: 2);
* ``upstream=X`` — weight of upstream composition in start choice, as a share of the start
  weight (shipped: decoder.UPSTREAM_SHARE);
* ``start_weight=X`` — the start weight (shipped: decoder.START_WEIGHT);
* ``starts=N`` — best starts of each ORF that enter the dynamic programme (shipped:
  DecoderParams.starts_per_orf);
* ``inner=M`` — an inner start also enters the programme with its own gene log-odds (the coding
  it gives up to a longer start not counted) less M nats, capped 1 nat below its ORF's best
  start: calls a shorter gene when every better start is blocked by a neighbour;
* ``start_thresh=X`` — train the start model only on chosen genes whose coding part is at
  least X nats (Prodigal trains its starts on ORFs scoring ≥ 35);
* ``length_weight=X`` — weight of the ORF length's log-odds in the coding part (shipped:
  decoder.LENGTH_WEIGHT; Prodigal's is 1);
* ``same_overlap=N``, ``tail_overlap=N``, ``head_overlap=N`` — the programme's overlap limits in
  bp for consecutive genes on one strand, convergent (3′ ends facing) and divergent (5′ ends
  facing) genes (shipped: DecoderParams.max_same_overlap 60, max_tail_overlap 200,
  max_head_overlap 0);
* ``down=K`` — score the composition also over the K bases after the start codon (the start
  model's position table grows; the universal prior, fitted for the shipped positions, is
  left out);
* ``noprior=1`` — without the universal start prior (its control);
* ``ext=X`` — add X nats per codon to every candidate's coding part (favours longer starts
  and longer genes);
* ``rbs=fixed`` — each start's RBS class chosen as Prodigal does: the best exact
  Shine–Dalgarno piece and the best one-mismatch piece by a fixed rank (longer first; spacer
  5–10, then 11–12, 3–4, 13–15 bp), then the higher-weighted of those two and "no motif"
  (shipped: the highest-weighted of every class present, which lets a class whose weight fell
  below another present class drop out for good);
* ``ups=gc`` — upstream composition scored against the genome's G+C (Prodigal's
  background: A and T each (1 − G+C) / 2, C and G each G+C / 2) instead of against the bases
  upstream of every candidate start;
* ``types=prodigal`` — the start-codon weights (ATG, GTG, TTG) that Prodigal (pyrodigal)
  trains on the genome instead of the decoder's own: a diagnostic, never shipped;
* ``mm=inner`` — one-mismatch Shine–Dalgarno pieces only with the mismatch away from both
  ends by two bases (Prodigal's rule: the middle base of a 5-mer, the two middle bases of a
  6-mer; shipped: any base but the first and last);
* ``tweak=W`` — after decoding, Prodigal's last step for close starts: a called gene moves to
  another start of its ORF at most W bp away when that start's codon type + RBS evidence is
  higher (over so few codons the coding score is taken to say nothing); a longer start only
  when its extra bases overlap no other call;
* ``pair_table=calls`` — the codon-pair table refitted on the called genes every training
  round (the second revision; shipped: ``seed``, counted once on the GC-frame programme's
  genes, ``GenomeDecoder.seed_pair_llr``);
* ``start_training=calls`` — the start model trained over the ORFs of the called genes (the
  second revision; shipped: ``orfs``, every ORF whose best start scores at least 35 nats,
  ``start_model.train_start_model_orfs``). The second revision is
  ``pair_table=calls,start_training=calls,share=0.5``;
* ``scorer=0`` — without the cross-genome ORF scorer (heads.orf_scorer). With it (the default)
  the numbers on these genomes are in-sample for the scorer, which was fitted on them; its
  held-out effect is measured by decoder_orf_classifier.py;
* ``rna_overlap=N`` — then drop calls overlapping an RNA gene (ARAGORN, barrnap) by ≥ N bases,
  as ``genoctx annotate`` does with N = heads.rna_genes.CDS_RNA_OVERLAP (``base`` does not).

Prints sensitivity, precision, F1 and start agreement per genome (gene level: strand + stop) and
their mean. Refuses genomes that are not train-role.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
os.environ.setdefault("OMP_NUM_THREADS", "1")

import dataclasses
import time

import numpy as np
from decoder_dev import GENOMES

from genoctx.eval.metrics import gene_metrics
from genoctx.heads import codon_model as cm
from genoctx.heads import decoder as dec
from genoctx.io.annotation import read_genes, read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root

COLS = ("sensitivity", "precision", "f1", "start_agreement")


def prodigal_exact(counts_K: np.ndarray, background_K: np.ndarray, clip: float = 5.0) -> np.ndarray:
    """Prodigal's codon-pair table: log(p / q), −5 where a pair is never seen in genes."""
    p = counts_K / max(counts_K.sum(), 1)
    q = background_K / background_K.sum()
    with np.errstate(divide="ignore"):
        v = np.where(p > 0, np.log(np.maximum(p, 1e-300) / np.maximum(q, 1e-300)), -5.0)
    return np.clip(np.where(q > 0, v, 0.0), -clip, clip)


def ours_to_prodigal_index() -> np.ndarray:
    """Prodigal's hexamer index of each genoctx hexamer id (genoctx: A0 C1 G2 T3, first base
    most significant; Prodigal: A0 G1 C2 T3, first base least significant)."""
    ii = np.arange(cm.NUM_KMERS)
    code = np.array([0, 2, 1, 3])
    return sum(code[(ii // 4 ** (5 - j)) % 4] * 4 ** j for j in range(6))


class VariantDecoder(dec.GenomeDecoder):
    """GenomeDecoder whose codon-pair table can be fixed (Prodigal's) or frozen after the seed,
    and whose inner starts can be scored on their own (``inner``)."""

    fixed_pairs: np.ndarray | None = None
    freeze_after_seed = False
    share = dec.PAIR_SHARE
    inner: float | None = None

    def scores(self, si):
        choice, dp, credit = super().scores(si)
        if self.inner is None:
            return choice, dp, credit
        s = self.strands[si]
        gene, parts = self.features(si)
        gene = gene.copy()  # the decoder's cached features are read-only
        c = s.coding()
        lf = dec.LENGTH_WEIGHT * cm.length_factor((s.cand.end - s.cand.start) / 3.0, self.gc)
        c = np.where((lf > 3.0) & (c < 0.5 * lf), 0.5 * lf, c) + lf
        nw = dec.START_PARTS.index("neural")
        gene[:, 0] = (np.where(c < 0, c - dec.NEGATIVE_CODING, c)
                      + self.params.start_weights[nw] * parts[:, nw])
        wg = np.asarray(self.params.gene_weights)
        own = gene @ wg[:-1] + wg[-1] - self.inner
        best = dec._best_per_orf(s.cand, choice, 1)
        _, grp = np.unique(s.cand.orf, return_inverse=True)
        b = best[grp]
        alt = np.maximum(dp, np.minimum(own, dp[b] - 1.0))
        return choice, np.where(np.arange(len(dp)) == b, dp, alt), credit

    def decode(self):
        if self.inner is None:
            return super().decode()
        per_strand = []
        for si, s in enumerate(self.strands):
            choice, dp, credit = self.scores(si)
            k = self.params.starts_per_orf
            keep = np.union1d(dec._best_per_orf(s.cand, choice, k),
                              dec._best_per_orf(s.cand, dp, k))
            per_strand.append((keep, dp[keep], credit[keep]))
        return self._decode(per_strand, dec.LINK_WEIGHT)

    start_thresh: float | None = None
    genome_gc: float | None = None  # read by the ``ups=gc`` start-model fit
    fixed_types: np.ndarray | None = None

    def fit_starts(self, chosen):
        VariantDecoder.genome_gc = self.gc
        if self.start_thresh is not None:
            chosen = [c[self.coding_part(si)[c] >= self.start_thresh]
                      for si, c in enumerate(chosen)]
        super().fit_starts(chosen)
        if self.fixed_types is not None:
            self.start_model.type_llr[:3] = self.fixed_types

    def fit_coding(self, chosen):
        super().fit_coding(chosen)
        if self.freeze_after_seed:
            if getattr(self, "_frozen", None) is None:
                self._frozen = self.pair_llr
            pairs = self._frozen
        else:
            pairs = self.fixed_pairs
        if pairs is None and self.share == dec.PAIR_SHARE:
            return
        pairs = self.pair_llr if pairs is None else pairs
        for s in self.strands:
            b_QL = self.coding_model.base_scores(s.kidx, s.valid)
            s.set_codon_scores([(1 - self.share) * cm.codon_sum(b_QL, f)
                                + self.share * cm.dicodon_codon_scores(pairs, s.kidx, s.valid, f)
                                for f in range(3)])


def tweak_close_starts(d: dec.GenomeDecoder, chosen: list[np.ndarray], window: int
                       ) -> list[np.ndarray]:
    """``chosen`` (candidate indices per strand) with each gene moved to the start of its ORF
    within ``window`` bp whose weighted codon-type + RBS evidence is highest, if that beats its
    own; a longer start only when its extra bases overlap no other chosen gene."""
    from genoctx.heads.orfs import EDGE_START, to_forward

    sw = np.asarray(d.params.start_weights)
    spans: dict[str, list[tuple[int, int]]] = {}
    for si, c in enumerate(chosen):
        s = d.strands[si]
        lo, hi = to_forward(s.cand.start[c], s.cand.end[c], s.length, s.strand)
        spans.setdefault(s.contig, []).extend(zip(lo.tolist(), hi.tolist()))
    out = []
    for si, c in enumerate(chosen):
        s = d.strands[si]
        cand = s.cand
        _, parts = d.features(si)
        signal = sw[1] * parts[:, 1] + sw[2] * parts[:, 2]
        new = np.array(c, copy=True)
        for n, i in enumerate(c.tolist()):
            if cand.stype[i] == EDGE_START:
                continue
            a = np.searchsorted(cand.orf, cand.orf[i], "left")
            b = np.searchsorted(cand.orf, cand.orf[i], "right")
            alt = np.arange(a, b)
            alt = alt[(alt != i) & (np.abs(cand.start[alt] - cand.start[i]) <= window)
                      & (cand.stype[alt] != EDGE_START)]
            if not len(alt):
                continue
            j = int(alt[np.argmax(signal[alt])])
            if signal[j] <= signal[i]:
                continue
            if cand.start[j] < cand.start[i]:  # longer: its extra bases must overlap nothing
                lo, hi = to_forward(np.array([cand.start[j]]), np.array([cand.start[i]]),
                                    s.length, s.strand)
                if any(x < hi[0] and lo[0] < y for x, y in spans[s.contig]):
                    continue
            new[n] = j
        out.append(new)
    return out


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        sys.exit(__doc__)
    variant, genomes = argv[0], argv[1:] or list(GENOMES)
    opts = dict(kv.partition("=")[::2] for kv in variant.split(",")) if variant != "base" else {}
    params = dec.DecoderParams()
    if "gene_bias" in opts:
        gw = list(params.gene_weights)
        gw[-1] = float(opts["gene_bias"])
        params = dataclasses.replace(params, gene_weights=tuple(gw))
    if "upstream" in opts or "start_weight" in opts:
        w = float(opts.get("start_weight", dec.START_WEIGHT))
        up = float(opts.get("upstream", dec.UPSTREAM_SHARE))
        sw = list(params.start_weights)
        sw[1:4] = [w, w, up * w]
        params = dataclasses.replace(params, start_weights=tuple(sw))
    if "rounds" in opts:
        params = dataclasses.replace(params, train_rounds=int(opts["rounds"]))
    if "starts" in opts:
        params = dataclasses.replace(params, starts_per_orf=int(opts["starts"]))
    for key, field in (("same_overlap", "max_same_overlap"), ("tail_overlap", "max_tail_overlap"),
                       ("head_overlap", "max_head_overlap")):
        if key in opts:
            params = dataclasses.replace(params, **{field: int(opts[key])})
    if "down" in opts:  # composition also over the K bases after the start codon
        from genoctx.heads import start_model as sm

        sm.PWM_OFFSETS = np.concatenate([sm.PWM_OFFSETS, np.arange(3, 3 + int(opts["down"]))])
    if opts.get("noprior") == "1" or "down" in opts:  # the universal prior has 32 positions
        params = dataclasses.replace(params, start_prior={})
    if "ext" in opts:  # favour longer starts: + X nats per codon in the coding part
        base_part, per_codon = dec.coding_part, float(opts["ext"])
        dec.coding_part = lambda cand, coding, gc, table=11: (
            base_part(cand, coding, gc, table) + per_codon * (cand.end - cand.start) / 3.0)
    if opts.get("rbs") == "fixed":
        from genoctx.heads import start_model as sm

        shipped = sm.rbs_classes

        def fixed_rank(pres_NR, starts, weights):
            pres = pres_NR.copy()
            for kinds in ([k for k, (_, mm) in enumerate(sm.MOTIF_KINDS) if mm == 0],
                          [k for k, (_, mm) in enumerate(sm.MOTIF_KINDS) if mm == 1]):
                cols = [1 + k * len(sm.SPACER_BINS) + b
                        for k in sorted(kinds, key=lambda k: -sm.MOTIF_KINDS[k][0])
                        for b in (1, 2, 0, 3)]  # spacer 5-10, 11-12, 3-4, 13-15
                sub = pres[:, cols]
                first = np.where(sub.any(1), np.argmax(sub, 1), -1)
                keep = np.zeros_like(sub)
                keep[np.flatnonzero(first >= 0), first[first >= 0]] = True
                pres[:, cols] = keep
            return shipped(pres, starts, weights)

        sm.rbs_classes = dec.rbs_classes = fixed_rank
    if opts.get("ups") == "gc":
        from genoctx.heads import start_model as sm

        shipped_fit = sm.fit_start_model

        def gc_background(counts, prior, strength):
            if counts is not None and VariantDecoder.genome_gc is not None:
                gc = VariantDecoder.genome_gc
                share = np.array([(1 - gc) / 2, gc / 2, gc / 2, (1 - gc) / 2, 0.0])
                counts = dataclasses.replace(
                    counts, pwm_all=counts.pwm_all[:, :4].sum(1, keepdims=True) * share)
            return shipped_fit(counts, prior, strength)

        sm.fit_start_model = gc_background
    if opts.get("mm") == "inner":
        from genoctx.heads import start_model as sm

        sm._MOTIF_TABLES[:] = sm._motif_tables(edge=2)  # motif_hits reads the list in place
    if opts.get("scorer") == "0":
        params = dataclasses.replace(params, orf_scorer=False)
    if "share" in opts:
        VariantDecoder.share = float(opts["share"])
    if opts.get("dc") == "exact":
        dec.fit_dicodon = prodigal_exact  # the name GenomeDecoder.fit_coding calls
    VariantDecoder.freeze_after_seed = opts.get("seedpair") == "1"
    for key in ("pair_table", "start_training"):
        if key in opts:
            params = dataclasses.replace(params, **{key: opts[key]})
    VariantDecoder.inner = float(opts["inner"]) if "inner" in opts else None
    if "length_weight" in opts:
        dec.LENGTH_WEIGHT = float(opts["length_weight"])  # read by decoder.coding_part
    VariantDecoder.start_thresh = (float(opts["start_thresh"]) if "start_thresh" in opts
                                   else None)
    root = resolve_data_root(None)
    manifest = load_manifest(root)
    sums = np.zeros(len(COLS))
    for name in genomes:
        rel = f"genomes/bacteria/{name}.gbff.gz"
        if manifest[rel].role != "train":
            sys.exit(f"{name} is not a train genome; ablate on train genomes only")
        records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        truth = read_genes(root / rel)
        VariantDecoder.fixed_pairs = VariantDecoder.fixed_types = None
        if "prodigal" in (opts.get("table"), opts.get("types")):
            import pyrodigal

            info = pyrodigal.GeneFinder(closed=False).train(*[s for _, s in records])
            if opts.get("table") == "prodigal":
                table = np.asarray(info.coding_statistics)
                VariantDecoder.fixed_pairs = table[ours_to_prodigal_index()]
            if opts.get("types") == "prodigal":
                VariantDecoder.fixed_types = np.asarray(info.type_weights)
        t0 = time.process_time()
        d = VariantDecoder(records, None, params)
        chosen = d.train()
        if "tweak" in opts:
            chosen = tweak_close_starts(d, chosen, int(opts["tweak"]))
        calls = d.calls(chosen)
        if "rna_overlap" in opts:
            from genoctx.heads.rna_genes import drop_cds_in_rna, find_rna_genes

            calls = drop_cds_in_rna(calls, find_rna_genes(records), int(opts["rna_overlap"]))
        m = gene_metrics(calls, truth).as_dict()
        row = np.array([m[c] for c in COLS])
        sums += row
        print(f"{variant}\t{name}\t" + "\t".join(f"{x:.4f}" for x in row)
              + f"\t{time.process_time() - t0:.1f}s", flush=True)
    print(f"{variant}\tMEAN\t" + "\t".join(f"{x / len(genomes):.4f}" for x in sums))


if __name__ == "__main__":
    main()
