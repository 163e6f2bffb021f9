"""Write-then-rename outputs: never a partial file, and never a device, pipe or link replaced."""

from __future__ import annotations

import os
import threading

import pytest

from genoctx.errors import InputError
from genoctx.io.atomic import atomic_open, staged_prefix


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write("half")
        raise RuntimeError("stopped")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_failed_write_removes_the_folders_it_made(tmp_path):
    """Missing folders of an output are made for it; a run that fails (``score-variants``
    opens its -o before it reads the reference) used to leave them behind, empty. Folders
    that were there, or that something else put files into, stay."""
    deep = tmp_path / "a" / "b" / "out.vcf"
    with pytest.raises(RuntimeError), atomic_open(deep) as fh:
        fh.write("half")
        raise RuntimeError("stopped")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError), staged_prefix(tmp_path / "c" / "d" / "genome") as stage:
        _write_set(stage, ["gff3"], fail_after=0)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError), atomic_open(deep) as fh:
        (tmp_path / "a" / "other.txt").write_text("kept\n")  # another writer's file
        raise RuntimeError("stopped")
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["other.txt"]
    with atomic_open(deep) as fh:  # a write that succeeds keeps them
        fh.write("whole\n")
    assert deep.read_text() == "whole\n"


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

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    with atomic_open(pipe) as fh:
        fh.write("through the pipe\n")
    reader.join(timeout=10)
    assert got == ["through the pipe\n"]
    assert not pipe.is_file() and pipe.exists()  # still a pipe
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc/self/fd here")
def test_a_link_to_an_anonymous_pipe_is_written_through(tmp_path):
    """`-o /dev/stdout | cat` and `-o >(cmd)`: the path is a link to /proc/self/fd/N, whose
    target (pipe:[id]) names no file; the bytes still go into the pipe."""
    r, w = os.pipe()
    try:
        link = tmp_path / "stdout"
        link.symlink_to(f"/proc/self/fd/{w}")
        with atomic_open(link) as fh:
            fh.write("into the pipe\n")
        os.close(w)
        w = None
        with os.fdopen(r) as fh:
            r = None
            assert fh.read() == "into the pipe\n"
        assert [p.name for p in tmp_path.iterdir()] == ["stdout"]
    finally:
        for fd in (r, w):
            if fd is not None:
                os.close(fd)


def _write_set(stage, names, fail_after=None):
    for k, name in enumerate(names):
        if k == fail_after:
            raise RuntimeError("stopped halfway")
        with atomic_open(stage.with_name(f"{stage.name}.{name}")) as fh:
            fh.write(f"new {name}\n")


def test_a_set_of_files_lands_together_or_not_at_all(tmp_path):
    """An earlier run's files stay whole when a later run fails halfway: never new GFF3 beside
    an old BED."""
    prefix = tmp_path / "out" / "genome"
    with staged_prefix(prefix) as stage:
        assert stage.name == "genome" and stage.parent.parent == tmp_path / "out"
        _write_set(stage, ["gff3", "bed"])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["genome.bed", "genome.gff3"]
    assert (tmp_path / "out" / "genome.bed").read_text() == "new bed\n"

    (tmp_path / "out" / "genome.gff3").write_text("old gff3\n")
    (tmp_path / "out" / "genome.bed").write_text("old bed\n")
    with pytest.raises(RuntimeError), staged_prefix(prefix) as stage:
        _write_set(stage, ["gff3", "bed"], fail_after=1)
    assert (tmp_path / "out" / "genome.gff3").read_text() == "old gff3\n"
    assert (tmp_path / "out" / "genome.bed").read_text() == "old bed\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["genome.bed", "genome.gff3"]


def test_a_folder_in_the_way_moves_no_file_of_the_set(tmp_path):
    (tmp_path / "g.bed").mkdir()
    with pytest.raises(InputError, match=r"g\.bed: it is a folder"), \
            staged_prefix(tmp_path / "g") as stage:
        _write_set(stage, ["gff3", "bed"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.bed"]  # no g.gff3, no stage


def test_a_set_member_that_is_a_link_or_pipe_is_kept(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "real.gff3").write_text("old\n")
    (tmp_path / "g.gff3").symlink_to(elsewhere / "real.gff3")
    got = []
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "g.bed")
        reader = threading.Thread(target=lambda: got.append((tmp_path / "g.bed").read_text()),
                                  daemon=True)
        reader.start()
    with staged_prefix(tmp_path / "g") as stage:
        _write_set(stage, ["gff3", "bed"] if hasattr(os, "mkfifo") else ["gff3"])
    assert (tmp_path / "g.gff3").is_symlink()
    assert (elsewhere / "real.gff3").read_text() == "new gff3\n"
    if hasattr(os, "mkfifo"):
        reader.join(timeout=10)
        assert got == ["new bed\n"] and not (tmp_path / "g.bed").is_file()


def test_staging_folders_of_killed_runs_are_removed_by_the_next_run(tmp_path):
    """A SIGKILLed annotate (the OOM killer, a scheduler's hard limit) cannot clean up: its
    hidden folder, full-size outputs inside, was left for good. The next run into the prefix
    removes those of dead processes on this host, and no other."""
    import subprocess
    import sys

    from genoctx.io import atomic

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    host = atomic._HOST
    stale = tmp_path / f".g.{host}.{pid}.abc.tmp"
    live = tmp_path / f".g.{host}.{os.getpid()}.def.tmp"
    other = tmp_path / f".g.elsewhere.{pid}.ghi.tmp"
    for folder in (stale, live, other):
        folder.mkdir()
        (folder / "g.gff3").write_text("x" * 1000)
    with atomic.staged_prefix(tmp_path / "g") as staged:
        staged.with_name("g.bed").write_text("ok\n")
    assert not stale.exists() and live.exists() and other.exists()
    assert (tmp_path / "g.bed").read_text() == "ok\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name, "g.bed"])
