"""User-facing errors.

Anything a user can cause (a missing file, a bad region, a malformed record) raises a
:class:`GenoctxError` subclass whose message says what went wrong and, where possible, how to
fix it. The CLI prints it as one line on stderr and exits non-zero; ``--debug`` shows the
traceback. Internal invariants use ``assert``.
"""


class GenoctxError(Exception):
    """Base class for errors the user can fix."""


class InputError(GenoctxError):
    """An input file is missing, unreadable, truncated or not the format it claims."""


class RegionError(GenoctxError):
    """A region is malformed, names an unknown contig, or runs off its end."""


class DataRoleError(GenoctxError):
    """A data file was used against its role (e.g. validation data offered for training)."""
