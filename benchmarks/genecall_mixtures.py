"""Mixtures of organisms in one input: how ``--procedure auto`` tells them, and what it gains.

Self-training (``single``) learns one set of statistics from all records, right for one genome
and wrong for a metagenome, whose contigs come from organisms of different composition. ``auto``
decodes each group of records on its own (``groups``) when their G+C falls in two groups at
least ``MIXTURE_GC_GAP`` apart, the smaller holding at least ``MIXTURE_MIN_SHARE`` of the bases
(:func:`genoctx.heads.decoder.is_mixture`), or their tetranucleotide profiles in two clusters
at least ``MIXTURE_TNF_SEPARATION`` apart (:func:`genoctx.heads.decoder.mixture_groups`). Two
tables, on train genomes only:

* each genome alone, whole and cut into 10-kb and 2-kb contigs: the widest G+C split of its
  records, the tetranucleotide separation of its best split in two and the groups
  ``mixture_groups`` makes (none may count as a mixture: one group);
* every pair of genera of the development genomes (and all of them together), ``--contigs`` contigs of ``--size`` bp of
  each (as genecall_metagenome.py): the split, what ``auto`` chose, and gene F1 of ``single``,
  ``meta``, ``groups`` (each group of :func:`genoctx.heads.decoder.mixture_groups` decoded
  on its own) and ``auto`` (truth and matching as in genecall_fragments.py). The bank models
  of both genera are left out (Escherichia and Shigella count as one, as in
  genecall_regions.py ``--held-out``): with them, ``meta`` would pick each genome's own model.

Run: ``python benchmarks/genecall_mixtures.py [--size 10000] [--contigs 100] [--no-write]``
(writes the ``genecall-mixtures`` section of docs/benchmarks.md; about 11 minutes on 2 cores).
``--uneven N,N,...`` instead mixes the development genomes at uneven abundance, N contigs of
each, and writes the ``genecall-mixtures-uneven`` section (about 2 minutes).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

from _report import machine, md_table, write_section
from genecall import parser
from genecall_fragments import fragment
from genecall_metagenome import mock_metagenome
from genecall_regions import TRAIN_DEV, genus

from genoctx.eval.metrics import gene_metrics
from genoctx.heads.annotate import call_bacterial
from genoctx.heads.decoder import (
    MIXTURE_GC_GAP,
    MIXTURE_MIN_SHARE,
    MIXTURE_TNF_MIN_RECORDS,
    MIXTURE_TNF_SEPARATION,
    auto_procedure,
    gc_groups,
    is_mixture,
    mixture_groups,
    tetranucleotide_separation,
)
from genoctx.heads.meta_models import default_bank
from genoctx.io.annotation import read_sequences_genbank
from genoctx.io.dataroot import load_manifest, resolve_data_root


def _name(rel: str) -> str:
    return Path(rel).name.split(".gbff")[0]


def main(argv=None) -> None:
    ap = parser(__doc__)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--contigs", type=int, default=100, help="contigs per genome")
    ap.add_argument("--uneven", default=None, metavar="N,N,...",
                    help="instead: one input of the development genomes with these numbers of "
                    "contigs each (in TRAIN_DEV order), e.g. 300,150,60,30,100,200; writes "
                    "the genecall-mixtures-uneven section")
    args = ap.parse_args(argv)
    root = resolve_data_root(args.data_root)
    if args.uneven:
        return uneven(root, args, [int(k) for k in args.uneven.split(",")])
    manifest = load_manifest(root)
    train = sorted(rel for rel, e in manifest.items()
                   if e.role == "train" and rel.startswith("genomes/bacteria/")
                   and rel.endswith(".gbff.gz"))

    alone = []
    for rel in train:
        records = [(c, s) for c, s in read_sequences_genbank(root / rel) if len(s)]
        for size in (None, 10_000, 2_000):
            cut = records if size is None else fragment(records, [], size)[0]
            g = gc_groups(cut)
            t = tetranucleotide_separation(cut)
            row = [_name(rel), "whole" if size is None else f"{size:,}", len(cut),
                   "-" if g is None else f"{g[0]:.3f} / {g[1]:.3f}",
                   "-" if g is None else f"{g[1] - g[0]:.3f}",
                   "-" if g is None else f"{g[2]:.3f}", "yes" if is_mixture(cut) else "no",
                   "-" if t is None else f"{t[0]:.2f}", len(mixture_groups(cut))]
            print("\t".join(map(str, row)), flush=True)
            alone.append(row)

    pairs = []
    full_bank = default_bank()
    for a, b in itertools.combinations(TRAIN_DEV, 2):
        contigs, truth = mock_metagenome(root, [a, b], args.size, args.contigs)
        bank = tuple(m for m in full_bank if genus(m.name) not in (genus(a), genus(b)))
        g = gc_groups(contigs)
        f1 = {}
        for proc in ("single", "meta", "groups"):
            calls = call_bacterial(contigs, procedure=proc, bank=bank)[0]
            f1[proc] = gene_metrics([c for c in calls if not c.partial[1]], truth).f1
        chosen = auto_procedure(contigs)
        row = [f"{_name(a)} + {_name(b)}", f"{g[0]:.3f} / {g[1]:.3f}", f"{g[1] - g[0]:.3f}",
               f"{g[2]:.3f}", chosen, len(mixture_groups(contigs)), f"{f1['single']:.4f}",
               f"{f1['meta']:.4f}", f"{f1['groups']:.4f}", f"{f1[chosen]:.4f}"]
        print("\t".join(map(str, row)), flush=True)
        pairs.append(row)

    # all development genomes in one input: meta is held out genome by genome (it decodes each
    # record on its own, so each genome's contigs take the bank without its genus)
    contigs, truth = mock_metagenome(root, list(TRAIN_DEV), args.size, args.contigs)
    f1, calls_meta = {}, []
    for rel in TRAIN_DEV:
        tag = _name(rel) + "|"
        bank = tuple(m for m in full_bank if genus(m.name) != genus(rel))
        calls_meta += call_bacterial([c for c in contigs if c[0].startswith(tag)],
                                     procedure="meta", bank=bank)[0]
    for proc in ("single", "meta", "groups"):
        calls = calls_meta if proc == "meta" else call_bacterial(contigs, procedure=proc)[0]
        m = gene_metrics([c for c in calls if not c.partial[1]], truth)
        f1[proc] = (m.sensitivity, m.precision, m.f1)
    groups = mixture_groups(contigs)
    tags = [_name(rel) + "|" for rel in TRAIN_DEV]
    purity = sum(max(sum(contigs[i][0].startswith(t) for i in g) for t in tags)
                 for g in groups) / len(contigs)
    everything = [[proc if proc != "meta" else "meta (bank without the genome's genus)",
                   f"{f1[proc][0]:.4f}", f"{f1[proc][1]:.4f}", f"{f1[proc][2]:.4f}"]
                  for proc in ("single", "meta", "groups")]
    print(everything, len(groups), purity, flush=True)

    body = (
        "## Mixtures of organisms: what `--procedure auto` does with them\n\n"
        f"Command: `python benchmarks/genecall_mixtures.py --size {args.size} "
        f"--contigs {args.contigs}`\n\n"
        f"Machine: {machine()}\n\n"
        "G+C groups = the least-squares split of the records into two by G+C (length-weighted; "
        f"records of 1 kb and more). A mixture: groups at least {MIXTURE_GC_GAP} apart, the "
        f"smaller holding at least {MIXTURE_MIN_SHARE} of the bases; `auto` then decodes each "
        "group on its own (groups: also split where the records' tetranucleotide profiles form two "
        f"clusters at least {MIXTURE_TNF_SEPARATION} apart, from {MIXTURE_TNF_MIN_RECORDS} "
        "records, and again while a group is itself a mixture by either rule; a group "
        "self-trained from 150 kb, else record by record from the bank), else self-trains on "
        "all together (single) from 150 kb in all. Train genomes only; the bank (meta, and "
        "groups under 150 kb) without models of either genome's genus.\n\n"
        "Each train genome alone (none may read as a mixture; tetranucleotide separation of "
        "the best 2-means split of all its records):\n\n"
        + md_table(["genome", "contigs of", "records", "G+C groups", "gap", "smaller share",
                    "mixture by G+C", "tetranucleotide separation", "groups"], alone)
        + f"\n\nTwo development genomes mixed, {args.contigs} contigs of {args.size:,} bp of "
        "each; gene F1 (contig + strand + stop; calls off a contig's 3' end left out):\n\n"
        + md_table(["genomes", "G+C groups", "gap", "smaller share", "auto chose", "groups",
                    "F1 single", "F1 meta", "F1 groups", "F1 auto"], pairs)
        + f"\n\nAll {len(TRAIN_DEV)} development genomes mixed, {args.contigs} contigs of "
        f"{args.size:,} bp of each ({len(contigs)} records): `auto` takes {auto_procedure(contigs)}, "
        f"{len(groups)} groups, {purity:.3f} of the records in a group whose majority genome is "
        "their own:\n\n"
        + md_table(["procedure", "sensitivity", "precision", "F1"], everything))
    if not args.no_write:
        write_section("genecall-mixtures", body)


def uneven(root, args, counts: list[int]) -> None:
    """One input of the development genomes at uneven abundance: gene F1 of single, meta (the
    bank without each genome's genus, genome by genome) and auto, and what each group holds."""
    if len(counts) != len(TRAIN_DEV):
        sys.exit(f"--uneven needs {len(TRAIN_DEV)} numbers, one per development genome")
    contigs, truth = [], []
    for rel, k in zip(TRAIN_DEV, counts):
        c, t = mock_metagenome(root, [rel], args.size, k)
        contigs += c
        truth += t
    full_bank, meta = default_bank(), []
    for rel in TRAIN_DEV:
        bank = tuple(m for m in full_bank if genus(m.name) != genus(rel))
        meta += call_bacterial([c for c in contigs if c[0].startswith(_name(rel) + "|")],
                               procedure="meta", bank=bank)[0]
    rows = []
    for name, calls in (("single", call_bacterial(contigs, procedure="single")[0]),
                        ("meta (bank without the genome's genus)", meta),
                        (f"auto ({auto_procedure(contigs)})", call_bacterial(contigs)[0])):
        m = gene_metrics([c for c in calls if not c.partial[1]], truth)
        rows.append([name, f"{m.sensitivity:.4f}", f"{m.precision:.4f}", f"{m.f1:.4f}"])
        print("\t".join(rows[-1]), flush=True)
    held = []
    for k, g in enumerate(mixture_groups(contigs), 1):
        who = {}
        for i in g:
            who[contigs[i][0].split("|")[0]] = who.get(contigs[i][0].split("|")[0], 0) + 1
        held.append([k, len(g), ", ".join(f"{n} {v}" for n, v in sorted(who.items(),
                                                                        key=lambda x: -x[1]))])
    body = (
        "## Mixtures at uneven abundance: what `--procedure auto` does with them\n\n"
        f"Command: `python benchmarks/genecall_mixtures.py --size {args.size} --uneven "
        f"{','.join(map(str, counts))}`\n\n"
        f"Machine: {machine()}\n\n"
        f"One input of {len(contigs)} contigs of {args.size:,} bp: "
        + ", ".join(f"{k} of {_name(rel)}" for rel, k in zip(TRAIN_DEV, counts))
        + " (train genomes). Truth and matching as in the genecall-mixtures section.\n\n"
        + md_table(["procedure", "sensitivity", "precision", "F1"], rows)
        + "\n\nThe groups `auto` decodes (`mixture_groups`), and whose contigs each holds:\n\n"
        + md_table(["group", "records", "contigs of"], held))
    if not args.no_write:
        write_section("genecall-mixtures-uneven", body)


if __name__ == "__main__":
    main()
