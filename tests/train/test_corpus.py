"""The leakage guard: validation and benchmark files never enter training, whatever their name."""

import shutil

import numpy as np
import pytest

from genoctx.errors import DataRoleError, InputError
from genoctx.heads.classes import CDS_MINUS, CDS_PLUS, IGNORE_INDEX, RC_PERMUTATION
from genoctx.io.dataroot import load_manifest, require_trainable
from genoctx.tokenize import nucleotide as nt
from genoctx.train import corpus as corpus_mod


def test_validation_and_benchmark_files_are_refused(data_root):
    for rel in ("genomes/bacteria/Brucella_melitensis_16M.gbff.gz",
                "genomes/eukaryote_chunks/C.elegans.fa.gz",
                "variants/brca1_sge/NG_005905.2_BRCA1_RefSeqGene.fasta.gz"):
        with pytest.raises(DataRoleError, match="role"):
            require_trainable(data_root / rel, data_root)
    assert require_trainable(data_root / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz",
                             data_root) == "train"


def test_a_renamed_copy_keeps_its_role(data_root, tmp_path):
    copy = tmp_path / "my_training_genome.gbff.gz"
    shutil.copy(data_root / "genomes/bacteria/Haemophilus_influenzae_Rd_KW20.gbff.gz", copy)
    with pytest.raises(DataRoleError, match="validation"):
        require_trainable(copy, data_root)


HI = "genomes/bacteria/Haemophilus_influenzae_Rd_KW20.gbff.gz"


def _root_with(tmp_path, data_root, rows):
    """A data root holding the real H. influenzae file (validation) and ``rows`` of
    ``(path, file bytes, role)`` listed before it, in that order."""
    import hashlib

    root = tmp_path / "root"
    (root / "genomes" / "bacteria").mkdir(parents=True)
    (root / HI).symlink_to(data_root / HI)
    real = load_manifest(data_root)[HI]
    lines = ["path\tbytes\tsha256\trole\tlicense\tsource"]
    for rel, data, role in rows:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        lines.append(f"{rel}\t{len(data)}\t{hashlib.sha256(data).hexdigest()}\t{role}\t-\t-")
    lines.append(f"{HI}\t{real.bytes}\t{real.sha256}\tvalidation\t-\t-")
    (root / "MANIFEST.tsv").write_text("\n".join(lines) + "\n")
    return root


def test_held_out_bytes_listed_again_as_train_are_refused(data_root, tmp_path):
    """Whichever manifest row comes first, bytes listed as validation anywhere stay held out."""
    root = _root_with(tmp_path, data_root, [("genomes/bacteria/copy.gbff.gz",
                                             (data_root / HI).read_bytes(), "train")])
    with pytest.raises(DataRoleError, match="role 'validation'"):
        require_trainable(root / "genomes/bacteria/copy.gbff.gz", root)


def test_a_held_out_genome_in_other_bytes_is_refused_by_its_sequence(data_root, tmp_path):
    """Decompressed, or made into FASTA (reverse strand, lower case): the sha256 differs and
    the manifest says train, but the records are the held-out genome's."""
    import gzip

    from genoctx.io.annotation import read_sequences_genbank
    from genoctx.io.dataroot import require_unseen

    plain = gzip.decompress((data_root / HI).read_bytes())
    (_, seq), = list(read_sequences_genbank(data_root / HI))
    rc = seq.upper().translate(bytes.maketrans(b"ACGTRYKMSWBDHVN", b"TGCAYRMKSWVHDBN"))[::-1]
    rc = rc.lower()
    fasta = b">renamed\n" + rc + b"\n"
    root = _root_with(tmp_path, data_root, [("genomes/bacteria/plain.gbff", plain, "train"),
                                            ("genomes/unannotated/mine.fna", fasta,
                                             "pretrain-only")])
    assert require_trainable(root / "genomes/bacteria/plain.gbff", root) == "train"
    with pytest.raises(DataRoleError, match=f"has the sequence of a record of {HI}"):
        corpus_mod.lm_corpus(root)
    with pytest.raises(DataRoleError, match="record renamed has the sequence"):
        require_unseen([("renamed", rc)], "mine.fna", root)



def test_a_near_copy_of_a_held_out_genome_is_refused(data_root, tmp_path):
    """A few bases changed, a piece, the genome joined to another: the digest of the whole
    record differs, so each of these trained before; their 32-mers are the held-out genome's
    nearly everywhere. Another genome, even one of the same family (E. coli), passes."""
    from genoctx.io.annotation import read_sequences_genbank
    from genoctx.io.dataroot import require_unseen

    (_, seq), = list(read_sequences_genbank(data_root / HI))
    (_, coli), = list(read_sequences_genbank(
        data_root / "genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"))
    snps = bytearray(seq)
    for at in (1_000, 700_000, 1_500_000):
        snps[at] = ord("A") if snps[at] != ord("A") else ord("C")
    root = _root_with(tmp_path, data_root, [])
    for name, near in (("one base short", seq[:-1]), ("three SNPs", bytes(snps)),
                       ("a 100-kb piece", seq[500_000:600_000]),
                       ("joined to E. coli", coli[:1_000_000] + seq[:300_000]),
                       ("a 5-kb piece, lower case", seq[10_000:15_000].lower())):
        with pytest.raises(DataRoleError, match=f"record {name} is a near copy .* {HI}"):
            require_unseen([(name, near)], "mine.fna", root)
    require_unseen([("E. coli", coli), ("a shuffled piece", bytes(sorted(seq[:5_000])))],
                   "mine.fna", root)


def test_files_outside_the_manifest_are_refused(data_root, example_fasta, tmp_path):
    own = tmp_path / "mine.fa"
    own.write_text(">x\nACGTACGT\n")
    with pytest.raises(DataRoleError, match="not in the data manifest"):
        require_trainable(own, data_root)


def test_corpus_file_lists_hold_only_trainable_roles(data_root):
    manifest = load_manifest(data_root)
    lm = corpus_mod.manifest_files(["genomes/*"], {"train", "pretrain-only"}, data_root)
    assert lm and all(manifest[p].role in {"train", "pretrain-only"} for p in lm)
    assert not any("Brucella" in p or "Haemophilus" in p or "elegans" in p for p in lm)


def test_sampler_reverse_complement_swaps_strands(example_fasta):
    seq = b"".join(example_fasta.read_bytes().split(b"\n")[1:])
    ids = nt.encode(seq)
    labels = np.zeros(len(ids), dtype=np.int64)
    labels[100:400] = np.asarray(CDS_PLUS)[np.arange(300) % 3]
    labels[500:510] = IGNORE_INDEX
    corpus = corpus_mod.Corpus([corpus_mod.Record("pPCP1", ids, labels)])
    sampler = corpus_mod.WindowSampler(corpus, len(ids), seed=3)
    seen = set()
    for _ in range(8):
        x, y = sampler.sample(1)
        x, y = x[0], y[0]
        if (x == ids).all():
            assert (y == labels).all()
            seen.add("+")
        else:
            assert (x == nt.COMPLEMENT[ids[::-1]]).all()
            flipped = labels[::-1]
            expect = np.where(flipped == IGNORE_INDEX, IGNORE_INDEX,
                              np.asarray(RC_PERMUTATION)[np.clip(flipped, 0, None)])
            assert (y == expect).all()
            assert set(np.unique(y[y > 0])) <= set(CDS_MINUS)
            seen.add("-")
    assert seen == {"+", "-"}


def _two_kinds(example_fasta):
    """The pPCP1 example as one 'bacterial' record and, twice over, one 'eukaryote' record whose
    labels are all ignored (so that a window tells which it came from)."""
    seq = b"".join(example_fasta.read_bytes().split(b"\n")[1:])
    ids = nt.encode(seq)
    return corpus_mod.Corpus([
        corpus_mod.Record("b", ids, np.zeros(len(ids), dtype=np.int64), 0.5,
                          "genomes/bacteria/x.gbff.gz"),
        corpus_mod.Record("e", np.concatenate([ids, ids]),
                          np.full(2 * len(ids), IGNORE_INDEX, dtype=np.int64), 1.0,
                          "genomes/eukaryote_chunks/y.fa.gz")])


def test_eukaryote_weight_scales_only_the_eukaryote_records(example_fasta):
    corpus = _two_kinds(example_fasta)
    # length × weight: bacteria 1 × 0.5, eukaryote 2 × 1
    assert corpus_mod.sample_shares(corpus) == pytest.approx({"bacteria": 0.2, "eukaryote": 0.8})
    light = corpus_mod.weight_eukaryotes(corpus, 0.25)
    assert [r.weight for r in light.records] == [0.5, 0.25]
    assert [r.weight for r in corpus.records] == [0.5, 1.0]  # the input is left as it was
    assert corpus_mod.sample_shares(light) == pytest.approx({"bacteria": 0.5, "eukaryote": 0.5})
    # the sampler draws at those shares (the eukaryote record's labels are all ignored)
    for c, want in ((corpus, 0.8), (light, 0.5)):
        _, y = corpus_mod.WindowSampler(c, 64, seed=0).sample(2000)
        got = (y == IGNORE_INDEX).all(axis=1).mean()
        assert abs(got - want) < 0.04, (got, want)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InputError, match="eukaryote-weight"):
            corpus_mod.weight_eukaryotes(corpus, bad)


def test_eukaryote_weight_is_refused_outside_the_annotation_recipe(cli, tmp_path):
    code, _, err = cli(["train", "--recipe", "lm", "--eukaryote-weight", "4",
                        "--out", tmp_path / "r", "--steps", "1"])
    assert code != 0 and "annotation recipe only" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("args, message", [
    (["--steps", "0"], "--steps must be at least 1, got 0"),
    (["--batch-size", "-1"], "--batch-size must be at least 1"),
    (["--seq-len", "0"], "--seq-len must be at least 2 bases"),
    (["--lr", "nan"], "--lr must be a positive number"),
    (["--lr", "0"], "--lr must be a positive number"),
    (["--seed", "-1"], "--seed must be 0 or more"),
    (["--threads", "-1"], "--threads must be at least 1"),
    (["--stop-after", "0"], "--stop-after must be at least 1"),
    (["--time-limit", "0"], "--time-limit must be a positive number of seconds"),
    (["--init", "somewhere"], "--init applies to the annotation recipe only"),
    (["--out", "{tmp}/afile"], "afile is a file; give the run's folder"),
])
def test_bad_training_options_fail_before_any_work(cli, tmp_path, args, message):
    (tmp_path / "afile").write_text("x")
    args = [a.format(tmp=tmp_path) for a in args]
    code, _, err = cli(["train", "--recipe", "lm", "--out", tmp_path / "r", *args, "-q"])
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_steps_within_the_warm_up_are_noted(cli, tmp_path):
    """A run shorter than the recipe's warm-up (20 steps for lm) never reaches --lr nor decays:
    a note says so before any work (the audit found it silent)."""
    code, _, err = cli(["train", "--recipe", "lm", "--out", tmp_path / "r", "--steps", "10",
                        "--data-root", tmp_path / "nowhere"])
    assert code == 2 and "note: --steps 10 is within the lm recipe's warm-up of 20 steps: the " \
        "learning rate rises to 0.0015 of --lr 0.003 and never decays" in err
    for more in (["--steps", "21"], ["--steps", "10", "--quiet"]):
        code, _, err = cli(["train", "--recipe", "lm", "--out", tmp_path / "r", *more,
                            "--data-root", tmp_path / "nowhere"])
        assert code == 2 and "warm-up" not in err


def test_the_small_gene_loci_inside_their_archive_are_held_out(data_root):
    """The validation C. elegans small-gene loci sit as FASTA files inside a .tar.gz, which the
    guard did not read: a locus copied into a training file trained."""
    from pathlib import Path

    from genoctx.io.dataroot import _archive_sequences, require_unseen

    loci = _archive_sequences(Path(data_root) / "genomes/eukaryote_chunks/"
                              "C.elegans_smallgenes.tar.gz")
    _, seq = max(loci, key=lambda r: len(r[1]))
    assert len(loci) == 921 and len(seq) >= 1_000
    with pytest.raises(DataRoleError, match="C.elegans_smallgenes.tar.gz, which has role "
                                            "'validation'"):
        require_unseen([("locus", seq.lower())], "mine.fa", data_root)


def test_a_manifest_cannot_relabel_a_held_out_file_of_the_shared_data(data_root, tmp_path):
    """A data root whose MANIFEST.tsv lists B. melitensis (validation) as train trained it:
    the manifest was the only record of roles. genoctx ships the shared data's held-out
    sha256s (genoctx/weights/HELD_OUT.tsv), which keep their role whatever the manifest says."""
    import hashlib

    from genoctx.io.dataroot import FROZEN_HELD_OUT, frozen_held_out

    rel = "genomes/bacteria/Brucella_melitensis_16M.gbff.gz"
    data = (data_root / rel).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    assert frozen_held_out()[digest] == (rel, "validation")
    root = tmp_path / "root"
    (root / "genomes" / "bacteria").mkdir(parents=True)
    (root / rel).write_bytes(data)
    (root / "MANIFEST.tsv").write_text("path\tbytes\tsha256\trole\tlicense\tsource\n"
                                       f"{rel}\t{len(data)}\t{digest}\ttrain\t-\t-\n")
    with pytest.raises(DataRoleError, match=f"held out \\(role 'validation'\\) in genoctx's "
                                            f"frozen list \\({FROZEN_HELD_OUT.name}\\)"):
        require_trainable(root / rel, root)
    # every held-out row of the shared manifest is in the frozen list
    shared = {e.sha256 for e in load_manifest(data_root).values()
              if e.role in ("validation", "benchmark", "test/bench")}
    assert shared <= set(frozen_held_out())
