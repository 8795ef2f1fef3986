"""``python -m burstcore``: the same command line as ``burstcore``."""

import sys

from .cli import main

sys.exit(main())
