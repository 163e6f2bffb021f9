"""The ``genoctx`` command: a thin Typer layer over the library.

Each command group lives in its own module with a ``register(app)`` function. User errors
(:class:`genoctx.errors.GenoctxError`, missing files, bad formats) print one line on stderr and
exit with status 2; ``--debug`` anywhere on the command line shows the traceback instead.
"""

from __future__ import annotations

import importlib
import sys

import typer

try:  # typer >= 0.20 vendors click as typer._click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - older typer with click installed
    from click.exceptions import ClickException

from genoctx import __version__
from genoctx.errors import GenoctxError

app = typer.Typer(
    name="genoctx",
    help="Long-sequence genomics: tokenize, embed, annotate and score megabase regions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Command modules, in the order they appear in --help. Each defines register(app).
# the exit status after Ctrl-C (128 + SIGINT, as shells report it) and after SIGTERM (128 + 15:
# what a scheduler sends at a job's time limit, `scancel`, `kill`)
INTERRUPTED = 130
TERMINATED = 143
_signalled: list[int] = []  # SIGTERM received (see main)
# The arguments of the command being run, global options such as --debug included: ``run``'s
# argv, which is not sys.argv for the tests and other in-process callers. Commands that record
# how they were run (``genoctx eval``'s manifest) read it.
ARGV: list[str] = []

COMMAND_MODULES = ("tokenize", "info", "model", "embed", "train", "data", "annotate", "score_variants",
                   "eval")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"genoctx {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
) -> None:
    """genoctx: long-sequence genomics toolkit."""


def _register_all() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"genoctx.cli.{name}")
        except ModuleNotFoundError as exc:  # a command group not built yet
            if exc.name == f"genoctx.cli.{name}":
                continue
            raise
        module.register(app)


_register_all()


def run(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv`` and return the exit status (used by ``main`` and the tests)."""
    args = list(sys.argv[1:] if argv is None else argv)
    ARGV[:] = args
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    try:
        result = app(args=args, standalone_mode=False, prog_name="genoctx")
        if result == INTERRUPTED:  # typer turns Ctrl-C into Exit(130), returned here
            return _interrupted()
        return int(result) if isinstance(result, int) else 0
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        print("genoctx: aborted", file=sys.stderr)
        return INTERRUPTED
    except ClickException as exc:  # bad option, missing argument, ...
        exc.show(file=sys.stderr)
        return exc.exit_code
    except GenoctxError as exc:
        if debug:
            raise
        print(f"genoctx: error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        if debug:
            raise
        what = exc.filename or exc
        print(f"genoctx: error: {exc.strerror or 'cannot open'}: {what}", file=sys.stderr)
        return 2
    except OSError as exc:  # disk full, read-only file system, a file where a folder goes, ...
        if debug:
            raise
        where = f": {exc.filename}" if exc.filename else ""
        print(f"genoctx: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted()


def _interrupted() -> int:
    if _signalled:
        print("genoctx: stopped (SIGTERM)", file=sys.stderr)
        return TERMINATED
    print("genoctx: interrupted", file=sys.stderr)
    return INTERRUPTED


def _stop_on_sigterm() -> None:
    """Make SIGTERM stop a command as Ctrl-C does (it raises KeyboardInterrupt), so that what
    Ctrl-C cleans up is cleaned up then too: annotate's staged outputs, a training run's last
    line and loss plot. Without it the process dies at once and leaves its temporary files."""
    import signal

    def stop(signum, frame):
        _signalled.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def main() -> None:
    _stop_on_sigterm()
    sys.exit(run())


if __name__ == "__main__":
    main()
