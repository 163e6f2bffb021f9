"""Where genoctx and Prodigal disagree on the genomes of ``genecall_unseen.py``, and why.

``genecall_unseen.py`` counts the disagreements; this breaks them down on whole genomes, with
Prodigal's calls (pyrodigal trained on the genome) as the reference and a match on contig +
strand + stop:

- Prodigal's genes genoctx does not call, and how many of them overlap an RNA gene that
  genoctx's RNA finders (ARAGORN, barrnap) call: ``genoctx annotate`` drops CDS calls over RNA
  genes, as curated annotation does, and Prodigal has no RNA finder (its ORFs inside 16S and
  23S genes are the usual case);
- genoctx's calls Prodigal does not make;
- what the cross-genome ORF scorer (``genoctx.heads.orf_scorer``) changes: the calls made with
  it and not without (``DecoderParams(orf_scorer=False)``) and the reverse; of those it adds,
  how many are Prodigal's, how many overlap no Prodigal gene at all, their median length and
  median score (the decoder's calibrated probability).

genoctx = ``call_bacterial`` (what ``genoctx annotate --model none`` writes).

Run: ``python benchmarks/genecall_disagreements.py [--cache DIR] [--data-root DIR] [--no-write]``
(writes the ``genecall-disagreements`` section of docs/benchmarks.md; about 3 minutes).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Put this folder last on the path: a sibling script named like a stdlib module (tokenize.py)
# must not shadow the standard library.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import numpy as np
from _report import md_table, section_head, write_section
from genecall_unseen import genome_args, genomes

from genoctx.eval.benchmarks.annotation_bacteria import prodigal_calls
from genoctx.eval.metrics import stop_key
from genoctx.heads.annotate import call_bacterial
from genoctx.heads.decoder import DecoderParams


def overlaps(g, others_by_contig: dict) -> bool:
    return any(o.start < g.end and g.start < o.end for o in others_by_contig.get(g.contig, ()))


def by_contig(items) -> dict:
    out: dict = {}
    for x in items:
        out.setdefault(x.contig, []).append(x)
    return out


def breakdown(records) -> dict:
    """The disagreement counts of one genome (the keys are the table's columns)."""
    ref = prodigal_calls(records)
    calls, rnas = call_bacterial(records)
    bare, _ = call_bacterial(records, params=DecoderParams(orf_scorer=False))
    calls = [g for g in calls if not g.partial[1]]  # no stop codon: no stop to match
    bare = [g for g in bare if not g.partial[1]]
    ref_keys = {stop_key(g) for g in ref}
    call_keys, bare_keys = {stop_key(g) for g in calls}, {stop_key(g) for g in bare}
    missed = [g for g in ref if stop_key(g) not in call_keys]
    added = [g for g in calls if stop_key(g) not in bare_keys]
    ref_by, rna_by = by_contig(ref), by_contig(rnas or [])
    return {
        "Prodigal genes": len(ref),
        "not called": len(missed),
        "of which over an RNA gene": sum(overlaps(g, rna_by) for g in missed),
        "calls": len(calls),
        "not Prodigal's": sum(stop_key(g) not in ref_keys for g in calls),
        "scorer adds": len(added),
        "scorer removes": sum(stop_key(g) not in call_keys for g in bare),
        "added, Prodigal's": sum(stop_key(g) in ref_keys for g in added),
        "added, over no Prodigal gene": sum(not overlaps(g, ref_by) for g in added),
        "added, median bp": int(np.median([g.end - g.start for g in added])) if added else "",
        "added, median score": f"{np.median([g.score for g in added]):.2f}" if added else "",
    }


def main(argv=None) -> None:
    args = genome_args(__doc__).parse_args(argv)
    rows, headers = [], None
    for name, _genus, role, records in genomes(Path(args.cache), args.data_root):
        counts = breakdown(records)
        headers = ["genome", "role", *counts]
        rows.append([name, role, *counts.values()])
        print("\t".join(map(str, rows[-1])), flush=True)
    body = (section_head("Gene calling: where genoctx and Prodigal disagree on whole genomes",
                         __file__, argv)
            + "Reference: Prodigal's calls on the whole genome (pyrodigal, trained on it); match "
            "= contig + strand + stop; the genomes of the `genecall-unseen` section. `not "
            "called`: Prodigal's genes genoctx (`call_bacterial`, as `genoctx annotate --model "
            "none`) does not call; `over an RNA gene`: those overlapping a tRNA, tmRNA or rRNA "
            "gene genoctx's RNA finders call (genoctx drops CDS calls there; Prodigal finds no "
            "RNA genes). `scorer adds` / `removes`: calls made with the cross-genome ORF scorer "
            "and not without it (`DecoderParams(orf_scorer=False)`) / the reverse; of those it "
            "adds: how many are Prodigal's, how many overlap no Prodigal gene, their median "
            "length and median score.\n\n" + md_table(headers, rows))
    if not args.no_write:
        write_section("genecall-disagreements", body)


if __name__ == "__main__":
    main()
