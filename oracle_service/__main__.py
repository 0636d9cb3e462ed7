"""``python -m oracle_service``: see :mod:`oracle_service.cli`."""

import sys

from oracle_service.cli import main

sys.exit(main())
