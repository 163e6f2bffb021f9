"""Write-then-rename outputs: never a partial file, and never a device, pipe or link replaced."""

from __future__ import annotations

import os
import threading

import pytest

from genoctx.io.atomic import atomic_open


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write("half")
        raise RuntimeError("stopped")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_symbolic_link_is_followed_and_kept(tmp_path):
    real = tmp_path / "real.vcf"
    real.write_text("old\n")
    link = tmp_path / "link.vcf"
    link.symlink_to(real)
    with atomic_open(link) as fh:
        fh.write("new\n")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_is_written_through_not_replaced(tmp_path):
    """`-o /dev/stdout` and process substitution hand over a pipe: the bytes go into it."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    got = []

    def read():
        with open(pipe) as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read)
    reader.start()
    with atomic_open(pipe) as fh:
        fh.write("through the pipe\n")
    reader.join(timeout=10)
    assert got == ["through the pipe\n"]
    assert not pipe.is_file() and pipe.exists()  # still a pipe
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]
