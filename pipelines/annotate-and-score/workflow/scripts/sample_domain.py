"""Name one sample's domain from the rRNA genes of its whole genome (rule ``sample_domain``).

``genoctx annotate`` decodes an archaeon without the ORF scorer (fitted on bacteria), and
names the domain from the complete 16S/23S genes it finds. A shard sees only its part of the
genome: a chunk of a long chromosome or a pack of contigs may hold no rRNA gene, and would be
decoded as a bacterium's while the shard beside it, holding the rRNA operon, is decoded as an
archaeon's. This rule searches the whole genome once (barrnap's profiles, as ``genoctx
annotate``) and writes ``archaea``, ``bacteria`` or ``auto`` (no complete 16S or 23S gene, or
genes of both domains, as in a mixture of organisms: each shard then decides from its own) to
its output; ``annotate_shard`` passes it on as ``--domain``.
"""

# No `from __future__` imports: Snakemake runs this file after a preamble of its own.

import sys
from pathlib import Path


def sample_domain(fasta: str | Path, threads: int | None = None) -> str:
    """``archaea``, ``bacteria`` or ``auto`` for the genome in ``fasta`` (see the module)."""
    from genoctx.heads.rna_genes import find_rrna, rrna_domain
    from genoctx.io.fasta import iter_records

    found = find_rrna(list(iter_records(fasta)), threads=threads)
    return rrna_domain(found) or "auto"


def main(smk) -> None:
    domain = sample_domain(smk.input.fasta, threads=smk.threads)
    Path(smk.output[0]).write_text(domain + "\n")
    print(f"{smk.input.fasta}: domain {domain}", file=sys.stderr)


if "snakemake" in globals():
    from _smk import run_logged

    run_logged(main, snakemake)  # noqa: F821 (injected by Snakemake)
