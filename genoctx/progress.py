"""Progress bars for long work (rich), silenced by ``quiet`` or when stderr is not a terminal."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class _NullTask:
    def advance(self, n: float = 1) -> None:
        pass

    def update(self, **kwargs) -> None:
        pass


class _Task:
    def __init__(self, progress: Progress, task_id):
        self._progress, self._id = progress, task_id

    def advance(self, n: float = 1) -> None:
        self._progress.advance(self._id, n)

    def update(self, **kwargs) -> None:
        self._progress.update(self._id, **kwargs)


@contextlib.contextmanager
def progress_bar(description: str, total: float | None, quiet: bool = False) -> Iterator:
    """A context manager yielding a task with ``advance(n)``; a no-op when quiet."""
    if quiet:
        yield _NullTask()
        return
    console = Console(file=sys.stderr)
    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console, transient=not console.is_terminal,
                  disable=not console.is_terminal) as progress:
        yield _Task(progress, progress.add_task(description, total=total))


@contextlib.contextmanager
def status(message: str, quiet: bool = False) -> Iterator[None]:
    """A spinner showing ``message`` while a step of unknown length runs (terminal only)."""
    console = Console(file=sys.stderr)
    if quiet or not console.is_terminal:
        yield
        return
    with console.status(message):
        yield
