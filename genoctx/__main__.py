"""``python -m genoctx``: the command line, also for ``torchrun -m genoctx train ...``."""

from genoctx.cli.app import main

if __name__ == "__main__":
    main()
