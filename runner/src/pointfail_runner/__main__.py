"""``python -m pointfail_runner`` = ``pointfail-runner``."""

import sys

from .cli import main

sys.exit(main())
