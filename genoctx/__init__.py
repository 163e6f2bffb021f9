"""genoctx: long-sequence genomics toolkit.

Data flows one way: ``io → tokenize → model (→ kernels) → heads → eval``; the CLI sits on top.
"""

__version__ = "0.1.0"
