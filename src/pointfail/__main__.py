"""``python -m pointfail`` runs the command line."""
import sys

from pointfail.cli import main

sys.exit(main())
