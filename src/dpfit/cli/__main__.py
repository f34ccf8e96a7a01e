"""``python -m dpfit.cli``."""

import sys

from . import main

sys.exit(main())
