"""Non-overlapping k-mers against a naive dictionary tokenizer."""

import itertools

import numpy as np
import pysam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genoctx.errors import GenoctxError
from genoctx.io.fasta import FastaFile
from genoctx.tokenize import nucleotide as nt
from genoctx.tokenize.kmer import KMER_OFFSET, NKMER, KmerError, KmerTokenizer


def _naive(seq: str, k: int) -> list[int]:
    table = {"".join(p): KMER_OFFSET + i for i, p in enumerate(itertools.product("ACGT",
                                                                                 repeat=k))}
    single = {"A": 4, "C": 5, "G": 6, "T": 7}
    seq = seq.upper()
    full = len(seq) // k * k
    ids = [table.get(seq[i:i + k], NKMER) for i in range(0, full, k)]
    return ids + [single.get(c, 8) for c in seq[full:]]


@settings(deadline=None, max_examples=60)
@given(seq=st.text("ACGTNacgtRY", max_size=120), k=st.integers(1, 7))
def test_encode_matches_naive(seq, k):
    tok = KmerTokenizer(k)
    ids = tok.encode(seq)
    assert ids.dtype == np.int32
    assert ids.tolist() == _naive(seq, k)
    assert len(ids) == tok.num_tokens(len(seq))
    assert np.array_equal(tok.from_base_ids(nt.encode(seq)), ids)


@settings(deadline=None)
@given(seq=st.text("ACGTacgt", max_size=120), k=st.integers(1, 8))
def test_decode_inverts_encode_without_n(seq, k):
    tok = KmerTokenizer(k)
    assert tok.decode(tok.encode(seq)) == seq.upper()


def test_documented_ids():
    tok = KmerTokenizer(6)
    assert tok.vocab_size == 10 + 4 ** 6
    assert tok.encode("AAAAAA").tolist() == [10]
    assert tok.encode("AAAAAC").tolist() == [11]
    assert tok.encode("TTTTTT").tolist() == [4105]
    assert tok.encode("AAAANA").tolist() == [NKMER]
    assert tok.decode([NKMER, 4, 8]) == "NNNNNNAN"
    assert tok.encode("ACGTACGTA").tolist() == [tok.token_id("ACGTAC"), 6, 7, 4]
    for token_id in (0, 3, 4, 8, NKMER, 10, 2000, 4105):
        assert tok.token_id(tok.token(token_id)) == token_id
    assert KmerTokenizer(1).encode("ACGT").tolist() == [10, 11, 12, 13]


def test_base_offsets_follow_token_widths():
    tok = KmerTokenizer(6)
    n = 6 * 5 + 4
    widths = [6] * 5 + [1] * 4
    expected = np.concatenate([[0], np.cumsum(widths)])
    assert tok.base_offsets(np.arange(tok.num_tokens(n) + 1), n).tolist() == expected.tolist()


def test_errors():
    with pytest.raises(KmerError):
        KmerTokenizer(0)
    with pytest.raises(GenoctxError):
        KmerTokenizer(13)
    with pytest.raises(ValueError):
        KmerTokenizer(3).decode([10 + 4 ** 3])
    with pytest.raises(KmerError, match="not a k=3 base"):
        KmerTokenizer(3).decode([1, 10])
    assert KmerTokenizer(3).decode([1, 10, 0], skip_special=True) == "AAA"
    with pytest.raises(KmerError):
        KmerTokenizer(3).token_id("ACGT")


def test_chromosome_decodes_back_to_pysam(data_root):
    path = data_root / "reads" / "celegans_chrI" / "ce.fa"
    tok = KmerTokenizer(6)
    with pysam.FastaFile(str(path)) as ref, FastaFile(path) as fa:
        ids = tok.encode(fa.fetch("CHROMOSOME_I"))
        expected = ref.fetch("CHROMOSOME_I")
    assert len(ids) == 1_009_800 // 6
    assert tok.decode(ids) == expected.upper()


def test_special_ids_have_no_kmer():
    """<pad> (0) and <mask> (3) read as A and T through their low bits: a padded window's
    tail became a run of AAAA k-mers."""
    tok = KmerTokenizer(3)
    with pytest.raises(ValueError, match="base ids must lie in 4..8"):
        tok.from_base_ids(np.array([4, 5, 6, 0, 0, 0]))
    with pytest.raises(ValueError, match="special tokens"):
        tok.from_base_ids(np.array([3, 4, 5]))
