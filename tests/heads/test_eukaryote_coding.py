"""The eukaryote coding model: refit from the data root gives the shipped file, the file is
checked before use, its tracks are strand-symmetric, and it finds real genes by itself."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from genoctx.errors import InputError
from genoctx.heads import eukaryote_coding as ec
from genoctx.heads import spliced_decoder as sd
from genoctx.heads.classes import NUM_CLASSES
from genoctx.heads.orfs import encode


def test_refit_from_train_chunks_gives_the_shipped_file(data_root, tmp_path):
    ec.main(["--data-root", str(data_root), "--out", str(tmp_path)])
    assert (tmp_path / ec.FILE).read_bytes() == (ec.WEIGHTS_DIR / ec.FILE).read_bytes()
    record = json.loads((tmp_path / "eukaryote_coding.json").read_text())
    shipped = json.loads((ec.WEIGHTS_DIR / "eukaryote_coding.json").read_text())
    assert record["sha256"] == shipped["sha256"]
    assert record["train_files"] == shipped["train_files"]
    # only train-role chunks: the validation genome (C. elegans) never enters the fit
    assert sorted(record["species"]) == ["A.thaliana", "D.melanogaster"]


def test_changed_file_is_refused(tmp_path):
    for name in (ec.FILE, ec.FILE + ".sha256"):
        shutil.copy(ec.WEIGHTS_DIR / name, tmp_path / name)
    assert ec.load(tmp_path).llr_QK.shape[0] == 3
    data = bytearray((tmp_path / ec.FILE).read_bytes())
    data[-1] ^= 1
    (tmp_path / ec.FILE).write_bytes(bytes(data))
    with pytest.raises(InputError, match="sha256"):
        ec.load(tmp_path)
    (tmp_path / (ec.FILE + ".sha256")).unlink()
    with pytest.raises(InputError, match="missing"):
        ec.load(tmp_path)


def test_tracks_mirror_on_the_reverse_complement(example_fasta):
    from genoctx.io.fasta import iter_records

    (_, seq), = iter_records(example_fasta)
    x = encode(seq)
    rc = np.where(x < 4, 3 - x, 4)[::-1]
    model = ec.default_model()
    fwd, back = sd.coding_tracks(model, x), sd.coding_tracks(model, rc)[::-1]
    # CDS+ at codon position q on the reverse complement is CDS− at forward position 2 − q here
    np.testing.assert_array_equal(back[:, [0, 1, 2]], fwd[:, [5, 4, 3]])
    np.testing.assert_array_equal(back[:, [3, 4, 5]], fwd[:, [2, 1, 0]])


def test_coding_model_alone_finds_real_genes(data_root):
    # C. elegans (validation, never fitted on): with head probabilities that say nothing and no
    # splice-site or coding evidence, the decoder calls nothing; with the coding model it finds
    # most of the annotated CDS bases. (Splice sites alone, at the default weight 8, do call
    # genes on flat probabilities: their log-odds pay for introns.)
    from genoctx.io.annotation import read_genes
    from genoctx.io.fasta import iter_records

    root = data_root / "genomes/eukaryote_chunks"
    seq = dict(iter_records(root / "C.elegans.fa.gz"))["V"].decode().upper()[:200_000]
    truth = np.zeros(len(seq), dtype=bool)
    for g in read_genes(root / "C.elegans.gff.gz"):
        if g.contig == "V" and g.end <= len(seq):
            for a, b in g.parts:
                truth[a:b] = True
    flat = np.full((len(seq), NUM_CLASSES), 1 / NUM_CLASSES, dtype=np.float32)
    assert sd.decode(seq, flat, params=sd.DecoderParams(head_weight=1.0, coding_weight=0.0,
                                                        splice_weight=0.0)) == []
    genes = sd.decode(seq, flat, params=sd.DecoderParams(head_weight=1.0))
    called = np.zeros(len(seq), dtype=bool)
    for g in genes:
        for a, b in g.cds:
            called[a:b] = True
    precision = (called & truth).sum() / called.sum()
    recall = (called & truth).sum() / truth.sum()
    print(f"\n{len(genes)} genes, CDS-base precision {precision:.3f}, recall {recall:.3f} "
          f"(annotated CDS: {truth.mean():.3f} of bases)")
    assert precision > 2.5 * truth.mean() and recall > 0.7


def test_noncoding_background_counts_only_bases_outside_cds(monkeypatch):
    # a toy record with one annotated CDS: background "noncoding" leaves out every hexamer that
    # touches it (on both strands), so only the CDS-free flanks are counted
    from genoctx.heads import codon_model as cm
    from genoctx.io.annotation import Feature

    rng = np.random.default_rng(0)
    seq = "".join(rng.choice(list("ACGT"), 600))
    cds = "ATG" + "".join(rng.choice(["GCT", "AAA", "CTG", "GAA"], 98)) + "TAA"
    seq = seq[:200] + cds + seq[200 + len(cds):]
    feats = {"r": [Feature(contig="r", start=200, end=200 + len(cds), strand=1, kind="CDS",
                           parts=[(200, 200 + len(cds))])]}
    seen = []
    real = cm.fit_coding_model
    monkeypatch.setattr(cm, "fit_coding_model",
                        lambda coding, background: seen.append(background) or real(coding,
                                                                                 background))
    for background in ("all", "noncoding"):
        ec.fit([([("r", seq.encode())], feats)], background=background)
    every, outside = seen
    assert every.sum() == 2 * (len(seq) - 5)
    # per strand: the hexamers wholly inside [0, 200) or [200 + len(cds), 600)
    assert outside.sum() == 2 * ((200 - 5) + (600 - 200 - len(cds) - 5))
    with pytest.raises(ValueError, match="background"):
        ec.fit([([("r", seq.encode())], feats)], background="intergenic")


def _toy_genes():
    """A random record with two spliced genes, one per strand (ATG … stop, GT…AG introns)."""
    rng = np.random.default_rng(1)

    def codons(n):
        return "".join(rng.choice(["GCT", "AAA", "CTG", "GAA", "TCC", "CGC"], n))

    def exons(parts, intron):
        return intron.join(parts)

    intron = "GTAAGT" + "".join(rng.choice(list("AT"), 60)) + "TTTCAG"
    plus = exons(["ATG" + codons(40) + "G", "CT" + codons(30), codons(20) + "TAA"], intron)
    minus_fwd = exons(["ATG" + codons(25), codons(35) + "TGA"], intron)
    comp = str.maketrans("ACGT", "TGCA")
    minus = minus_fwd.translate(comp)[::-1]
    flank = "".join(rng.choice(list("ACGT"), 300))
    seq = flank + plus + flank + minus + flank
    genes = []
    for start, body, strand in ((300, plus, 1), (300 + len(plus) + 300, minus, -1)):
        gaps = [i for i in range(len(body)) if body.startswith(intron if strand > 0 else
                                                                intron.translate(comp)[::-1], i)]
        parts, a = [], start
        for g in gaps:
            parts.append((a, start + g))
            a = start + g + len(intron)
        parts.append((a, start + len(body)))
        genes.append(sd.SplicedGene("r", strand, tuple(parts)))
    return seq, genes


def test_self_fit_matches_a_fit_on_the_same_genes_read_back_from_gff3(tmp_path):
    # the input's own model from decoded genes (spliced, read along their strand) is the model
    # eukaryote_coding.fit makes of the same genes written as GFF3 and read back
    from genoctx.io.annotation import read_features
    from genoctx.io.writers import write_spliced_gff3

    seq, genes = _toy_genes()
    write_spliced_gff3(tmp_path / "g.gff3", genes, {"r": len(seq)})
    feats = read_features(tmp_path / "g.gff3")
    assert len(ec.complete_cds([("r", seq.encode())], feats)) == 2
    expected = ec.fit([([("r", seq.encode())], feats)])
    prior = ec.default_model()
    own, w = ec.fit_on_calls({"r": encode(seq)}, genes, prior, weight=1.0, half=0.0)
    assert w == 1.0
    np.testing.assert_allclose(own.llr_QK, expected.llr_QK, atol=1e-6)


def test_self_fit_blends_by_how_much_it_learned_from():
    seq, genes = _toy_genes()
    codes, prior = {"r": encode(seq)}, ec.default_model()
    same, w = ec.fit_on_calls(codes, [], prior, weight=0.5)
    assert same is prior and w == 0.0
    n = sum(g.cds_length for g in genes)
    own, _ = ec.fit_on_calls(codes, genes, prior, weight=1.0, half=0.0)
    mixed, w = ec.fit_on_calls(codes, genes, prior, weight=0.5, half=1000.0)
    assert w == pytest.approx(0.5 * n / (n + 1000.0))
    np.testing.assert_allclose(mixed.llr_QK, (1 - w) * prior.llr_QK + w * own.llr_QK, atol=1e-5)


def test_self_training_rounds_and_their_checks(monkeypatch):
    seq, _ = _toy_genes()
    flat = np.full((len(seq), NUM_CLASSES), 1 / NUM_CLASSES, dtype=np.float32)
    fits = []
    real = ec.fit_on_calls
    monkeypatch.setattr(ec, "fit_on_calls", lambda *a, **k: fits.append(1) or real(*a, **k))
    for rounds in (0, 1, 2):
        fits.clear()
        genes = sd.decode(seq, flat, params=sd.DecoderParams(head_weight=1.0,
                                                             self_train_rounds=rounds))
        assert len(genes) == 2 and len(fits) == rounds  # both genes found: each round refits
    # no coding model, nothing to self-train
    fits.clear()
    sd.decode(seq, flat, params=sd.DecoderParams(coding_weight=0.0, self_train_rounds=2))
    assert fits == []
    with pytest.raises(ValueError, match="self_train"):
        sd.DecoderParams(self_train_rounds=-1)
    with pytest.raises(ValueError, match="self_train"):
        sd.DecoderParams(self_train_weight=1.5)
