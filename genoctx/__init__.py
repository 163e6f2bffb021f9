"""genoctx: long-sequence genomics toolkit.

Data flows one way: ``io → tokenize → model (→ kernels) → heads → eval``; the CLI sits on top.
From Python, the commands' work is here as functions (:mod:`genoctx.api`, loaded on first use
so that ``import genoctx`` stays light)::

    import genoctx
    ann = genoctx.annotate("genome.fa", out="results/genome")
    emb = genoctx.embed("ACGT...")
"""

__version__ = "0.1.0"

_API = ("annotate", "embed", "load_model", "log_likelihood", "score_variants", "write_annotation")
__all__ = ["__version__", "annotate", "embed", "load_model", "log_likelihood", "score_variants",
           "write_annotation"]


def __getattr__(name: str):
    if name in _API:
        from genoctx import api

        return getattr(api, name)
    raise AttributeError(f"module 'genoctx' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
