"""sha256 side files and the JSON records shipped beside fitted files."""

import hashlib
import json

import pytest

from genoctx.errors import InputError
from genoctx.io.digest import verify_digest_file, write_digest, write_fit_record


def test_digest_side_file_catches_a_changed_file_and_feeds_the_record(tmp_path):
    weights = tmp_path / "w.safetensors"
    weights.write_bytes(b"fitted")
    digest = write_digest(weights)
    assert digest == hashlib.sha256(b"fitted").hexdigest()
    assert (tmp_path / "w.safetensors.sha256").read_text() == f"{digest}  w.safetensors\n"
    assert verify_digest_file(weights, "the weights", "refit them") == digest

    write_fit_record(tmp_path / "w.json", "genoctx.heads.x", "/data", weights, files={"a": "1"},
                     check="python b.py")
    info = json.loads((tmp_path / "w.json").read_text())
    assert list(info) == ["command", "sha256", "files", "check"]
    assert info["command"] == "python -m genoctx.heads.x --data-root /data"
    assert info["sha256"] == digest and info["files"] == {"a": "1"}

    weights.write_bytes(b"changed")
    with pytest.raises(InputError, match="does not match"):
        verify_digest_file(weights, "the weights", "refit them")
    (tmp_path / "w.safetensors.sha256").unlink()
    with pytest.raises(InputError, match="refit them"):
        verify_digest_file(weights, "the weights", "refit them")
