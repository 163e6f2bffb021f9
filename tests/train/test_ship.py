"""Shipping a run as the embedded checkpoint: files, records and the README beside them."""

import json

import pytest

from genoctx.errors import GenoctxError
from genoctx.heads.annotation import (
    AnnotationHead,
    AnnotationHeadConfig,
    load_annotation_model,
    save_annotation_model,
)
from genoctx.model.model import GenoCtxModel
from genoctx.train.ship import refresh_validation, ship


def _record(recipe: str, command: str) -> dict:
    return {"recipe": recipe, "command": command, "batch_size": 2, "seq_len": 64,
            "loop": {"steps": 5, "threads": 2}, "steps_done": 5, "final_loss": 1.25,
            "wall_s": 60.0,
            "data_files": [{"path": "genomes/bacteria/x.gbff.gz", "sha256": "ab" * 32,
                            "role": "train"}]}


@pytest.fixture
def runs(tmp_path):
    from genoctx.io.dataroot import sha256_file
    from genoctx.model.checkpoint import verify_digest

    lm = tmp_path / "lm"
    GenoCtxModel.from_config("tiny").save_pretrained(lm / "export")
    (lm / "run.json").write_text(json.dumps(_record("lm", "genoctx train --recipe lm")))
    (lm / "loss.csv").write_text("step,lr,elapsed_s,loss\n5,1e-3,90.0,1.3\n")
    ann = tmp_path / "ann"
    export = ann / "export"
    backbone = GenoCtxModel.from_config("tiny")
    save_annotation_model(export, backbone, AnnotationHead(AnnotationHeadConfig(in_dim=256)))
    (export / "TRAINING.json").write_text(json.dumps(
        _record("annotation", "genoctx train --recipe annotation --init runs/lm/export")
        | {"init": "runs/lm/export", "init_sha256": verify_digest(lm / "export")}))
    (export / "decoder.json").write_text('{"neural_gene_weight": 0.25}')
    (ann / "loss.csv").write_text("step,lr,elapsed_s,loss\n5,1e-3,120.0,1.1\n")
    metrics = tmp_path / "metrics.json"
    row = {"sensitivity": 0.9, "precision": 0.95, "f1": 0.924, "start_agreement": 0.88}
    metrics.write_text(json.dumps({
        "manifest": {"command": "genoctx eval annotation-bacteria --model runs/ann/export",
                     "model": {"model_sha256": verify_digest(export),
                               "head_sha256": sha256_file(export / "head.safetensors")}},
        "benchmarks": {"annotation-bacteria": {"metrics": {"genomes": {"G": {
            "genoctx (model)": row, "prodigal": row,
            "per_base": {"f1": 0.8, "mcc": 0.6}}}}}}}))
    return lm, export, metrics


def test_ship_copies_weights_records_and_logs_and_writes_the_readme(runs, tmp_path):
    lm, export, metrics = runs
    dest = tmp_path / "weights"
    dest.mkdir()
    (dest / "stale.bin").write_text("old")
    (dest / "__init__.py").write_text("")
    for kept in ("orf_scorer.json", "eukaryote_coding.json"):  # fitted separately: kept
        (dest / kept).write_text("{}")
    ship(export, dest, lm, metrics)
    names = {p.name for p in dest.iterdir()}
    assert "stale.bin" not in names and "__init__.py" in names
    assert {"orf_scorer.json", "eukaryote_coding.json"} <= names
    assert {"model.safetensors", "head.safetensors", "decoder.json", "TRAINING.json",
            "TRAINING_lm.json", "lm_loss.csv", "annotation_loss.csv",
            "VALIDATION.json"} <= names
    load_annotation_model(dest)  # both sha256 files still verify
    readme = (dest / "README.md").read_text()
    assert readme.index("genoctx train --recipe lm") < readme.index("--recipe annotation")
    assert "2.0 min" in readme  # wall time from the loss log when it exceeds the record
    assert "`genomes/bacteria/x.gbff.gz`" in readme and "(train)" in readme
    assert "| G | genoctx (model) | 0.9000 | 0.9500 | 0.9240 | 0.8800 |" in readme
    assert "F1 0.8000 (MCC 0.6000)" in readme
    assert "`annotation_loss.csv`" in readme
    assert "`orf_scorer.json`" in readme and "python -m genoctx.heads.orf_scorer" in readme
    assert "python -m genoctx.heads.eukaryote_coding" in readme


def test_ship_refuses_a_corrupt_export(runs, tmp_path):
    _, export, _ = runs
    (export / "head.safetensors").write_bytes(b"not the weights")
    with pytest.raises(GenoctxError, match="sha256"):
        ship(export, tmp_path, None, None)


def _metrics_of(dest, tmp_path, sensitivity, model_sha256=None):
    from genoctx.io.dataroot import sha256_file
    from genoctx.model.checkpoint import verify_digest

    row = {"sensitivity": sensitivity, "precision": 0.97, "f1": 0.95, "start_agreement": 0.9}
    path = tmp_path / f"metrics-{sensitivity}.json"
    path.write_text(json.dumps({
        "manifest": {"command": "genoctx eval annotation-bacteria --out results/eval-new",
                     "model": {"model_sha256": model_sha256 or verify_digest(dest),
                               "head_sha256": sha256_file(dest / "head.safetensors")}},
        "benchmarks": {"annotation-bacteria": {"metrics": {"genomes": {"G": {
            "genoctx (model)": row}}}}}}))
    return path


def test_refresh_validation_replaces_the_record_and_the_readme_section(runs, tmp_path):
    lm, export, metrics = runs
    dest = tmp_path / "weights"
    dest.mkdir()
    ship(export, dest, lm, metrics)
    before = (dest / "README.md").read_text()
    new = _metrics_of(dest, tmp_path, 0.9321)
    refresh_validation(dest, new)
    readme = (dest / "README.md").read_text()
    assert json.loads((dest / "VALIDATION.json").read_text()) == json.loads(new.read_text())
    assert "| G | genoctx (model) | 0.9321 | 0.9700 | 0.9500 | 0.9000 |" in readme
    assert "0.9000 | 0.9500 | 0.9240" not in readme  # the old table is gone, not appended to
    assert readme.count("## Validation") == 1 and "results/eval-new" in readme
    size = (dest / "VALIDATION.json").stat().st_size
    assert f"- `VALIDATION.json` ({size:,} bytes)" in readme
    cut = before.index("## Validation")  # everything above the section is kept
    assert readme.startswith(before[:cut].replace(
        next(line for line in before.splitlines() if line.startswith("- `VALIDATION.json`")),
        f"- `VALIDATION.json` ({size:,} bytes)"))


def test_refresh_validation_refuses_metrics_of_other_weights(runs, tmp_path):
    lm, export, metrics = runs
    dest = tmp_path / "weights"
    dest.mkdir()
    ship(export, dest, lm, metrics)
    before = {p.name: p.read_bytes() for p in dest.iterdir()}
    other = _metrics_of(dest, tmp_path, 0.5, model_sha256="0" * 64)
    with pytest.raises(GenoctxError, match="model_sha256"):
        refresh_validation(dest, other)
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == before


def test_a_run_trained_on_from_the_shipped_checkpoint_ships_with_every_command(runs, tmp_path,
                                                                               monkeypatch):
    """Ship, train on from the shipped checkpoint (its own dest), ship that: the README lists
    lm, first annotation run and the continuation in order, and a third generation still
    finds all of them."""
    lm, export, metrics = runs
    dest = tmp_path / "weights"
    dest.mkdir()
    ship(export, dest, lm, metrics)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("genoctx.model.checkpoint.embedded_dir", lambda: dest)
    for gen in (2, 3):
        nxt = tmp_path / f"ann{gen}" / "export"
        save_annotation_model(nxt, GenoCtxModel.from_config("tiny"),
                              AnnotationHead(AnnotationHeadConfig(in_dim=256)))
        rec = _record("annotation", f"genoctx train --recipe annotation --init weights #{gen}")
        rec["init"] = "weights" if gen == 2 else "embedded"  # as `--init embedded` records it
        (nxt / "TRAINING.json").write_text(json.dumps(rec))
        ship(nxt, dest, None, None)
        readme = (dest / "README.md").read_text()
        order = ["genoctx train --recipe lm`", "--init runs/lm/export`",
                 *[f"--init weights #{g}`" for g in range(2, gen + 1)]]
        at = [readme.index(c) for c in order]
        assert at == sorted(at), readme
        assert json.loads((dest / "TRAINING_lm.json").read_text())["recipe"] == "lm"
        assert len(json.loads((dest / "TRAINING_earlier.json").read_text())) == gen


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("bad, message", [
    (lambda t, lm: ["--metrics", t / "missing.json"], "missing.json is missing"),
    (lambda t, lm: ["--metrics", _write(t / "empty.json", "{}")], "no annotation-bacteria"),
    (lambda t, lm: ["--metrics", _write(t / "bad.json", '{"benchmarks": {"annotation-bacteria":'
                                                        ' {"metrics": {}}}}')],
     "malformed annotation-bacteria results"),
    (lambda t, lm: ["--metrics", _write(t / "text.json", "not json")], "cannot be read as JSON"),
    (lambda t, lm: ["--lm-run", _mkdir(t / "lm_stopped")], "run.json is missing"),
    (lambda t, lm: ["--lm-run", lm, "--dest", t / "no" / "such" / "weights"], "does not exist"),
])
def test_a_bad_input_is_one_line_and_leaves_the_shipped_checkpoint_as_it_was(
        runs, tmp_path, capsys, bad, message):
    """ship cleared --dest (the embedded checkpoint by default) before it read the metrics and
    the lm run's record: a bad one ended in a traceback with the weights' README gone and the bad
    metrics in place. Every input is checked first now; the folder is replaced only whole."""
    from genoctx.train.ship import main

    lm, export, metrics = runs
    dest = tmp_path / "weights"
    dest.mkdir()
    (dest / "__init__.py").write_text("")
    ship(export, dest, lm, metrics)
    before = _snapshot(dest)
    argv = [export, "--dest", dest, "--lm-run", lm, "--metrics", metrics, *bad(tmp_path, lm)]
    with pytest.raises(SystemExit) as stop:
        main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    assert _snapshot(dest) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".weights")]  # no leftovers


def test_ship_makes_a_missing_dest_and_leaves_nothing_beside_it(runs, tmp_path):
    lm, export, metrics = runs
    dest = tmp_path / "new"
    ship(export, dest, lm, metrics)
    load_annotation_model(dest)
    ship(export, dest, lm, metrics)  # and replaces it whole
    assert "VALIDATION.json" in {p.name for p in dest.iterdir()}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".new")]


def _write(path, text):
    path.write_text(text)
    return path


def _mkdir(path):
    path.mkdir()
    return path


def test_ship_refuses_metrics_of_other_weights_and_an_lm_run_that_is_not_the_init(runs, tmp_path,
                                                                                 capsys):
    """`ship --validation` refused metrics measured with other weights, but `ship --metrics`
    put their table into the README; and any --lm-run was listed as the first step of weights
    whose backbone never came from it. Both are refused now, the destination left as it was."""
    from genoctx.train.ship import main

    lm, export, metrics = runs
    dest = tmp_path / "weights"
    dest.mkdir()
    ship(export, dest, lm, metrics)
    before = _snapshot(dest)
    other = json.loads(metrics.read_text())
    other["manifest"]["model"]["model_sha256"] = "0" * 64
    other_metrics = _write(tmp_path / "other.json", json.dumps(other))
    other_lm = tmp_path / "lm2"
    GenoCtxModel.from_config("tiny").save_pretrained(other_lm / "export")
    (other_lm / "run.json").write_text((lm / "run.json").read_text())
    record = json.loads((export / "TRAINING.json").read_text())
    for argv, message in [
        (["--lm-run", lm, "--metrics", other_metrics], "was measured with model_sha256 000000"),
        (["--lm-run", other_lm, "--metrics", metrics], "not from " + str(other_lm / "export")),
    ]:
        with pytest.raises(SystemExit) as stop:
            main([str(a) for a in [export, "--dest", dest, *argv]])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and message in err and err.count("\n") == 1, err
        assert _snapshot(dest) == before
    from genoctx.train.ship import _check_lm_run

    with pytest.raises(GenoctxError, match=r"started from random weights \(no --init\)"):
        _check_lm_run({**record, "init": None, "init_sha256": None}, lm)
    _check_lm_run({**record, "init_sha256": None, "cwd": str(tmp_path / "x")}
                  | {"init": str(lm / "export")}, lm)  # an earlier record: by its path
