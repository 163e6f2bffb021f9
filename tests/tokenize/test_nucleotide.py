"""Nucleotide ids: fixed vocabulary, lookup-table encoding, reverse complement vs Biopython."""

import numpy as np
import pysam
import pytest
import torch
from Bio.Seq import Seq
from hypothesis import given, settings
from hypothesis import strategies as st

from genoctx.io.fasta import FastaFile
from genoctx.tokenize import nucleotide as nt

BASES = st.text("ACGTN", max_size=300)
ANY_DNA = st.text("ACGTNacgtnRYKMSWBDHVryk-", max_size=300)


def _naive_id(byte: int) -> int:
    return {"A": nt.A, "C": nt.C, "G": nt.G, "T": nt.T, "U": nt.T}.get(chr(byte).upper(), nt.N)


def test_vocabulary_is_fixed():
    assert (nt.PAD, nt.BOS, nt.EOS, nt.MASK, nt.A, nt.C, nt.G, nt.T, nt.N) == tuple(range(9))
    assert nt.VOCAB_SIZE == len(nt.TOKENS) == 9
    assert nt.TOKENS == ("<pad>", "<bos>", "<eos>", "<mask>", "A", "C", "G", "T", "N")
    assert [nt.TOKENS[c] for c in nt.COMPLEMENT] == ["<pad>", "<bos>", "<eos>", "<mask>",
                                                     "T", "G", "C", "A", "N"]


def test_every_byte_against_a_naive_table():
    every = bytes(range(256))
    assert nt.encode(every).tolist() == [_naive_id(b) for b in every]
    assert nt.count_non_acgt(every) == 256 - 10


def test_rna_reads_as_its_dna():
    """U is RNA's T: an RNA FASTA (SILVA, RNAcentral) gives the tokens of its DNA, and the
    soft-mask of its lowercase letters; it read as N before."""
    ids, mask = nt.encode_with_mask(b"ACGUacgu")
    assert ids.tolist() == nt.encode(b"ACGTACGT").tolist() and mask.tolist() == [0] * 4 + [1] * 4
    assert nt.count_non_acgt(b"ACGUN") == 1


def test_input_kinds_and_shapes():
    expected = [nt.A, nt.C, nt.G, nt.T, nt.N, nt.A, nt.N]
    for seq in ("ACGTNaR", b"ACGTNaR", bytearray(b"ACGTNaR"),
                np.frombuffer(b"ACGTNaR", np.uint8), np.array(list("ACGTNaR"), dtype="S1")):
        ids = nt.encode(seq)
        assert ids.dtype == np.uint8 and ids.tolist() == expected and ids.flags.writeable
    batch = np.frombuffer(b"ACGTacgt", np.uint8).reshape(2, 4)
    assert nt.encode(batch).tolist() == [[4, 5, 6, 7], [4, 5, 6, 7]]
    assert nt.encode("ACGé").tolist() == [4, 5, 6, 8]  # non-ASCII → N, one id per character
    with pytest.raises(ValueError, match="dtype"):
        nt.encode(np.array([4, 5], dtype=np.int64))


@settings(deadline=None)
@given(ANY_DNA)
def test_encode_with_mask_matches_naive(seq):
    ids, mask = nt.encode_with_mask(seq)
    assert ids.tolist() == [_naive_id(ord(c)) for c in seq]
    assert mask.dtype == np.bool_ and mask.tolist() == [c.islower() for c in seq]
    assert nt.count_non_acgt(seq) == sum(c not in "ACGTacgt" for c in seq)


@settings(deadline=None)
@given(BASES)
def test_decode_inverts_encode(seq):
    assert nt.decode(nt.encode(seq)) == seq


@settings(deadline=None)
@given(ANY_DNA)
def test_decode_of_any_input_is_upper_acgtn(seq):
    expected = "".join(c.upper() if c in "ACGTacgt" else "N" for c in seq)
    assert nt.decode(nt.encode(seq)) == expected


def test_decode_specials():
    ids = np.array([nt.BOS, nt.A, nt.MASK, nt.T, nt.EOS, nt.PAD])
    with pytest.raises(ValueError, match="not a base"):
        nt.decode(ids)
    assert nt.decode(ids, skip_special=True) == "AT"
    assert nt.decode(torch.tensor([4, 5, 6])) == "ACG"
    assert nt.decode([]) == ""
    with pytest.raises(ValueError):
        nt.decode([9])


@settings(deadline=None)
@given(BASES)
def test_reverse_complement_matches_biopython(seq):
    ids = nt.encode(seq)
    expected = str(Seq(seq).reverse_complement())
    assert nt.decode(nt.reverse_complement(ids)) == expected
    assert nt.decode(nt.reverse_complement(torch.from_numpy(ids.copy()))) == expected


@settings(deadline=None)
@given(st.lists(st.integers(0, nt.VOCAB_SIZE - 1), max_size=200))
def test_reverse_complement_is_an_involution(values):
    ids = np.array(values, dtype=np.int64)
    once = nt.reverse_complement(ids)
    assert once.dtype == np.int64
    assert np.array_equal(nt.reverse_complement(once), ids)
    t = torch.tensor(values, dtype=torch.long)
    assert torch.equal(nt.reverse_complement(nt.reverse_complement(t)), t)


def test_reverse_complement_along_a_dim():
    batch = nt.encode(np.frombuffer(b"AACGTTTGCA", np.uint8).reshape(2, 5))
    rc = nt.reverse_complement(batch, dim=1)
    assert [nt.decode(r) for r in rc] == ["ACGTT", "TGCAA"]
    rc_t = nt.reverse_complement(torch.from_numpy(batch.copy()).T, dim=0)
    assert torch.equal(rc_t, torch.from_numpy(rc).T)
    assert rc_t.dtype == torch.uint8
    with pytest.raises(ValueError):
        nt.reverse_complement(np.array([12]))


def test_chromosome_one_token_per_base_and_decodes_to_pysam(data_root):
    path = data_root / "reads" / "celegans_chrI" / "ce.fa"
    with pysam.FastaFile(str(path)) as ref, FastaFile(path) as fa:
        expected = ref.fetch("CHROMOSOME_I")
        ids = nt.encode(fa.fetch_region("CHROMOSOME_I"))
    assert ids.shape == (1_009_800,)
    assert nt.decode(ids) == expected.upper()
    counts = np.bincount(ids, minlength=nt.VOCAB_SIZE)
    assert [counts[i] for i in (nt.A, nt.C, nt.G, nt.T)] == [expected.count(b) for b in "ACGT"]
