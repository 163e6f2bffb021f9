"""The one compiled part of genoctx; everything else is configured in pyproject.toml.

The gene decoder's per-item loops in C (genoctx/heads/_native.c: its dynamic programme and the
ORF scorer's trees). They are optional: where no C compiler is at hand the install still
succeeds, and the decoder runs the same loops in Python and numpy (genoctx.heads.decoder,
genoctx.heads.orf_scorer), with the same calls, slower.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("genoctx.heads._native", ["genoctx/heads/_native.c"],
                             extra_compile_args=["-O2"], optional=True)])
