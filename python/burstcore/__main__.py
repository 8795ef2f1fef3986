"""``python -m burstcore``: the same command line as ``burstcore``."""

import sys

from .cli import main

# Guarded: importing the module (stubtest, pydoc, pkgutil.walk_packages, an IDE indexing the
# package) must not run the command line and exit the importing process.
if __name__ == "__main__":
    sys.exit(main())
