"""``python -m burstcore.cli``: the same command line as ``burstcore``."""

import sys

from . import main

# Guarded, as burstcore/__main__.py is: importing the module must not run the command line.
if __name__ == "__main__":
    sys.exit(main())
