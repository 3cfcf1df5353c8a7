"""`python -m conformance` is the attncheck CLI."""

import sys

from conformance.cli import main

sys.exit(main())
