"""genoctx: long-sequence genomics toolkit.

Data flows one way: ``io → tokenize → model (→ kernels) → heads → eval``; the CLI sits on top.
From Python, the commands' work is here as functions (:mod:`genoctx.api`), and a genome's token
windows as PyTorch datasets (:mod:`genoctx.tokenize.dataset`); both are loaded on first use so
that ``import genoctx`` stays light::

    import genoctx
    ann = genoctx.annotate("genome.fa", out="results/genome")
    emb = genoctx.embed("ACGT...")
    ds = genoctx.FastaWindows("genome.fa", context=8192)   # a torch Dataset of token windows
"""

__version__ = "0.1.0"

# name → the module that defines it, imported when the name is first asked for
_LAZY = {name: "genoctx.api" for name in ("annotate", "embed", "load_model", "log_likelihood",
                                          "score_variants", "write_annotation")}
_LAZY.update({name: "genoctx.tokenize.dataset" for name in ("FastaWindows", "PileupWindows")})
_API = tuple(n for n, m in _LAZY.items() if m == "genoctx.api")
__all__ = ["FastaWindows", "PileupWindows", "__version__", "annotate", "embed", "load_model",
           "log_likelihood", "score_variants", "write_annotation"]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'genoctx' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
