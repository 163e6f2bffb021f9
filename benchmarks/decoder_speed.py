"""What the gene decoder alone costs: gene calls from the sequence, no model, no RNA finders.

Four cases on one genome (default: E. coli K-12, a train genome; nothing is scored, only timed):

* ``single`` — the whole genome, statistics self-trained on it (``call_genes_multi(...,
  procedure="single")``, what ``genoctx annotate --model none`` runs before the RNA finders);
* ``meta`` — ``--contigs`` contigs of 10 kb spread over the genome, each decoded on its own
  from the best model of the shipped bank, one process (``procedure="meta"``);
* ``draft`` — the genome's longest record cut into contigs of ``--draft-size`` bases (a
  fragmented draft assembly or a MAG), statistics self-trained on all of them together
  (``procedure="single"``): what costs per contig rather than per base shows here;
* ``circular`` — the whole genome with every record a circle (``circular=True``, what
  ``genoctx annotate --circular`` runs): what the second decode around each origin costs beside
  ``single``. A checkout without the option has no row for it.

Each repeat runs in a fresh process. ``--code DIR ...`` times other checkouts of genoctx too (a
``git worktree`` of an older commit, say), alternating with this one repeat by repeat so that
both see the same load on a shared machine, and checks that every checkout makes the same
calls (a digest of contig, start, end, strand, score, start codon and partial flags).
``--python-too`` times this checkout a second time without its compiled loops
(``genoctx/heads/_native.c``: the Python and numpy versions they replace); the ``C`` column
says which ran.

Run: ``python benchmarks/decoder_speed.py [--genome NAME] [--contigs 100] [--draft-size 5000]
[--repeats 3] [--code DIR ...] [--python-too] [--no-write]`` (writes the ``decoder-speed``
section of docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import time

REPO = _HERE.parent
SIZE = 10_000
CASES = ("single", "meta", "draft", "circular")


def _worker(args) -> None:
    """One repeat in this process: print {case: [wall s, CPU s, calls, digest]} as JSON."""
    import genoctx
    from genoctx.heads import decoder, orf_scorer
    from genoctx.heads.decoder import call_genes_multi
    from genoctx.io.annotation import read_sequences_genbank
    from genoctx.io.dataroot import resolve_data_root

    root = resolve_data_root(args.data_root)
    records = [(c, s) for c, s in read_sequences_genbank(
        root / "genomes" / "bacteria" / f"{args.genome}.gbff.gz") if len(s)]
    seq = max(records, key=lambda r: len(r[1]))[1]
    step = max(SIZE, len(seq) // args.contigs)
    contigs = [(f"c{i}", seq[i * step:i * step + SIZE]) for i in range(args.contigs)
               if i * step + SIZE <= len(seq)]
    draft = [(f"d{i}", seq[i:i + args.draft_size]) for i in range(0, len(seq), args.draft_size)]
    if args.no_native:  # the loops the compiled part replaces
        decoder._chain = orf_scorer._tree_sum = None
    out = {"genoctx": str(Path(genoctx.__file__).resolve().parent.parent),
           "native": getattr(decoder, "_chain", None) is not None}
    for case, recs, procedure in (("single", records, "single"), ("meta", contigs, "meta"),
                                  ("draft", draft, "single"), ("circular", records, "single")):
        extra = {"circular": True} if case == "circular" else {}
        t, c = time.perf_counter(), time.process_time()
        try:
            calls = call_genes_multi(recs, procedure=procedure, workers=1, **extra)
        except TypeError:  # a checkout from before the option
            out[case] = None
            continue
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        digest = hashlib.sha256(repr([(g.contig, g.start, g.end, g.strand, g.score,
                                       g.start_codon, g.partial) for g in calls]).encode())
        out[case] = [wall, cpu, len(calls), digest.hexdigest()[:16],
                     sum(len(s) for _, s in recs)]
    print(json.dumps(out))


def _commit(code: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return code.name


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--genome", default="Escherichia_coli_K12_MG1655")
    ap.add_argument("--contigs", type=int, default=100, help="10-kb contigs of the meta case")
    ap.add_argument("--draft-size", type=int, default=5000, help="contig size of the draft case")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--code", nargs="*", default=[], help="other genoctx checkouts to time")
    ap.add_argument("--python-too", action="store_true",
                    help="time this checkout without its compiled loops too")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-native", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args)

    from _report import md_table, section_head, write_section

    # (checkout, its compiled loops turned off)
    codes = ([(REPO, False)] + ([(REPO, True)] if args.python_too else [])
             + [(Path(c).resolve(), False) for c in args.code])
    runs: dict[tuple, list[dict]] = {c: [] for c in codes}
    forward = ["--genome", args.genome, "--contigs", str(args.contigs),
               "--draft-size", str(args.draft_size)]
    if args.data_root:
        forward += ["--data-root", args.data_root]
    for r in range(args.repeats):
        for code, off in codes if r % 2 == 0 else codes[::-1]:
            env = {**os.environ, "PYTHONPATH": str(code), "OMP_NUM_THREADS": "1"}
            done = subprocess.run([sys.executable, __file__, "--worker", *forward]
                                  + (["--no-native"] if off else []), env=env,
                                  capture_output=True, text=True, check=False)
            if done.returncode:
                sys.exit(f"{code}: {done.stderr.strip().splitlines()[-1:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            if Path(result["genoctx"]) != code:
                sys.exit(f"{code}: imported genoctx from {result['genoctx']} instead")
            runs[code, off].append(result)
            print(f"# {_commit(code)}{' (no C)' if off else ''} repeat {r + 1}: " + ", ".join(
                f"{k} {v[0]:.2f} s" for k, v in result.items() if isinstance(v, list)),
                flush=True)
    rows, digests = [], {}
    for key in codes:
        code = key[0]
        native = "yes" if all(x.get("native") for x in runs[key]) else "no"
        for case in CASES:
            if any(x.get(case) is None for x in runs[key]):
                continue
            walls = [x[case][0] for x in runs[key]]
            cpus = [x[case][1] for x in runs[key]]
            first = runs[key][0][case]
            digests.setdefault(case, set()).update(x[case][3] for x in runs[key])
            rows.append([_commit(code) + (" (this)" if code == REPO else ""), native, case,
                         f"{first[4] / 1e6:.2f}", first[2], f"{min(walls):.2f}",
                         f"{statistics.median(walls):.2f}", f"{min(cpus):.2f}",
                         f"{min(cpus) / (first[4] / 1e6):.2f}", first[3]])
    same = all(len(d) == 1 for d in digests.values())
    table = md_table(["code", "C", "case", "Mb", "calls", "wall s (min)", "wall s (median)",
                      "CPU s (min)", "CPU s per Mb", "calls digest"], rows)
    print(table)
    print("same calls in every run and checkout" if same else "CALLS DIFFER")
    if not args.no_write:
        write_section("decoder-speed", (
            section_head("Gene decoder alone: whole genome, 10-kb contigs, a fragmented draft",
                         __file__, argv)
            + f"Genome {args.genome} (train; only timed). `single`: the whole genome, "
            f"self-trained; `meta`: {args.contigs} contigs of 10 kb, each from the best model "
            f"of the bank; `draft`: the longest record cut into {args.draft_size:,}-bp "
            "contigs, self-trained on all of them together; `circular`: the whole genome, "
            "every record a circle (`--circular`); one process, no model, no RNA finders. "
            "`C`: whether the compiled loops ran (genoctx/heads/_native.c; `no`: the Python "
            "and numpy versions they replace). "
            f"{args.repeats} repeats, each in a fresh process, checkouts alternating. "
            + ("Every run of every checkout made the same calls (digest column)."
               if same else "**The checkouts' calls differ.**") + "\n\n" + table + "\n"))
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
