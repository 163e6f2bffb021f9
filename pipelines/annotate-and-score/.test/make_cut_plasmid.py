"""Write the .test's opened plasmid: pPCP1 (circular) opened at another point of its circle.

An assembler may start a circular contig anywhere. Opened inside the gene at 4,815-5,888 (-
strand), that gene runs off both ends of the sequence: the ``closed`` column of the sample sheet
must keep every call inside, while an open run reports it partial at both ends.

    python .test/make_cut_plasmid.py --out .test/resources/pPCP1_cut.fa
"""

from __future__ import annotations

import argparse
from pathlib import Path

EXAMPLE = "examples/Yersinia_pestis_pPCP1_NC_005816.fna"
CUT = 5300  # 0-based: the new first base


def main(argv: list[str] | None = None) -> None:
    from genoctx.io.dataroot import resolve_data_root
    from genoctx.io.fasta import iter_records

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None, help="default: $GENOCTX_DATA_ROOT or ../shared/data")
    ap.add_argument("--out", type=Path, required=True, help="FASTA to write")
    args = ap.parse_args(argv)
    (name, seq), = list(iter_records(resolve_data_root(args.data_root) / EXAMPLE))
    seq = seq.decode() if isinstance(seq, bytes) else seq
    opened = seq[CUT:] + seq[:CUT]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    lines = [opened[i:i + 80] for i in range(0, len(opened), 80)]
    # circular=true as Unicycler writes it: the pPCP1ring sample reads it (circular "declared")
    args.out.write_text(f">{name.split()[0]}_cut{CUT} pPCP1 opened at base {CUT + 1} "
                        "circular=true\n"
                        + "\n".join(lines) + "\n")
    print(f"wrote {args.out}: {len(opened)} bp")


if __name__ == "__main__":
    main()
