"""Checkpoints: round trip, sha256 verification, clear errors, and the embedded default."""

import hashlib
import json

import pytest
import torch

from genoctx.errors import GenoctxError, InputError
from genoctx.model import checkpoint
from genoctx.model.model import GenoCtxModel

from model_testutil import random_tokens, small_config


@pytest.fixture
def saved(tmp_path):
    torch.manual_seed(0)
    model = GenoCtxModel(small_config()).eval()
    model.save_pretrained(tmp_path / "ckpt")
    return model, tmp_path / "ckpt"


def test_round_trip(saved):
    model, path = saved
    assert sorted(p.name for p in path.iterdir()) == sorted(
        [checkpoint.WEIGHTS_NAME, checkpoint.CONFIG_NAME, checkpoint.DIGEST_NAME])
    digest = hashlib.sha256((path / checkpoint.WEIGHTS_NAME).read_bytes()).hexdigest()
    assert (path / checkpoint.DIGEST_NAME).read_text().split() == [digest, checkpoint.WEIGHTS_NAME]
    loaded = GenoCtxModel.from_pretrained(path)
    assert loaded.config == model.config
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items(),
                                     strict=True):
        assert torch.equal(a, b), name
    x = random_tokens(1, 300)
    torch.testing.assert_close(loaded.log_likelihood(x), model.log_likelihood(x))
    # The weights file itself is accepted too.
    assert GenoCtxModel.from_pretrained(path / checkpoint.WEIGHTS_NAME).config == model.config


def test_written_files_are_the_same_bytes_every_time_and_readable(saved, tmp_path):
    """safetensors writes its metadata keys in no fixed order (a hash map): one key keeps the
    same weights the same bytes, so their sha256 holds from one process to the next. The files
    get the usual mode (safetensors makes its file 0600)."""
    import os
    import struct

    model, path = saved
    raw = (path / checkpoint.WEIGHTS_NAME).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert list(json.loads(raw[8:8 + n])["__metadata__"]) == ["format"]
    model.save_pretrained(tmp_path / "again")
    assert (tmp_path / "again" / checkpoint.WEIGHTS_NAME).read_bytes() == raw
    mask = os.umask(0)
    os.umask(mask)
    for p in path.iterdir():
        assert p.stat().st_mode & 0o777 == 0o666 & ~mask, p.name


def test_tampered_weights_are_refused(saved):
    _, path = saved
    weights = path / checkpoint.WEIGHTS_NAME
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0x01  # one flipped bit in the last tensor
    weights.write_bytes(bytes(data))
    with pytest.raises(InputError, match="does not match model.safetensors.sha256"):
        GenoCtxModel.from_pretrained(path)


def test_tampered_digest_is_refused(saved):
    _, path = saved
    (path / checkpoint.DIGEST_NAME).write_text("0" * 64 + "  model.safetensors\n")
    with pytest.raises(InputError, match="corrupt or were modified"):
        GenoCtxModel.from_pretrained(path)


def test_missing_files_and_bad_configs(saved, tmp_path):
    _, path = saved
    with pytest.raises(InputError, match="not found"):
        GenoCtxModel.from_pretrained(tmp_path / "nowhere")
    meta = json.loads((path / checkpoint.CONFIG_NAME).read_text())
    meta["config"]["num_heads"] = 3  # no longer a multiple of num_kv_heads
    (path / checkpoint.CONFIG_NAME).write_text(json.dumps(meta))
    with pytest.raises(InputError, match="invalid model config"):
        GenoCtxModel.from_pretrained(path)
    (path / checkpoint.CONFIG_NAME).write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(InputError, match="not a genoctx model config"):
        GenoCtxModel.from_pretrained(path)
    (path / checkpoint.DIGEST_NAME).unlink()
    with pytest.raises(InputError, match="lacks model.safetensors.sha256"):
        GenoCtxModel.from_pretrained(path)


def test_weights_that_do_not_fit_the_config(saved):
    model, path = saved
    other = GenoCtxModel(small_config(d_model=48))
    checkpoint.write_checkpoint(path, other.state_dict(), model.config)
    with pytest.raises(InputError, match="does not fit its config.json") as err:
        GenoCtxModel.from_pretrained(path)
    # one line: how many tensors differ, the first named (torch's message lists every one)
    assert "\n" not in str(err.value)
    assert "of another shape, weights vs config (first: " in str(err.value)
    assert "[48]" in str(err.value) or ", 48]" in str(err.value)


def test_embedded_without_weights_is_a_clear_error():
    if (checkpoint.embedded_dir() / checkpoint.WEIGHTS_NAME).exists():
        model = GenoCtxModel.from_pretrained("embedded")  # shipped: it must load and verify
        assert model.num_params() == model.config.num_params()
        return
    with pytest.raises(GenoctxError, match="no trained weights ship"):
        GenoCtxModel.from_pretrained("embedded")
