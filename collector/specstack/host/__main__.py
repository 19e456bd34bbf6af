"""`python3 -m specstack.host ACTION ...` (PYTHONPATH=collector): how make runs the host-side helper."""

import sys

from specstack.host.cli import main

sys.exit(main())
