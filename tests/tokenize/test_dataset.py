"""FastaWindows: a genome's token windows as a torch Dataset, and their outputs stitched back."""

import gzip
import pickle
import shutil

import numpy as np
import pytest
import torch
from Bio import SeqIO
from torch.utils.data import DataLoader, DistributedSampler

from genoctx.errors import DataRoleError, GenoctxError, InputError
from genoctx.heads.classes import CDS_MINUS, CDS_PLUS, IGNORE_INDEX
from genoctx.tokenize import nucleotide as nt
from genoctx.tokenize.dataset import FastaWindows


@pytest.fixture(scope="module")
def record(example_fasta):
    rec = next(SeqIO.parse(example_fasta, "fasta"))
    return rec.id, str(rec.seq)


def _items(ds):
    return [ds[i] for i in range(len(ds))]


@pytest.mark.parametrize("bos", [False, True])
@pytest.mark.parametrize("context,overlap", [(1000, 0), (1024, 100), (4096, 1500), (20000, 0)])
def test_windows_cover_the_record_and_stitch_back(example_fasta, record, context, overlap, bos):
    name, seq = record
    ds = FastaWindows(example_fasta, context=context, overlap=overlap, bos=bos)
    items = _items(ds)
    bases = context - bos
    step = bases - overlap
    assert len(ds) == max(1, -(-(len(seq) - bases) // step) + 1) if len(seq) > bases else len(ds) == 1
    for i, it in enumerate(items):
        s, e = it["start"], it["end"]
        assert (s, e) == (i * step, min(i * step + bases, len(seq)))
        x = it["input_ids"].numpy()
        assert x.dtype == np.int64 and x.shape == (context,)
        assert (x[0] == nt.BOS) == bos
        assert nt.decode(x[bos:bos + e - s]) == seq[s:e].upper()
        assert (x[bos + e - s:] == nt.PAD).all()
        assert it["attention_mask"].sum() == bos + e - s and it["strand"] == 1
        assert it["contig"] == name and it["index"] == i
    stitched = ds.stitch([it["input_ids"] for it in items])
    assert list(stitched) == [f"{name}:1-{len(seq):,}"]
    assert nt.decode(stitched[f"{name}:1-{len(seq):,}"]) == seq.upper()


def test_both_strands_and_minus_strand_stitch(example_fasta, record):
    name, seq = record
    ds = FastaWindows(example_fasta, context=2048, overlap=256, strand="both", bos=True)
    fwd = FastaWindows(example_fasta, context=2048, overlap=256, bos=True)
    assert len(ds) == 2 * len(fwd)
    for k in range(len(fwd)):
        plus, minus = ds[2 * k], ds[2 * k + 1]
        assert (plus["start"], plus["end"], plus["strand"]) == (fwd[k]["start"], fwd[k]["end"], 1)
        assert (minus["start"], minus["end"], minus["strand"]) == (plus["start"], plus["end"], -1)
        n = plus["end"] - plus["start"]
        assert nt.decode(minus["input_ids"][1:1 + n]) == nt.decode(
            nt.reverse_complement(plus["input_ids"][1:1 + n]))
        assert torch.equal(plus["input_ids"], fwd[k]["input_ids"])
    outs = {i: ds[i]["input_ids"].numpy() for i in range(1, len(ds), 2)}
    back = ds.stitch(outs, strand=-1)[f"{name}:1-{len(seq):,}"]
    assert nt.decode(nt.COMPLEMENT[back]) == seq.upper()  # each minus item flipped back in place
    with pytest.raises(InputError, match="no output for item 0"):
        ds.stitch(outs, strand=1)
    minus_only = FastaWindows(example_fasta, context=2048, strand="-")
    assert nt.decode(minus_only[0]["input_ids"]) == nt.decode(
        nt.reverse_complement(nt.encode(seq[:2048])))


def test_regions_and_bed(example_fasta, record, tmp_path):
    name, seq = record
    ds = FastaWindows(example_fasta, regions=[f"{name}:101-600", f"{name}:5,001-5,100"], context=256)
    assert [(it["start"], it["end"]) for it in _items(ds)] == [(100, 356), (356, 600), (5000, 5100)]
    bed = tmp_path / "r.bed"
    bed.write_text(f"track name=x\n{name}\t100\t600\tfirst\n{name}\t5000\t5100\n")
    by_bed = FastaWindows(example_fasta, bed=bed, context=256)
    assert [torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(_items(ds), _items(by_bed))] \
        == [True] * 3
    got = ds.stitch([it["input_ids"] for it in _items(ds)])
    assert [nt.decode(v) for v in got.values()] == [seq[100:600].upper(), seq[5000:5100].upper()]


def test_gzip_bgzip_genbank_give_the_same_items(example_fasta, example_genbank, tmp_path):
    import pysam

    plain = _items(FastaWindows(example_fasta, context=1024, overlap=64))
    gz = tmp_path / "plain-gzip.fa.gz"
    with open(example_fasta, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    bgz = tmp_path / "x.fa"
    shutil.copy(example_fasta, bgz)
    pysam.tabix_compress(str(bgz), str(bgz) + ".gz")
    for path in (gz, str(bgz) + ".gz", example_genbank):
        other = _items(FastaWindows(path, context=1024, overlap=64))
        assert [torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(plain, other)] \
            == [True] * len(plain)


def test_dataloader_workers_and_pickling(example_fasta, tmp_path):
    import pysam

    bgz = tmp_path / "x.fa"
    shutil.copy(example_fasta, bgz)
    pysam.tabix_compress(str(bgz), str(bgz) + ".gz")
    for path in (example_fasta, str(bgz) + ".gz"):
        ds = FastaWindows(path, context=512, overlap=32, strand="both")
        want = torch.stack([it["input_ids"] for it in _items(ds)])
        got = torch.cat([b["input_ids"] for b in DataLoader(ds, batch_size=5, num_workers=2)])
        assert torch.equal(got, want)
        again = pickle.loads(pickle.dumps(ds))  # as a spawned worker gets it: the file reopened
        assert again._source is None
        assert torch.equal(torch.stack([it["input_ids"] for it in _items(again)]), want)


def test_distributed_sampler_shares_items_out(example_fasta):
    ds = FastaWindows(example_fasta, context=512)
    seen = []
    for rank in range(2):
        sampler = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=1)
        seen += [int(b["index"]) for b in DataLoader(ds, batch_size=1, sampler=sampler)]
    assert sorted(set(seen)) == list(range(len(ds)))


def test_random_strand_is_seeded_per_epoch(example_fasta):
    ds = FastaWindows(example_fasta, context=256, strand="random", seed=3)
    draw = [ds[i]["strand"] for i in range(len(ds))]
    assert draw == [ds[i]["strand"] for i in range(len(ds))]
    assert 0.3 < draw.count(1) / len(draw) < 0.7
    ds.set_epoch(1)
    assert [ds[i]["strand"] for i in range(len(ds))] != draw
    for i in range(len(ds)):
        it = ds[i]
        n = it["end"] - it["start"]
        fwd = nt.encode(ds._source.fetch(it["contig"], it["start"], it["end"]))
        want = fwd if it["strand"] == 1 else nt.reverse_complement(fwd)
        assert np.array_equal(it["input_ids"][:n].numpy(), want)
    with pytest.raises(InputError, match="fixed place"):
        ds.stitch({})


def _cds(genbank):
    rec = next(SeqIO.parse(genbank, "genbank"))
    out = []
    for f in rec.features:
        if f.type == "CDS" and len(f.location.parts) == 1 and "pseudo" not in f.qualifiers:
            out.append((int(f.location.start), int(f.location.end), f.location.strand))
    return rec.id, out


def test_labels_follow_the_annotation_on_both_strands(example_genbank):
    _, cds = _cds(example_genbank)
    ds = FastaWindows(example_genbank, annotation=example_genbank, context=12000, bos=True,
                      strand="both")
    plus, minus = ds[0], ds[1]
    L = plus["end"]
    y = plus["labels"].numpy()
    assert y[0] == IGNORE_INDEX and (y[1 + L:] == IGNORE_INDEX).all()
    y, ym = y[1:1 + L], minus["labels"].numpy()[1:1 + L][::-1]  # minus labels in + coordinates
    covered = np.zeros(L, bool)
    for s, e, strand in cds:
        covered[s:e] = True
    for s, e, strand in cds:
        if np.count_nonzero([s < e2 and s2 < e for s2, e2, _ in cds]) > 1:
            continue  # overlapping genes: labels follow a priority
        # codon position along the gene's strand, from its first base
        pos = np.arange(e - s) % 3 if strand > 0 else (np.arange(e - s) % 3)[::-1]
        want = np.asarray(CDS_PLUS if strand > 0 else CDS_MINUS)[pos]
        assert np.array_equal(y[s:e], want), (s, e, strand)
        # on the reverse complement the gene is on the other strand, codon positions kept
        assert np.array_equal(ym[s:e], np.asarray(CDS_MINUS if strand > 0 else CDS_PLUS)[pos])
    assert not np.isin(y[~covered], CDS_PLUS + CDS_MINUS).any()
    batch = next(iter(DataLoader(ds, batch_size=2)))
    assert batch["labels"].shape == (2, 12000) and batch["labels"].dtype == torch.int64


def test_bad_input_is_refused_in_one_line(example_fasta, example_genbank, tmp_path):
    with pytest.raises(InputError, match="strand must be one of"):
        FastaWindows(example_fasta, strand="minus")
    with pytest.raises(InputError, match="no room for bases"):
        FastaWindows(example_fasta, context=1, bos=True)
    with pytest.raises(InputError, match="overlap"):
        FastaWindows(example_fasta, context=256, overlap=256)
    with pytest.raises(GenoctxError, match="unknown contig"):
        FastaWindows(example_fasta, regions="chr1:1-100")
    with pytest.raises(GenoctxError, match="runs past the end"):
        FastaWindows(example_fasta, regions=f"{next(SeqIO.parse(example_fasta, 'fasta')).id}:9000-9700")
    with pytest.raises(InputError, match="not both"):
        FastaWindows(example_fasta, regions="x", bed=tmp_path / "r.bed")
    with pytest.raises(InputError, match="no features on"):  # the GenBank names NC_005816.1
        FastaWindows(example_fasta, annotation=example_genbank)
    with pytest.raises(IndexError):
        FastaWindows(example_fasta, context=4096)[3]


def test_reads_are_not_a_genome(data_root):
    with pytest.raises(InputError, match="not FASTA"):
        FastaWindows(data_root / "reads" / "ex1" / "ex1.bam")


def test_training_refuses_held_out_and_unlisted_files(example_fasta, data_root):
    held = data_root / "genomes" / "bacteria"
    val = next(p for p in held.iterdir() if p.name.startswith("Brucella"))
    with pytest.raises(DataRoleError, match="validation"):
        FastaWindows(val, training=True, data_root=data_root)
    with pytest.raises(DataRoleError):
        FastaWindows(example_fasta, training=True, data_root=data_root)  # not a train file there
    train = next(p for p in held.iterdir() if p.name.startswith("Escherichia"))
    ds = FastaWindows(train, training=True, data_root=data_root, annotation=train, context=8192)
    assert len(ds) > 500 and (ds[0]["labels"] != IGNORE_INDEX).any()


def test_batches_embed_as_each_window_does_alone(example_fasta, record):
    """The items feed genoctx's model as they are: a padded last window embeds as its bases."""
    import genoctx

    _, seq = record
    model = genoctx.load_model(device="cpu")
    ds = FastaWindows(example_fasta, regions=f"{record[0]}:1-3000", context=1024, overlap=128)
    batch = next(iter(DataLoader(ds, batch_size=len(ds))))
    assert batch["end"][-1] - batch["start"][-1] < 1024  # the last window is padded
    emb = model.embed(batch["input_ids"])
    for i in (0, len(ds) - 1):
        s, e = int(batch["start"][i]), int(batch["end"][i])
        alone = genoctx.embed(seq[s:e], model=model)
        torch.testing.assert_close(emb[i, :e - s], torch.as_tensor(alone), rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def mpileup(data_root):
    d = data_root / "reads" / "human_mpileup"
    return d / "mpileup.1.bam", d / "mpileup.ref.fa"


def test_pileup_windows_are_the_regions_pileup(mpileup):
    from genoctx.tokenize.dataset import PileupWindows
    from genoctx.tokenize.pileup import tokenize_pileup

    bam, ref = mpileup
    whole_tokens, whole_channels, _ = tokenize_pileup(bam, ref, "17:1-4,200", min_baseq=20)
    ds = PileupWindows(bam, ref, context=1000, overlap=100, bos=True, min_baseq=20)
    assert [str(r) for r in ds.regions] == ["17:1-4,200"] and len(ds) == 5
    items = _items(ds)
    for it in items:
        s, e = it["start"], it["end"]
        assert it["input_ids"][0] == nt.BOS and (it["channels"][0] == 0).all()
        assert np.array_equal(it["input_ids"][1:1 + e - s].numpy(), whole_tokens[s:e])
        assert np.array_equal(it["channels"][1:1 + e - s].numpy(), whole_channels[s:e])
        assert (it["input_ids"][1 + e - s:] == nt.PAD).all() and (it["channels"][1 + e - s:] == 0).all()
    got = ds.stitch([it["channels"] for it in items])["17:1-4,200"]
    assert np.array_equal(got.numpy(), whole_channels)
    batch = next(iter(DataLoader(ds, batch_size=5)))
    assert batch["channels"].shape == (5, 1000, 9)
    assert whole_channels[:, 0].max() > 0  # the region has reads


def test_pileup_reverse_strand_mirrors_the_forward_one(mpileup):
    from genoctx.tokenize import pileup as pu
    from genoctx.tokenize.dataset import PileupWindows

    ds = PileupWindows(*mpileup, regions="17:1001-2000", context=1000, strand="both")
    plus, minus = ds[0], ds[1]
    tp, tm = plus["input_ids"].numpy(), minus["input_ids"].numpy()[::-1]
    cp, cm = plus["channels"].numpy(), minus["channels"].numpy()[::-1]
    flip = {"A": "T", "C": "G", "G": "C", "T": "A", "N": "N"}
    for i in range(0, 1000, 37):
        base, state = pu.describe(int(tp[i]))
        assert pu.describe(int(tm[i])) == (flip[base], state)
    names = pu.CHANNEL_NAMES
    for a, b in (("frac_A", "frac_T"), ("frac_C", "frac_G"), ("frac_del", "frac_del"),
                 ("log1p_depth", "log1p_depth"), ("alt_frac", "alt_frac")):
        assert np.array_equal(cp[:, names.index(a)], cm[:, names.index(b)]), (a, b)
    covered = cp[:, 0] > 0
    assert covered.sum() > 500
    s = names.index("strand_plus_frac")
    np.testing.assert_allclose(cm[covered, s], 1 - cp[covered, s], atol=1e-6)
    assert (cm[~covered] == 0).all()


def test_pileup_windows_refuse_mismatched_inputs(mpileup, data_root, tmp_path):
    from genoctx.tokenize.dataset import PileupWindows

    bam, ref = mpileup
    with pytest.raises(InputError, match="no contig in common"):
        PileupWindows(bam, data_root / "reads" / "ex1" / "ex1.fa")
    with pytest.raises(InputError, match="unknown pileup filter"):
        PileupWindows(bam, ref, min_quality=3)
    with pytest.raises(InputError, match="is SAM"):
        PileupWindows(data_root / "reads" / "celegans_chrI" / "ce#1000.sam",
                      data_root / "reads" / "celegans_chrI" / "ce.fa")


def test_softmask_marks_lowercase_bases_on_either_strand(record, tmp_path):
    """pPCP1 with bases 1,001-2,000 written in lowercase, as a repeat masker writes them."""
    name, seq = record
    masked = seq[:1000] + seq[1000:2000].lower() + seq[2000:]
    fa = tmp_path / "masked.fa"
    fa.write_text(f">{name}\n" + "\n".join(masked[i:i + 60] for i in range(0, len(masked), 60)) + "\n")
    ds = FastaWindows(fa, context=1500, overlap=0, bos=True, strand="both", softmask=True)
    want = np.zeros(len(seq), bool)
    want[1000:2000] = True
    for i in range(len(ds)):
        it = ds[i]
        s, e = it["start"], it["end"]
        m = it["softmask"].numpy()
        assert not m[0] and not m[1 + e - s:].any()
        got = m[1:1 + e - s] if it["strand"] == 1 else m[1:1 + e - s][::-1]
        assert np.array_equal(got, want[s:e]), i
        plain = FastaWindows(fa, context=1500, bos=True, strand="both")[i]["input_ids"]
        assert torch.equal(it["input_ids"], plain)  # the ids do not depend on case
    assert "softmask" not in FastaWindows(fa, context=1500)[0]


def test_max_shift_moves_windows_seeded_per_epoch_and_stays_on_the_contig(example_fasta, record):
    _, seq = record
    ds = FastaWindows(example_fasta, context=2000, strand="both", max_shift=300, seed=5)
    plan = FastaWindows(example_fasta, context=2000)
    moves = []
    for i in range(len(ds)):
        it = ds[i]
        k = i // 2
        s, e = it["start"], it["end"]
        assert e - s == plan[k]["end"] - plan[k]["start"] and 0 <= s and e <= len(seq)
        moves.append(s - plan[k]["start"])
        assert abs(moves[-1]) <= 300
        fwd = nt.encode(seq[s:e])
        want = fwd if it["strand"] == 1 else nt.reverse_complement(fwd)
        assert np.array_equal(it["input_ids"][:e - s].numpy(), want)
    assert moves[0::2] == moves[1::2]  # both strands of a window move together
    assert moves[0] >= 0 and len(set(moves)) > 2  # the first window cannot move left
    assert [ds[i]["start"] for i in range(len(ds))] == [p + m for p, m in zip(
        [plan[i // 2]["start"] for i in range(len(ds))], moves)]  # seeded: the same again
    ds.set_epoch(1)
    assert [ds[i]["start"] for i in range(len(ds))] != [plan[i // 2]["start"] + m
                                                         for i, m in enumerate(moves)]
    with pytest.raises(InputError, match="fixed place"):
        ds.stitch({})
    with pytest.raises(InputError, match="max_shift must be 0 or more"):
        FastaWindows(example_fasta, max_shift=-1)
