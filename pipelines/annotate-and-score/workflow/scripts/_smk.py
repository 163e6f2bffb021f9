"""Shared by the workflow's scripts: run ``main(snakemake)`` with stderr in the rule's log.

Snakemake puts this folder on ``sys.path`` before running a ``script:``, so the scripts import
this module only when Snakemake runs them (the tests import the scripts' functions directly).
"""

import contextlib
import sys
import traceback


def run_logged(main, smk) -> None:
    """Call ``main(smk)``; its stderr and any traceback go to the rule's first log file, and
    the error's own line also to the console, beside Snakemake's "RuleException" (which names
    only the script)."""
    with open(smk.log[0], "w") as log, contextlib.redirect_stderr(log):
        try:
            main(smk)
        except BaseException as exc:
            traceback.print_exc()  # into the log, not only the Snakemake console
            what = str(exc) or type(exc).__name__
            print(f"genoctx: error: {what} (traceback in {smk.log[0]})", file=sys.__stderr__,
                  flush=True)
            raise
