"""``python -m ctsne``: the ``ctsne`` command."""

import sys

from .interfaces.cli.main import main

sys.exit(main())
