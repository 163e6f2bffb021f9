"""Repeat masks from the input's own k-mer counts, and the spliced decoder's repeat filter."""

import numpy as np
import pytest

from genoctx.heads import spliced_decoder as sd
from genoctx.heads.orfs import encode, revcomp_codes
from genoctx.heads.repeats import repeat_masks


def test_copies_on_either_strand_are_masked_and_unique_sequence_is_not():
    rng = np.random.default_rng(0)
    unique = rng.integers(0, 4, 3000).astype(np.uint8)
    element = rng.integers(0, 4, 200).astype(np.uint8)
    x = unique.copy()
    x[500:700] = element
    x[1500:1700] = revcomp_codes(element)   # a copy on the other strand
    other = np.concatenate([rng.integers(0, 4, 400), element, rng.integers(0, 4, 400)])
    m, mo = repeat_masks([x, other.astype(np.uint8)], k=16, min_count=3)
    assert m[500:700].all() and m[1500:1700].all() and mo[400:600].all()
    rest = np.ones(len(x), dtype=bool)
    rest[500:700] = rest[1500:1700] = False
    assert m[rest].mean() < 0.01
    # two copies only: below min_count 3, masked at 2
    two, = repeat_masks([x], k=16, min_count=3)
    assert not two[500:700].any()
    two, = repeat_masks([x], k=16, min_count=2)
    assert two[500:700].all()


def test_kmers_with_n_do_not_count_and_bad_arguments_are_refused():
    x = encode("ACGTNACGTNACGTNACGT")
    m, = repeat_masks([x], k=4, min_count=2)
    assert m.tolist() == [True] * 4 + [False] + [True] * 4 + [False] + [True] * 4 + [False] + [True] * 4
    m, = repeat_masks([x], k=5, min_count=2)
    assert not m.any()
    assert not repeat_masks([encode("ACG")], k=16)[0].any()
    with pytest.raises(ValueError):
        repeat_masks([x], k=33)
    with pytest.raises(ValueError):
        repeat_masks([x], min_count=1)
    with pytest.raises(ValueError):
        repeat_masks([x], chunk=0)


def _naive_masks(seqs: list[str], k: int, min_count: int) -> list[np.ndarray]:
    """The definition, spelled out: count canonical k-mer strings, mark what a frequent one covers."""
    comp = str.maketrans("ACGT", "TGCA")

    def canon(w):
        return min(w, w.translate(comp)[::-1])

    counts = {}
    for s in seqs:
        for i in range(len(s) - k + 1):
            w = s[i:i + k]
            if set(w) <= set("ACGT"):
                counts[canon(w)] = counts.get(canon(w), 0) + 1
    out = []
    for s in seqs:
        m = np.zeros(len(s), dtype=bool)
        for i in range(len(s) - k + 1):
            w = s[i:i + k]
            if set(w) <= set("ACGT") and counts[canon(w)] >= min_count:
                m[i:i + k] = True
        out.append(m)
    return out


@pytest.mark.parametrize("k", [1, 5, 8, 13, 16, 32])
def test_masks_match_the_definition_whatever_the_chunks_and_memory_bound(k):
    """Chunk seams (k-mers read across them) and hash buckets (several counting passes) must not
    change a single base of the masks."""
    rng = np.random.default_rng(k)
    alphabet = np.array(list("ACGTN"))
    unit = "".join(alphabet[rng.integers(0, 4, 40)])
    seqs = ["".join(alphabet[rng.choice(5, 700, p=[0.24, 0.24, 0.24, 0.24, 0.04])]),
            unit * 3 + "".join(alphabet[rng.integers(0, 4, 90)]), unit[:k - 1], ""]
    seqs[0] = seqs[0][:300] + unit + seqs[0][300:]
    codes = [encode(s) for s in seqs]
    for min_count in (2, 3):
        want = _naive_masks(seqs, k, min_count)
        assert any(w.any() for w in want)
        for chunk, max_bytes in ((1 << 20, 1 << 28), (7, 8 * 100), (64, 8 * 400), (1, 8 * 2000)):
            got = repeat_masks(codes, k=k, min_count=min_count, chunk=chunk, max_bytes=max_bytes)
            assert [g.tolist() for g in got] == [w.tolist() for w in want], (chunk, max_bytes)


def _gene_locus(rng, n_codons=120):
    """A random single-exon ORF (ATG, no in-frame stop, TAA) with its labels."""
    stops = {"TAA", "TAG", "TGA"}
    codons = []
    while len(codons) < n_codons:
        c = "".join(rng.choice(list("ACGT"), 3))
        if c not in stops:
            codons.append(c)
    return "ATG" + "".join(codons) + "TAA"


def test_decoder_drops_calls_that_lie_in_repeats():
    """The same ORF three times and a different one once, each with clear head evidence: with the
    filter on, only the unique copy is called."""
    from genoctx.heads.classes import CDS_PLUS, INDEX

    rng = np.random.default_rng(3)
    rep, uniq = _gene_locus(rng), _gene_locus(rng)

    def spacer():
        return "".join(rng.choice(list("ACGT"), 600))

    parts = [spacer(), rep, spacer(), rep, spacer(), uniq, spacer(), rep, spacer()]
    seq = "".join(parts)
    y = np.full(len(seq), INDEX["intergenic"])
    genes_at = []
    pos = 0
    for part in parts:
        if part in (rep, uniq):
            y[pos:pos + len(part)] = [CDS_PLUS[i % 3] for i in range(len(part))]
            genes_at.append((pos, pos + len(part), part is uniq))
        pos += len(part)
    probs = sd.oracle_probs(y, 0.9)
    base = {"coding_weight": 0.0, "min_cds": 150}
    called = sd.decode(seq, probs, params=sd.DecoderParams(**base, max_repeat_fraction=1.0))
    assert {(g.start, g.end) for g in called} == {(a, b) for a, b, _ in genes_at}
    kept = sd.decode(seq, probs, params=sd.DecoderParams(**base, max_repeat_fraction=0.3))
    assert [(g.start, g.end) for g in kept] == [(a, b) for a, b, u in genes_at if u]
