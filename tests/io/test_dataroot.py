"""The data root and its manifest: clear errors for a bad root or manifest, and a file whose
bytes are not the ones its manifest row lists is named as changed."""

from __future__ import annotations

import hashlib

import pytest

from genoctx.errors import DataRoleError, InputError
from genoctx.io import dataroot
from genoctx.io.dataroot import load_manifest, require_role, resolve_data_root

HEADER = "path\tbytes\tsha256\trole\tlicense\tsource\n"


def _root(tmp_path, manifest: str, files: dict[str, bytes] | None = None):
    root = tmp_path / "root"
    root.mkdir()
    (root / "MANIFEST.tsv").write_text(manifest, encoding="utf-8")
    for rel, data in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def _row(rel: str, data: bytes, role: str) -> str:
    return f"{rel}\t{len(data)}\t{hashlib.sha256(data).hexdigest()}\t{role}\t-\t-\n"


@pytest.mark.parametrize("manifest, message", [
    ("path,bytes,sha256,role\na,1,x,train\n", "no column(s) path, bytes, sha256, role"),
    ("a.fa\t1\tx\ttrain\n", "no column(s)"),
    (HEADER + "a.fa\tmany\tx\ttrain\t-\t-\n", "line 2: bytes 'many' is not a whole number"),
    ("path\tsha256\trole\n", "no column(s) bytes"),
])
def test_a_malformed_manifest_is_one_clear_error(tmp_path, manifest, message):
    root = _root(tmp_path, manifest)
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_manifest(root)


def test_a_manifest_with_a_byte_order_mark_reads(tmp_path):
    data = b">a\nACGT\n"
    root = _root(tmp_path, "\ufeff" + HEADER + _row("a.fa", data, "train"), {"a.fa": data})
    assert require_role(root / "a.fa", {"train"}, root) == "train"


def test_a_listed_file_with_other_bytes_is_named_as_changed(tmp_path):
    data = b">a\nACGT\n"
    root = _root(tmp_path, HEADER + _row("genomes/a.fa", data, "train"),
                 {"genomes/a.fa": b">a\nACGA\n"})
    with pytest.raises(DataRoleError, match="not the one the data manifest lists for "
                                            "genomes/a.fa .*changed or replaced"):
        require_role(root / "genomes" / "a.fa", {"train"}, root)


def test_a_data_root_that_is_missing_or_a_file_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv(dataroot.ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(InputError, match=f"nowhere \\(\\${dataroot.ENV_VAR}=.*does not exist"):
        resolve_data_root()
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InputError, match="--data-root .*afile\\) is a file, not a folder"):
        resolve_data_root(tmp_path / "afile")


def test_evaluation_refuses_a_file_holding_another_listed_files_bytes(tmp_path):
    """Both files are benchmark data; one replaced by the other's bytes passes the role check
    (its sha256 is listed) but not the check of its own row."""
    from genoctx.eval.harness import BenchContext

    a, b = b">a\n" + b"ACGT" * 50 + b"\n", b">b\n" + b"TTGA" * 50 + b"\n"
    root = _root(tmp_path, HEADER + _row("x/a.fa", a, "benchmark") + _row("x/b.fa", b, "benchmark"),
                 {"x/a.fa": b, "x/b.fa": b})
    ctx = BenchContext.__new__(BenchContext)
    ctx.data_root, ctx.data_files = root, {}
    assert ctx.data_file("x/b.fa") == root / "x" / "b.fa"
    with pytest.raises(InputError, match="x/a.fa: its sha256 .* changed or replaced"):
        ctx.data_file("x/a.fa")


def test_a_manifest_cannot_relabel_held_out_data(tmp_path):
    """A second row for a path decided the file's role by its order (the last won: appended
    as train, a validation genome trained); a role written 'Validation ' was no role at all
    (neither held out nor trainable, so its sequences were never compared); and a held-out
    file missing from the root was skipped without a word, so a copy of it trained."""
    from genoctx.io.dataroot import require_unseen

    genome = b">g\n" + b"ACGGTCATTGCAAGTCCA" * 400 + b"\n"
    held = _root(tmp_path, HEADER + _row("genomes/g.fa", genome, "validation")
                 + _row("genomes/g.fa", genome, "train"), {"genomes/g.fa": genome})
    with pytest.raises(InputError, match="line 3: genomes/g.fa is listed a second time"):
        load_manifest(held)
    spaced = tmp_path / "spaced"
    spaced.mkdir()
    (spaced / "MANIFEST.tsv").write_text(HEADER + _row("g.fa", genome, "Validation "))
    (spaced / "g.fa").write_bytes(genome)
    assert load_manifest(spaced)["g.fa"].role == "validation"
    with pytest.raises(DataRoleError, match="role 'validation'"):
        require_unseen([("copy", genome[3:-1].lower())], "mine.fa", spaced)
    gone = tmp_path / "gone"  # (another root: the held-out sequences are read once per root)
    gone.mkdir()
    (gone / "MANIFEST.tsv").write_text(HEADER + _row("g.fa", genome, "validation"))
    with pytest.raises(DataRoleError, match="g.fa \\(role 'validation' .*\\) is missing"):
        require_unseen([("other", b"ACGT" * 500)], "mine.fa", gone)


def test_a_manifest_rewritten_in_the_same_process_is_read_again(tmp_path, example_fasta):
    """The held-out sequences were read once per data root and process: a file relabelled
    held out in a manifest rewritten meanwhile (`genoctx data manifest`, a notebook that
    edits it) was still compared with the old list, and a copy of it trained."""
    from genoctx.io.dataroot import require_unseen
    from genoctx.io.fasta import iter_records

    genome = example_fasta.read_bytes()
    (_, seq), = iter_records(example_fasta)
    root = _root(tmp_path, HEADER + _row("pPCP1.fna", genome, "train"), {"pPCP1.fna": genome})
    require_unseen([("copy", seq)], "mine.fa", root)  # train data: no objection
    manifest = root / "MANIFEST.tsv"
    manifest.write_text(HEADER + _row("pPCP1.fna", genome, "validation"))
    with pytest.raises(DataRoleError, match="role 'validation'"):
        require_unseen([("copy", seq)], "mine.fa", root)
    manifest.unlink()
    with pytest.raises(InputError, match="has no MANIFEST.tsv"):
        require_unseen([("copy", seq)], "mine.fa", root)
