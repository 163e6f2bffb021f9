"""Per-base annotation classes predicted by the annotation head (fixed ids; checkpoints depend on them).

One softmax over these classes per base. Coding bases carry their strand and codon position
(phase = position of the base within its codon, counted along the gene's own strand: 0 is the
first base of a codon). Where features overlap, the label follows the priority
CDS > rRNA > tRNA > ncRNA > UTR > intron > intergenic (overlapping CDS on both strands keep the
one on the + strand; such bases are rare and the gene decoder handles overlaps itself).
"""

from __future__ import annotations

CLASSES: tuple[str, ...] = (
    "intergenic",
    "CDS+0", "CDS+1", "CDS+2",      # + strand coding, codon position 0/1/2
    "CDS-0", "CDS-1", "CDS-2",      # - strand coding, codon position along the - strand
    "intron+", "intron-",
    "UTR+", "UTR-",
    "tRNA+", "tRNA-",
    "rRNA+", "rRNA-",
    "ncRNA+", "ncRNA-",
)
NUM_CLASSES = len(CLASSES)
INDEX = {name: i for i, name in enumerate(CLASSES)}
INTERGENIC = 0
CDS_PLUS = (1, 2, 3)
CDS_MINUS = (4, 5, 6)
IGNORE_INDEX = -100  # label of bases that are not ground truth (pseudogenes, joined CDS)

# The class a base takes when the sequence is reverse-complemented: strands swap, phases keep
# (a base's codon position is counted along its own strand, so it does not change).
RC_PERMUTATION: tuple[int, ...] = tuple(
    INDEX[name.replace("+", "\0").replace("-", "+").replace("\0", "-")] for name in CLASSES
)


def reverse_labels(y):
    """Per-base class ids ``[L]`` (numpy) as the reverse complement reads them: flipped, each
    class's strand swapped, ``IGNORE_INDEX`` kept."""
    import numpy as np

    y = np.asarray(y)[::-1]
    perm = np.asarray(RC_PERMUTATION, dtype=y.dtype)
    return np.where(y == IGNORE_INDEX, IGNORE_INDEX, perm[np.clip(y, 0, None)])
