"""`genoctx data manifest` / `genoctx data check`: a data root of one's own genomes, which
`genoctx train` then reads (and whose held-out rows it refuses)."""

import gzip
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from genoctx.io.dataroot import load_manifest


@pytest.fixture
def root(tmp_path, example_genbank, example_fasta) -> Path:
    """genomes/bacteria/ holds pPCP1 as GenBank (gzip); genomes/unannotated/ its FASTA, an
    index and a hidden file beside it."""
    bacteria, plain = tmp_path / "d" / "genomes" / "bacteria", tmp_path / "d" / "genomes" / "unannotated"
    bacteria.mkdir(parents=True)
    plain.mkdir(parents=True)
    (bacteria / "pPCP1.gbff.gz").write_bytes(gzip.compress(example_genbank.read_bytes(), mtime=0))
    shutil.copy(example_fasta, plain / "pPCP1.fna")
    (plain / "pPCP1.fna.fai").write_text("x\t1\t1\t1\t2\n")
    (plain / ".notes").write_text("not data")
    return tmp_path / "d"


def _rows(root: Path) -> dict[str, list[str]]:
    lines = (root / "MANIFEST.tsv").read_text().splitlines()
    assert lines[0] == "path\tbytes\tsha256\trole\tlicense\tsource"
    return {r.split("\t")[0]: r.split("\t") for r in lines[1:]}


def test_manifest_lists_every_data_file_with_its_sha256_and_role(cli, root):
    code, _, err = cli(["data", "manifest", root, "--pretrain-only", "genomes/unannotated/*",
                        "--license", "CC0", "--source", "my lab"])
    assert code == 0, err
    rows = _rows(root)
    assert sorted(rows) == ["genomes/bacteria/pPCP1.gbff.gz", "genomes/unannotated/pPCP1.fna"]
    for rel, (_, size, sha, role, lic, src) in rows.items():
        data = (root / rel).read_bytes()
        assert (int(size), sha) == (len(data), hashlib.sha256(data).hexdigest())
        assert (lic, src) == ("CC0", "my lab")
        assert role == ("pretrain-only" if "unannotated" in rel else "train")
    assert load_manifest(root)["genomes/bacteria/pPCP1.gbff.gz"].role == "train"
    assert "2 files added (1 pretrain-only, 1 train)" in err

    # a second run would decide roles again: refused; --update keeps rows and adds new files
    before = (root / "MANIFEST.tsv").read_bytes()
    code, _, err = cli(["data", "manifest", root, "--held-out", "*"])
    assert code == 2 and "--update" in err and (root / "MANIFEST.tsv").read_bytes() == before
    extra = root / "genomes" / "bacteria" / "more.gbff.gz"
    shutil.copy(root / "genomes" / "bacteria" / "pPCP1.gbff.gz", extra)
    code, _, err = cli(["data", "manifest", root, "--update", "--held-out", "*"])
    assert code == 0, err
    rows = _rows(root)
    assert rows["genomes/bacteria/more.gbff.gz"][3] == "validation"
    assert rows["genomes/bacteria/pPCP1.gbff.gz"][3] == "train"  # kept as it was
    assert load_manifest(root)["genomes/bacteria/more.gbff.gz"].role == "validation"
    extra.unlink()  # a held-out row whose file is gone is kept, not dropped
    code, _, err = cli(["data", "manifest", root, "--update"])
    assert code == 0 and "more.gbff.gz is listed but missing" in err
    assert "genomes/bacteria/more.gbff.gz" in _rows(root)


@pytest.mark.parametrize("args, message", [
    (["--role", "training"], "unknown role 'training'"),
])
def test_manifest_refuses_unknown_roles_and_writes_nothing(cli, root, args, message):
    code, _, err = cli(["data", "manifest", root, *args])
    assert code == 2 and message in err and not (root / "MANIFEST.tsv").exists()
    code, _, err = cli(["data", "manifest", root / "nope"])
    assert code == 2 and "not a folder" in err


def test_check_names_changed_missing_and_unlisted_files(cli, root):
    assert cli(["data", "manifest", root, "-q"])[0] == 0
    code, _, err = cli(["data", "check", root])
    assert code == 0, err
    assert "2 rows (2 train); 0 changed, 0 missing, 0 not listed" in err
    assert "recipe annotation: reads 1 files: genomes/bacteria/pPCP1.gbff.gz" in err
    fasta = root / "genomes" / "unannotated" / "pPCP1.fna"
    fasta.write_bytes(fasta.read_bytes().replace(b"ACGT", b"ACGA", 1))  # same size, other bytes
    (root / "genomes" / "bacteria" / "pPCP1.gbff.gz").unlink()
    (root / "genomes" / "new.fa").write_text(">x\nACGT\n")
    code, _, err = cli(["data", "check", root])
    assert code == 1
    assert "changed: genomes/unannotated/pPCP1.fna" in err
    assert "missing: genomes/bacteria/pPCP1.gbff.gz" in err
    assert "not listed (training refuses it): genomes/new.fa" in err
    code, _, err = cli(["data", "check", root / "genomes"])
    assert code == 2 and "no MANIFEST.tsv" in err and "genoctx data manifest" in err


def test_check_names_a_eukaryote_annotation_without_its_sequences(cli, tmp_path):
    chunks = tmp_path / "e" / "genomes" / "eukaryote_chunks"
    chunks.mkdir(parents=True)
    (chunks / "worm.gff.gz").write_bytes(gzip.compress(b"##gff-version 3\n", mtime=0))
    assert cli(["data", "manifest", tmp_path / "e", "-q"])[0] == 0
    code, _, err = cli(["data", "check", tmp_path / "e"])
    assert code == 1
    assert "missing: genomes/eukaryote_chunks/worm.fa.gz (a recipe reads it beside" in err


def test_a_root_of_ones_own_genomes_trains_and_keeps_genoctx_held_out_genomes_out(
        cli, root, data_root, tmp_path):
    """A copy of a held-out genome of the shared data is listed with its held-out role
    whatever the options say; relabelled train by hand, check flags it and training refuses
    it; the rest trains."""
    held = data_root / "genomes" / "bacteria" / "Haemophilus_influenzae_Rd_KW20.gbff.gz"
    shutil.copy(held, root / "genomes" / "bacteria" / "mine.gbff.gz")
    code, _, err = cli(["data", "manifest", root, "--role", "train"])
    assert code == 0 and "1 file(s) are ones genoctx holds out" in err
    assert "genomes/bacteria/mine.gbff.gz (validation)" in err
    assert _rows(root)["genomes/bacteria/mine.gbff.gz"][3] == "validation"

    manifest = root / "MANIFEST.tsv"
    manifest.write_text(manifest.read_text().replace("\tvalidation\t", "\ttrain\t"))
    code, _, err = cli(["data", "check", root, "-q"])
    assert code == 1 and "held out by genoctx: genomes/bacteria/mine.gbff.gz" in err

    def train(out):
        return subprocess.run(
            [sys.executable, "-m", "genoctx", "train", "--recipe", "annotation", "--init",
             "embedded", "--data-root", str(root), "--out", str(out), "--steps", "1",
             "--batch-size", "1", "--seq-len", "256", "--threads", "1", "-q"],
            capture_output=True, text=True, check=False)

    res = train(tmp_path / "refused")
    assert res.returncode != 0 and "frozen list" in res.stderr, res.stderr[-2000:]
    (root / "genomes" / "bacteria" / "mine.gbff.gz").unlink()
    manifest.write_text("".join(ln for ln in manifest.read_text().splitlines(keepends=True)
                                if "mine.gbff.gz" not in ln))
    res = train(tmp_path / "run")
    assert res.returncode == 0, res.stderr[-2000:]
    assert (tmp_path / "run" / "export" / "head.safetensors").is_file()
    assert "pPCP1.gbff.gz" in (tmp_path / "run" / "run.json").read_text()
