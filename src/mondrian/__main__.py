"""``python -m mondrian``: see :mod:`mondrian.cli.main`."""

import sys

from mondrian.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
